"""The ReTool episode: code blocks run in a shared sandbox, their output is spliced into the same turn."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.retool.answers import answer_text
from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.envs.retool.parser import PYTHON_TOOL, interpreter_block
from t3rl_core.registries import SANDBOXES
from t3rl_core.sandbox.base import Sandbox, SandboxResult
from t3rl_core.secret import mask_text
from t3rl_core.types import Action, AnswerAction, InvalidAction, ToolCallAction, Transition

NO_OUTPUT = "Execution successful but no output"
# What the model sees when the sandbox itself failed: the failure's own message names the sandbox's
# server (its URL), the host's paths or a proxy's reply, none of which is the cell's output.
SANDBOX_FAILED = "Sandbox error: the code could not be run"

log = logging.getLogger(__name__)


def tool_content(result: SandboxResult) -> str:
    """Agent-R1's tool text: stdout on success, else stderr, else the error; stripped. Only what the
    cell itself did reaches the model: a failure of the sandbox is logged and shown as one fixed line."""
    if result.ok:
        return result.stdout.strip() or NO_OUTPUT
    if result.status == "sandbox_error":
        log.warning("the sandbox could not run a cell: %s", mask_text(result.error or "no reason given"))
        return SANDBOX_FAILED
    return (result.stderr.strip() or (result.error or "").strip()) or "Unknown error"


class ReToolEnv(Env):
    """Ends when a turn has no code, or after `max_turns` model turns (the last turn's code still runs)."""

    stop = ("</code>",)
    action_format = ReToolEnvConfig.ACTION_FORMAT

    def __init__(self, task: Mapping[str, Any], sandbox: Sandbox, config: ReToolEnvConfig) -> None:
        if task.get("label") is None:
            raise ValueError("a retool task needs its reference answer as 'label'")
        self.ground_truth = answer_text(task["label"], "the retool task")
        # An empty reference is no answer: graded against it, an empty `\boxed{}` (a policy's cheapest
        # output) was correct, as math-verify parses neither and their texts compare equal.
        if not self.ground_truth.strip():
            raise ValueError(
                f"the retool task's label is {task['label']!r}, no reference answer: an empty \\boxed{{}} "
                "would be graded correct; drop the row or give its answer when the data is prepared"
            )
        self.sandbox, self.config = sandbox, config
        self.transcript: list[str] = []
        self.turns = self.code_calls = self.code_errors = self.sandbox_errors = 0
        self.truncated = False

    async def step(self, action: Action) -> Transition:
        self.turns += 1
        self.transcript.append(action.text)
        code = _code_of(action)
        if code is None:
            return Transition(done=True)
        result = await self.sandbox.run(code)
        self.code_calls += 1
        self.code_errors += not result.ok
        self.sandbox_errors += result.status == "sandbox_error"
        inline = interpreter_block(tool_content(result), self.config.max_tool_response_length)
        self.transcript.append(inline)
        self.truncated = self.turns >= self.config.max_turns
        info = {"sandbox_status": result.status, "sandbox_duration_s": result.duration_s}
        return Transition(inline=inline, done=self.truncated, truncated=self.truncated, info=info)

    def cut_off(self, text: str) -> None:
        """Agent-R1 scores the decoded response, a turn cut at the token limit included."""
        self.transcript.append(text)

    def outcome(self) -> dict[str, Any]:
        return {
            "response": "".join(self.transcript),
            "ground_truth": self.ground_truth,
            "turns": self.turns,
            "code_calls": self.code_calls,
            "code_errors": self.code_errors,
            "sandbox_errors": self.sandbox_errors,
            "truncated": self.truncated,
        }

    def oracle(self) -> Action | None:
        """The reference answer in the required final form (no gold code exists)."""
        if self.turns:
            return None
        return AnswerAction(text=f"<answer>\n\\boxed{{{self.ground_truth}}}\n</answer>")


def _code_of(action: Action) -> str | None:
    match action:
        case ToolCallAction(calls=calls):
            codes = [str(c.arguments.get("code", "")) for c in calls if c.name == PYTHON_TOOL]
            return "\n".join(codes) if codes else None
        case AnswerAction() | InvalidAction():
            return None
    raise TypeError(f"not an action: {action!r}")


class ReToolEnvFactory:
    """Owns the one sandbox every episode of the run shares."""

    def __init__(self, config: ReToolEnvConfig) -> None:
        self.config = config
        self.sandbox: Sandbox = SANDBOXES.build(config.sandbox)

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> ReToolEnv:
        return ReToolEnv(task, self.sandbox, self.config)

    async def aclose(self) -> None:
        await self.sandbox.aclose()


def make_factory(config: ReToolEnvConfig) -> ReToolEnvFactory:
    return ReToolEnvFactory(config)
