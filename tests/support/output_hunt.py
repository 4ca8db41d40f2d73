"""A hunt over model outputs: every model option shipped in conf/model/ (read from the files, so a new
option is hunted without an edit here), its declared chat family and parsers, and adversarial assistant
outputs played through the one episode loop (EpisodeRunner → run_episode) with a real tiny tokenizer
of the family. `judge` states the contract each output must keep (tests/rollout/test_model_output_hunt.py).

The outputs are token ids as an engine answers them (a stop token included where the model stopped),
built from the declared call format (t3rl_core.parsers.render), never from one family's spelling.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import ParsersConfig, RuntimeConfig
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.envs.format_repair import FormatRepair
from t3rl_core.parsers.render import FORMATS, render_calls
from t3rl_core.parsers.tool_calls import ReasoningSplitter
from t3rl_core.rewards.base import RewardResult
from t3rl_core.rewards.toolrl import ToolRLReward, ToolRLRewardConfig
from t3rl_core.rollout.episode import EpisodeResult
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, InvalidAction, ToolCall, ToolCallAction
from tests.rollout.fakes import TOOLS, ToyEnv, task

MODEL_DIR = Path(__file__).resolve().parents[2] / "conf" / "model"
# The longest error observation a malformed turn may cost the next prompt, the hunt's own figure (the
# parser declares its bound, t3rl_core.parsers.tool_calls.MAX_ERROR_CHARS, which must not pass it).
ERROR_LIMIT = 2000
# An argument larger than any error or hint, and a name as large.
HUGE = 60_000
LOG_PROB = -0.25


@dataclass(frozen=True)
class ModelOption:
    """One conf/model option as far as the rollout reads it: its family and declared parsers."""

    name: str
    family: str
    chat_template: str
    tool_call_parser: str
    reasoning_parser: str | None
    think_tags: tuple[str, str] | None

    def parsers(self) -> ParsersConfig:
        tags = list(self.think_tags) if self.think_tags else None
        return ParsersConfig(
            tool_call_parser=self.tool_call_parser, reasoning_parser=self.reasoning_parser, think_tags=tags
        )


def _option_data(path: Path) -> dict[str, Any]:
    """A model option's YAML with its same-group defaults merged first (as Hydra does, `_self_` last)."""
    data = yaml.safe_load(path.read_text()) or {}
    merged: dict[str, Any] = {}
    for entry in data.pop("defaults", []) or []:
        if isinstance(entry, str) and entry != "_self_":
            merged = _merge(merged, _option_data(path.with_name(f"{entry}.yaml")))
    return _merge(merged, data)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def shipped_models(model_dir: Path = MODEL_DIR) -> list[ModelOption]:
    """Every model option of conf/model/, sorted by name."""
    options = []
    for path in sorted(model_dir.glob("*.yaml")):
        data = _option_data(path)
        parsers, chat = data.get("parsers") or {}, data.get("chat") or {}
        tags = parsers.get("think_tags")
        options.append(
            ModelOption(
                name=path.stem,
                family=data["family"],
                chat_template=chat.get("chat_template") or data["family"],
                tool_call_parser=parsers["tool_call_parser"],
                reasoning_parser=parsers.get("reasoning_parser"),
                think_tags=(tags[0], tags[1]) if tags else None,
            )
        )
    return options


def hunted_options(model_dir: Path = MODEL_DIR) -> list[ModelOption]:
    """The shipped options, then each chat family declared in t3rl_core/chat/families.py with its own
    parsers that no option ships (GLM-4.5's glm4 today): a family a user can name is hunted too."""
    shipped = shipped_models(model_dir)
    pairs = {(option.family, option.tool_call_parser) for option in shipped}
    declared = [
        ModelOption(f"family_{name}", name, name, family.tool_call_parser, family.reasoning_parser, None)
        for name, family in sorted(FAMILIES.items())
        if (name, family.tool_call_parser) not in pairs
    ]
    return shipped + declared


# ----------------------------------------------------------------------------------------- the outputs


