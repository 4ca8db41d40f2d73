"""Property tests: whatever the model emits, the episode ends cleanly and the TITO invariant holds."""

from __future__ import annotations

import asyncio

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import Generation, GenerationContext, SamplingParams
from t3rl_core.parsers.render import call_format, render_calls
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import run_episode
from t3rl_core.types import ToolCall
from tests.rollout.fakes import TOOLS, FixedEngine, ToyEnv, task

FRAGMENTS = [
    "<think>",
    "</think>",
    "<tool_call>",
    "</tool_call>",
    "\n",
    "}",
    '{"name": "add", ',
    "The sum is 3.",
]


class ServingEngine(FixedEngine):
    """The script's generations as a server gives them: cut at the call's max_new_tokens (finish
    `length`), as SGLang cuts, and at the first stop token or the token completing a stop string
    (finish `stop`); an engine that overruns
    the first is an engine failure of its own (tests/rollout/test_runtime_kinds_seven.py), tokens past
    the second are dropped (tests/rollout/test_runtime_hunt_wave5.py)."""

    def __init__(self, outputs: list[Generation | BaseException], chat: ChatFormat | None = None) -> None:
        super().__init__(outputs)
        self.chat = chat  # to find stop strings (a world's Env.stop) as SGLang does, in the decoded text
        self.returned: list[Generation] = []

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        output = await super().generate(input_ids, sampling, context)
        cut = sampling.max_new_tokens
        stop = next((at for at, t in enumerate(output.token_ids) if t in sampling.stop_token_ids), None)
        if sampling.stop and self.chat is not None:  # the token completing a stop string, if earlier
            ids, chat = output.token_ids[: None if stop is None else stop], self.chat
            held = [any(s in chat.decode(ids[: at + 1]) for s in sampling.stop) for at in range(len(ids))]
            stop = held.index(True) if True in held else stop
        if stop is not None and stop + 1 < min(len(output.token_ids), cut + 1):
            finish = "abort" if output.finish_reason == "abort" else "stop"
            output = Generation(output.token_ids[: stop + 1], output.log_probs[: stop + 1], finish)
        if len(output.token_ids) > cut:
            finish = "length" if output.finish_reason == "stop" else output.finish_reason
            output = Generation(output.token_ids[:cut], output.log_probs[:cut], finish)
        self.returned.append(output)
        return output


@st.composite
def model_outputs(draw: st.DrawFn, chat: ChatFormat) -> list[Generation | BaseException]:
    """A script of model calls: well-formed calls, tag soup, random ids (stop and control tokens
    included), any finish reason, and transport exceptions."""
    vocab = len(chat.tokenizer)
    assert chat.family is not None
    good = render_calls(chat.family.tool_call_parser, [ToolCall("add", {"a": 1, "b": 2})])
    outputs: list[Generation | BaseException] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["good", "soup", "ids", "error"]))
        if kind == "error":
            outputs.append(TimeoutError("engine timed out"))
            continue
        if kind == "ids":
            ids = draw(
                st.lists(st.integers(0, vocab - 1) | st.sampled_from(chat.stop_token_ids), max_size=12)
            )
        else:
            text = good if kind == "good" else "".join(draw(st.lists(st.sampled_from(FRAGMENTS), max_size=6)))
            ids = chat.encode(text) + draw(st.sampled_from([[], [chat.stop_token_ids[0]]]))
        finish = draw(st.sampled_from(["stop", "stop", "stop", "length", "abort"]))
        log_probs = draw(st.lists(st.floats(-20, 0), min_size=len(ids), max_size=len(ids)))
        outputs.append(Generation(ids, log_probs, finish))
    return outputs


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_random_outputs_never_crash_and_keep_tito(chat: ChatFormat, data: st.DataObject) -> None:
    outputs = data.draw(model_outputs(chat))
    limits = RolloutConfig(
        max_num_steps=data.draw(st.integers(1, 6)),
        max_context_len=data.draw(st.none() | st.integers(1, 2000)),
    )
    # A world continuing the model's turn with inline text declares the string that ends a call (Env.stop):
    # the call format's closing marker (Llama-3's calls have none: such a world cannot be written there).
    assert chat.family is not None
    closing = call_format(chat.family.tool_call_parser)
    close = closing.block_close or closing.call_close
    inline = close is not None and data.draw(st.booleans())
    env = ToyEnv(inline_calls=inline, stop=(close,) if inline and close else ())
    parser = ToolCallActionParser(
        ParsersConfig(
            tool_call_parser=chat.family.tool_call_parser, reasoning_parser=chat.family.reasoning_parser
        ),
        TOOLS,
    )
    engine = ServingEngine(outputs, chat)
    script = list(outputs)
    result = asyncio.run(
        run_episode(
            task(), env=env, engine=engine, chat=chat, parser=parser, sampling=SamplingParams(), limits=limits
        )
    )

    assert result.status in ("completed", "truncated", "aborted", "failed")
    assert result.status != "failed", result.error  # nothing the model does is an env or loop failure
    assert (
        len(result.response_ids) == len(result.loss_mask) == len(result.log_probs) == result.response_length
    )
    assert set(result.loss_mask) <= {0, 1}
    assert result.num_model_calls <= limits.max_num_steps
    assert env.closed
    # the model's tokens are exactly what the engine returned, in order, with their log-probs
    generated = engine.returned
    model = [
        (t, lp) for t, m, lp in zip(result.response_ids, result.loss_mask, result.log_probs, strict=True) if m
    ]
    assert model == [(t, lp) for g in generated for t, lp in zip(g.token_ids, g.log_probs, strict=True)]
    assert all(lp == 0.0 for m, lp in zip(result.loss_mask, result.log_probs, strict=True) if not m)
    # aborted exactly when the last call failed: an exception, an abort, or the script ran out
    last = script[engine.calls - 1] if 0 < engine.calls <= len(script) else None
    failed_call = (
        engine.calls > len(script)
        or isinstance(last, BaseException)
        or (isinstance(last, Generation) and last.finish_reason == "abort")
    )
    assert (result.status == "aborted") == failed_call
