"""In-test env, engines and chat fixtures for the rollout, chat and engine tests (no BFCL, no model)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import ParsersConfig, RolloutConfig
from t3rl_core.engines.base import Engine, Generation, GenerationContext, SamplingParams
from t3rl_core.engines.reference import as_model_output
from t3rl_core.envs.base import Env
from t3rl_core.parsers.tool_calls import ToolCallActionParser
from t3rl_core.rollout.episode import EpisodeResult, run_episode
from t3rl_core.types import Action, AnswerAction, InvalidAction, ToolCall, ToolCallAction, Transition

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "echo",
            "description": "Repeat a text.",
            "parameters": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    },
]


def task(questions: Sequence[str] = ("Add 1 and 2.", "Now add 3 and 4."), system: str = "Be brief.") -> dict:
    return {
        "prompt": [{"role": "system", "content": system}, {"role": "user", "content": questions[0]}],
        "metadata": {"tools": TOOLS, "questions": list(questions)},
    }


class ToyEnv(Env):
    """Multi-turn arithmetic: the user asks, the model calls `add`, then answers; next question.

    Knobs make it fail on purpose: raise in reset/step/outcome, or return `inline` text for calls.
    """

    def __init__(
        self,
        questions: Sequence[str] = ("Add 1 and 2.", "Now add 3 and 4."),
        *,
        fail_in: str | None = None,
        inline_calls: bool = False,
        stop: tuple[str, ...] = (),
    ) -> None:
        self.questions = list(questions)
        self.turn = 0
        self.called = False
        self.actions: list[Action] = []
        self.fail_in, self.inline_calls, self.stop = fail_in, inline_calls, stop
        self.closed = False

    async def reset(self) -> Transition:
        if self.fail_in == "reset":
            raise RuntimeError("reset exploded")
        return Transition()

    async def step(self, action: Action) -> Transition:
        self.actions.append(action)
        if self.fail_in == "step":
            raise RuntimeError("step exploded")
        if isinstance(action, InvalidAction):
            return Transition(messages=[{"role": "user", "content": action.error}])
        if isinstance(action, ToolCallAction):
            self.called = True
            results = [self._run(call) for call in action.calls]
            if self.inline_calls:
                return Transition(inline="\n<result>" + ", ".join(results) + "</result>\n")
            return Transition(messages=[{"role": "tool", "content": result} for result in results])
        self.turn += 1
        self.called = False
        if self.turn >= len(self.questions):
            return Transition(done=True)
        return Transition(messages=[{"role": "user", "content": self.questions[self.turn]}])

    @staticmethod
    def _run(call: ToolCall) -> str:
        if call.name == "add":
            return str(int(call.arguments.get("a", 0)) + int(call.arguments.get("b", 0)))
        return str(call.arguments.get("text", ""))

    def outcome(self) -> dict[str, Any]:
        if self.fail_in == "outcome":
            raise RuntimeError("outcome exploded")
        return {"turns_answered": self.turn, "turns": len(self.questions)}

    def oracle(self) -> Action | None:
        if self.turn >= len(self.questions):
            return None
        if not self.called:
            return ToolCallAction(
                calls=(ToolCall("add", {"a": 2 * self.turn + 1, "b": 2 * self.turn + 2}),), text=""
            )
        return AnswerAction(text=f"The sum is {4 * self.turn + 3}.")

    async def aclose(self) -> None:
        self.closed = True


class ScriptedEngine(Engine):
    """Plays a script of texts as a model of the chat family would emit them (canonical tokens)."""

    def __init__(
        self, chat: ChatFormat, texts: Sequence[str], *, calls_tools: Callable[[str], bool] | None = None
    ):
        self.chat, self.texts = chat, list(texts)
        self.calls_tools = calls_tools or (lambda text: "add" in text or "echo" in text)
        self.inputs: list[list[int]] = []
        self.samplings: list[SamplingParams] = []

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        self.inputs.append(list(input_ids))
        self.samplings.append(sampling)
        text = self.texts.pop(0) if self.texts else "I am done."
        output = as_model_output(self.chat, text, calls_tools=self.calls_tools(text), sampling=sampling)
        return Generation(output.token_ids, [-0.5] * len(output.token_ids), output.finish_reason)


class FixedEngine(Engine):
    """Returns prepared generations in order (then aborts), or raises when given an exception."""

    def __init__(self, outputs: Sequence[Generation | BaseException]) -> None:
        self.outputs = list(outputs)
        self.calls = 0

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, context: GenerationContext | None = None
    ) -> Generation:
        self.calls += 1
        if not self.outputs:
            return Generation([], [], "abort", error="script exhausted")
        output = self.outputs.pop(0)
        if isinstance(output, BaseException):
            raise output
        return output


def family_parser(chat: ChatFormat) -> ToolCallActionParser:
    """The tool-call parser of the chat's family, for TOOLS."""
    assert chat.family is not None
    family = chat.family
    return ToolCallActionParser(
        ParsersConfig(tool_call_parser=family.tool_call_parser, reasoning_parser=family.reasoning_parser),
        TOOLS,
    )


def play(
    chat: ChatFormat,
    env: Env,
    engine: Engine,
    limits: RolloutConfig,
    sampling: SamplingParams | None = None,
) -> EpisodeResult:
    """One episode of `task()` with the family's parser."""
    return asyncio.run(
        run_episode(
            task(),
            env=env,
            engine=engine,
            chat=chat,
            parser=family_parser(chat),
            sampling=sampling or SamplingParams(),
            limits=limits,
        )
    )


@pytest.fixture(scope="session", params=sorted(FAMILIES))
def chat(request: pytest.FixtureRequest) -> ChatFormat:
    """A tiny tokenizer of each shipped chat family (built once per test process)."""
    return ChatFormat.from_pretrained(shared_tokenizer_dir(request.param), request.param)


@pytest.fixture(scope="session")
def qwen_chat() -> ChatFormat:
    return ChatFormat.from_pretrained(shared_tokenizer_dir("qwen3"), "qwen3")