@dataclass(frozen=True)
class Output:
    """One adversarial model call: its ids as the engine answers, its finish reason, what it is."""

    case: str
    ids: tuple[int, ...]
    finish: str = "stop"
    # "invalid": the turn must be refused with an error; "any": whatever the parser reads, the contract
    # holds; "cut": finish "length", the episode ends truncated with no step of the cut turn.
    expect: str = "any"


class Hunt:
    """The adversarial outputs of one model option, from its declared format."""

    def __init__(self, option: ModelOption, chat: ChatFormat) -> None:
        self.option, self.chat = option, chat
        self.parser_name = option.tool_call_parser
        self.stop = chat.stop_token_ids[0]
        splitter = ReasoningSplitter(option.parsers())
        self.think_open, self.think_close, self.forced = splitter.start, splitter.end, splitter.forced

    # --- texts

    def call(self, *calls: ToolCall) -> str:
        return render_calls(self.parser_name, list(calls))

    def reply(self, body: str) -> str:
        """`body` as a turn the option's reasoning rules accept (forced reasoning closes its block)."""
        return (self.think_close + body) if self.forced else body

    def good(self) -> str:
        return self.call(ToolCall("add", {"a": 1, "b": 2}))

    def answer(self) -> str:
        return self.reply("The sum is 3.")

    def _with_arguments(self, written: str) -> str | None:
        """The good call with its arguments object written as `written` (a string, list, null...);
        None in a format that writes no arguments object (tagged arguments: GLM-4.5, Qwen3-Coder)."""
        text, arguments = self.good(), json.dumps({"a": 1, "b": 2}, ensure_ascii=False)
        return text.replace(arguments, written) if text.count(arguments) == 1 else None

    def _echo_raw(self, raw_json_string: str) -> str | None:
        """An echo call whose "text" argument is written as `raw_json_string` (escapes as typed); None in
        a format that writes strings raw."""
        marker = "ECHO-MARKER"
        text = self.call(ToolCall("echo", {"text": marker}))
        return (
            text.replace(json.dumps(marker), raw_json_string) if text.count(json.dumps(marker)) == 1 else None
        )

    def _key_twice(self, key: str) -> str:
        """A call of `add` naming the argument `key` twice, in the format's own way of naming one (both
        spelled as `key` is typed, so that every reader reads one key twice)."""
        one, two = "KEY-ONE-MARKER", "KEY-TWO-MARKER"
        return self.call(ToolCall("add", {one: 1, two: 2})).replace(one, key).replace(two, key)

    # --- ids

    def ids(self, text: str, *, stops: int = 1) -> tuple[int, ...]:
        return tuple(self.chat.encode(text)) + (self.stop,) * stops

    def _utf8_cut(self) -> tuple[int, ...] | None:
        """A call's ids cut inside a multi-byte character: the decoded text ends in a broken sequence."""
        ids = self.chat.encode(self.reply(self.call(ToolCall("echo", {"text": "語🙂é語"}))))
        for end in range(len(ids) - 1, 0, -1):
            text = self.chat.decode(ids[:end])
            if text.endswith("\ufffd") and "語🙂é語" not in text:
                return tuple(ids[:end])
        return None

    def outputs(self) -> list[Output]:
        reply, good = self.reply, self.good()
        fmt = FORMATS[self.parser_name]
        opener, closer = fmt.call_open or "{", fmt.call_close or "}"
        json_at = good.index("{") if "{" in good else len(good) // 2
        cases: list[Output] = [
            Output("cut_mid_json", self.ids(reply(good[: json_at + 5])), expect="invalid"),
            Output(
                "cut_mid_json_at_length", tuple(self.chat.encode(reply(good[: json_at + 5]))), "length", "cut"
            ),
            Output(
                "cut_mid_tag", self.ids(reply(good[: len(good) - max(2, len(closer) // 2)])), expect="invalid"
            ),
            Output("length_mid_call", tuple(self.chat.encode(reply(good))[:-2]), "length", "cut"),
            Output("two_calls_glued", self.ids(reply(good + good))),
            Output("two_calls_glued_by_space", self.ids(reply(good + " " + good))),
            Output("call_in_code_block", self.ids(reply("Like this:\n```\n" + good + "\n```"))),
            Output("call_in_reasoning", self.ids(self._in_reasoning(good))),
            Output("opener_only", self.ids(reply(opener + "\n" + good))),
            Output("closer_twice", self.ids(reply(good + "\n" + closer))),
            Output("nested_tags", self.ids(reply(opener + good + closer))),
            Output(
                "tool_not_offered",
                self.ids(reply(self.call(ToolCall("rm_rf", {"path": "/"})))),
                expect="invalid",
            ),
            Output("enormous_argument", self.ids(reply(self.call(ToolCall("echo", {"text": "x" * HUGE}))))),
            Output(
                "enormous_unknown_name",
                self.ids(reply(self.call(ToolCall("n" * HUGE, {})))),
                expect="invalid",
            ),
            Output("enormous_key_twice", self.ids(reply(self._key_twice("k" * HUGE))), expect="invalid"),
            Output("only_whitespace", self.ids(" \n\t  \n")),
            Output("only_end_of_turn", (self.stop,)),
            Output("no_tokens", ()),
            Output("call_then_stop_token_at_length", self.ids(reply(good)), "length", "cut"),
            Output("no_tokens_at_length", (), "length", "cut"),
            Output("stop_tokens_repeated_after_call", self.ids(reply(good), stops=3)),
            Output("stop_tokens_repeated_alone", (self.stop,) * 4),
            Output(
                "every_stop_token", tuple(self.chat.encode(reply("ok"))) + tuple(self.chat.stop_token_ids)
            ),
        ]
        written = {
            "arguments_a_string": self._with_arguments('"a=1, b=2"'),
            "arguments_a_list": self._with_arguments("[1, 2]"),
            "arguments_null": self._with_arguments("null"),
            "invalid_json_escapes": self._echo_raw('"\\x41 \\u12 \\q"'),
        }
        for case, text in written.items():
            if text is not None:
                cases.append(Output(case, self.ids(reply(text)), expect="invalid"))
        surrogates = self._echo_raw('"\\ud800 and \\udfff"')
        if surrogates is not None:
            cases.append(Output("lone_surrogate_escape", self.ids(reply(surrogates))))
        utf8 = self._utf8_cut()
        if utf8 is not None:
            cases.append(Output("cut_mid_utf8_at_length", utf8, "length", "cut"))
            cases.append(Output("cut_mid_utf8", (*utf8, self.stop), expect="invalid"))
        # The control tokens and tags of every family's template in the text, its own family's too (a
        # model writing a turn of its own: the ids the tokenizer gives them, special or not).
        for other in sorted(FAMILIES):
            family = FAMILIES[other]
            foreign = "".join((*family.special_tokens, *family.tag_tokens))
            cases.append(
                Output(f"tokens_of_{other}_around_a_call", self.ids(reply(foreign + good + foreign)))
            )
            cases.append(Output(f"tokens_of_{other}_alone", self.ids(reply(foreign))))
        return cases

    def _in_reasoning(self, good: str) -> str:
        opener, closer = self.think_open or "<think>", self.think_close or "</think>"
        return opener + "Maybe " + good + closer + "The sum is 3."


# ------------------------------------------------------------------------------------------ the episode


class PlayedEngine(Engine):
    """Answers `outputs` in order, then the option's plain answer; records what it returned."""

    def __init__(self, outputs: Sequence[Output], answer_ids: Sequence[int]) -> None:
        self.outputs, self.answer_ids = list(outputs), list(answer_ids)
        self.inputs: list[list[int]] = []
        # Each answer's turn: its tokens and log-probs through its first stop token (the episode
        # drops what an engine answers after it: docs/explanation/tito.md, wave five).
        self.turns: list[list[tuple[int, float]]] = []

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        self.inputs.append(list(input_ids))
        if self.outputs:
            output = self.outputs.pop(0)
            ids, finish = list(output.ids), output.finish
        else:
            ids, finish = list(self.answer_ids), "stop"
        generation = Generation(ids, [LOG_PROB] * len(ids), finish)  # type: ignore[arg-type]
        stops = [at for at, token in enumerate(ids) if token in sampling.stop_token_ids]
        self.turns.append([(token, LOG_PROB) for token in ids[: stops[0] + 1 if stops else None]])
        return generation


class HuntEnv(ToyEnv):
    """The toy world, whose outcome also hands ToolRL's reward the model's last text as written; with
    `repair`, a turn the parser refuses goes through the format-repair protocol first."""

    def __init__(self, repair: FormatRepair | None = None) -> None:
        super().__init__(("Add 1 and 2.",))
        self.format_repair = repair

    def format_problem(self, action: Action) -> str | None:
        return action.error if isinstance(action, InvalidAction) else None

    def outcome(self) -> dict[str, Any]:
        last = self.actions[-1] if self.actions else None
        response = getattr(last, "text", "") if last is not None else ""
        return super().outcome() | {"response": response, "ground_truth": GROUND_TRUTH}


GROUND_TRUTH = '<think>t</think>\n<tool_call>\n{"name": "add", "parameters": {"a": 1, "b": 2}}\n</tool_call>'


class _Factory:
    def __init__(self, repair: FormatRepair | None) -> None:
        self.envs: list[HuntEnv] = []
        self.repair = repair

    def __call__(self, row: dict[str, Any], mode: str) -> HuntEnv:
        self.envs.append(HuntEnv(self.repair))
        return self.envs[-1]

    async def aclose(self) -> None:
        return None


def chat_of(option: ModelOption) -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir(option.family), option.chat_template)


@dataclass
class Played:
    result: EpisodeResult
    reward: RewardResult
    engine: PlayedEngine
    actions: list[Action] = field(default_factory=list)


def play(
    option: ModelOption, chat: ChatFormat, outputs: Sequence[Output], repair: FormatRepair | None = None
) -> Played:
    """One episode of the toy task: `outputs` first, then the plain answer (with `repair`, the
    format-repair protocol on refused turns)."""
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "toolrl"},
            "chat": {
                "tokenizer": str(shared_tokenizer_dir(option.family)),
                "chat_template": option.chat_template,
            },
            "parsers": option.parsers().model_dump(),
            "rollout": {"max_num_steps": len(outputs) + 2, "tito_drift_check": True},
        }
    )
    hunt = Hunt(option, chat)
    engine = PlayedEngine(outputs, hunt.ids(hunt.answer()))
    factory = _Factory(repair)
    runner = EpisodeRunner(
        runtime, engine, env_factory=factory, chat=chat, reward=ToolRLReward(ToolRLRewardConfig())
    )
    sampling = SamplingParams(max_new_tokens=1 << 20)
    result, reward = asyncio.run(runner.run(task(("Add 1 and 2.",)), sampling=sampling))
    return Played(result, reward, engine, list(factory.envs[0].actions) if factory.envs else [])


# ------------------------------------------------------------------------------------------ the contract


def judge(played: Played, output: Output, chat: ChatFormat) -> list[str]:
    """What the episode of `output` broke of the contract (empty: nothing)."""
    result, problems = played.result, []
    if result.status == "failed" or result.failure is not None:
        problems.append(f"status {result.status}, failure {result.failure}: {result.error}")
    mask, response, log_probs = result.loss_mask, result.response_ids, result.log_probs
    if not len(mask) == len(response) == len(log_probs):
        problems.append("response, loss mask and log-probs differ in length")
    model = [(t, lp) for t, m, lp in zip(response, mask, log_probs, strict=False) if m == 1]
    returned = [token for turn in played.engine.turns for token in turn]
    if model != returned:
        problems.append("the masked-in tokens are not exactly the engine's tokens (through each stop)")
    if any(lp != 0.0 for m, lp in zip(mask, log_probs, strict=False) if m == 0):
        problems.append("a token the model did not write carries a log-prob")
    # (result.drift_at is no part of it: a fresh render re-encodes the model's text, which cannot give
    # back tokens no encoder writes, a character cut mid-sequence or a second stop token; the model's
    # tokens are checked as the engine gave them, above.)
    for seen in played.engine.inputs:
        if result.tokens[: len(seen)] != seen:
            problems.append("a call read tokens the trajectory does not begin with")
            break
    if not math.isfinite(played.reward.value):
        problems.append(f"reward {played.reward.value!r}")
    first = played.actions[0] if played.actions else None
    if output.expect == "cut":
        if result.status != "truncated" or played.actions:
            problems.append(f"a turn cut at the token limit was stepped or not truncated: {result.status}")
    elif first is None:
        if not (result.status == "truncated" or (result.status == "parse_error" and result.error)):
            problems.append(f"no step and no recorded reason: {result.status}")
    elif output.expect == "invalid" and not isinstance(first, InvalidAction):
        problems.append(f"a malformed turn was read as {type(first).__name__}")
    for action in played.actions:
        if isinstance(action, InvalidAction):
            problems.extend(_error_problems(action.error))
        if isinstance(action, ToolCallAction):
            for call in action.calls:
                if call.name not in _OFFERED:
                    problems.append(f"a call of {call.name[:40]!r}, no tool offered")
                if type(call.arguments) is not dict:
                    problems.append(
                        f"a call of {call.name!r} whose arguments are {type(call.arguments).__name__}"
                    )
    return problems


_OFFERED = {tool["function"]["name"] for tool in TOOLS}


def _error_problems(error: str) -> list[str]:
    if not error.startswith("Invalid output format: ") or len(error) <= len("Invalid output format: ") + 8:
        return [f"an error that names no problem: {error[:200]!r}"]
    if len(error) > ERROR_LIMIT:
        return [f"an error observation of {len(error)} characters (limit {ERROR_LIMIT}): {error[:160]!r}…"]
    return []


def hunt_option(
    option: ModelOption, chat: ChatFormat, keep: Callable[[Output], bool] = lambda o: True
) -> dict[str, list[str]]:
    """Every output of the option played alone: case → what it broke (cases that broke something)."""
    broken = {}
    for output in Hunt(option, chat).outputs():
        if not keep(output):
            continue
        problems = judge(play(option, chat, [output]), output, chat)
        if problems:
            broken[output.case] = problems
    return broken


def judge_repaired(played: Played) -> list[str]:
    """The contract of an episode under the format-repair protocol: a failed turn is rewound (gone) or
    kept untrained, so the trained tokens are whole engine turns (each answer through its first stop
    token), in order, each exactly as the engine gave it (never re-tokenized), and every token in the
    response is one the engine or the template wrote; the episode ends completed or with its reason
    (parse_error)."""
    result, problems = played.result, []
    if result.status not in ("completed", "parse_error", "truncated") or result.failure is not None:
        problems.append(f"status {result.status}, failure {result.failure}: {result.error}")
    if result.status == "parse_error" and not result.error:
        problems.append("a parse_error with no recorded reason")
    mask, response, log_probs = result.loss_mask, result.response_ids, result.log_probs
    if not len(mask) == len(response) == len(log_probs):
        return [*problems, "response, loss mask and log-probs differ in length"]
    trained = [(t, lp) for t, m, lp in zip(response, mask, log_probs, strict=True) if m == 1]
    at = 0
    for whole in played.engine.turns:
        if whole and trained[at : at + len(whole)] == whole:
            at += len(whole)
    if at != len(trained):
        problems.append("trained tokens that are not whole engine generations in order")
    if any(lp != 0.0 for m, lp in zip(mask, log_probs, strict=True) if m == 0):
        problems.append("an untrained token carries a log-prob")
    if not math.isfinite(played.reward.value):
        problems.append(f"reward {played.reward.value!r}")
    for action in played.actions:
        if isinstance(action, InvalidAction):
            problems.extend(_error_problems(action.error))
    return problems
