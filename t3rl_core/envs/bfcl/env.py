"""The BFCL multi-turn world as a gym-style environment, in two modes.

An episode holds two worlds built from bfcl-eval's API classes: the model's, where the model's calls
run, and the ground truth's, where each turn's gold calls run when the turn ends. A turn ends when the
model answers in plain text (or, per mode, when it exceeds the step limit); it is then scored with
bfcl-eval's `state_checker` and `response_checker`, and the next user question is sent.

train (T3RL's progress semantics, early-code quirks fixed):
  - every turn is scored and the episode goes on after a failed turn; the gold calls of every turn
    run on the ground-truth world whether or not the model got the turn right;
  - more than `max_step_limit` attempts (tool steps and format errors) in a turn force the turn on
    with score 0 ("multi_turn:force_terminated");
  - an empty-ground-truth turn (the function or a parameter is missing): with `strict_irrelevance` it
    is correct only if the model makes no call in it and answers/asks instead — the intent of
    bfcl-eval's unused irrelevance checker, which teaches the model not to guess; without it the turn
    is skipped like the official checker does. Either way its calls run on the model world.

eval (bfcl-eval's verdict, as its inference loop and `_evaluate_single_multi_turn_entry` give it):
  - a non-empty ground-truth turn needs at least one model call in the turn, then the state check,
    then the response check; empty-ground-truth turns are skipped but their calls run on the model
    world, so later state checks see them;
  - more than `eval_max_step_limit` tool steps in a turn force-terminate the episode and the entry
    fails, unless it is the last turn: then the turn count matches the ground truth and bfcl-eval
    checks the turn normally, as done here too;
  - an unparsable output ends the turn (`eval_invalid_action_ends_turn`), like bfcl-eval's loop;
  - accuracy = every checked turn passes and every turn was reached.

Observations: each call's result as `{"role": "tool", "name": fn, "content": text}` (API errors and
exceptions as "Error during execution: …" texts); a format error, when fed back, as a user message;
the next user question as a user message once a turn ends (after the results of the step that ended
it). A ToolCallAction without calls counts as an answer.

In both modes progress = correct / counted turns (empty-ground-truth turns count only under strict
train scoring); unreached and cut-off turns count as 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from t3rl_core.envs.base import Env, Mode
from t3rl_core.envs.bfcl.augment import Augmenter
from t3rl_core.envs.bfcl.checks import EMPTY_RESPONSE, FORCE_TERMINATED, IRRELEVANCE, check_turn
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.world import ERROR_PREFIX, World, is_long_context, render_call, stateless_modules
from t3rl_core.envs.bounded_calls import CallKilled, CallWorkers
from t3rl_core.types import (
    Action,
    AnswerAction,
    InvalidAction,
    Message,
    ToolCall,
    ToolCallAction,
    Transition,
)

DONE_TEXT = "I have completed your request."
MISSING_FUNCTION_TEXT = "None of the functions I have can do this. Could you provide a function for it?"
MISSING_PARAMETER_TEXT = "I am missing some information needed for this. Could you provide it?"


@dataclass(frozen=True)
class BFCLTask:
    """What an episode needs from a dataset row's `metadata.bfcl_task`."""

    id: str
    category: str
    initial_config: Mapping[str, Any]
    involved_classes: list[str]
    ground_truth: list[list[str]]
    follow_ups: list[str]  # the user texts of turns 1..n-1 (turn 0 is in the row's prompt)
    # Function names offered with the prompt, and those a later turn offers (miss_func: turn → names);
    # None when the row does not say (hints then name every function of the world).
    offered: tuple[str, ...] | None = None
    offered_later: Mapping[int, tuple[str, ...]] | None = None

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> BFCLTask:
        metadata = row.get("metadata") or {}
        task = metadata.get("bfcl_task")
        if not isinstance(task, Mapping):
            raise ValueError("a BFCL row needs metadata.bfcl_task: prepare it with python -m t3rl_core.data")
        ground_truth = [list(turn) for turn in task["ground_truth"]]
        follow_ups = list(task["processed_question"])
        if len(follow_ups) != len(ground_truth) - 1:
            raise ValueError(
                f"{task['id']}: {len(ground_truth)} ground-truth turns need {len(ground_truth) - 1} "
                f"follow-up questions, got {len(follow_ups)}"
            )
        tools = metadata.get("tools")
        missed = task.get("missed_function") or {}
        return cls(
            id=task["id"],
            category=metadata.get("data_source") or task["id"].rsplit("_", 1)[0],
            initial_config=task["initial_config"],
            involved_classes=list(task["involved_classes"]),
            ground_truth=ground_truth,
            follow_ups=follow_ups,
            offered=None if tools is None else tuple(_function_name(t) for t in tools),
            offered_later={int(turn): tuple(d["name"] for d in docs) for turn, docs in missed.items()},
        )


def _function_name(tool: Mapping[str, Any]) -> str:
    return str(tool["function"]["name"] if "function" in tool else tool["name"])


class BFCLEnv(Env):
    """One BFCL multi-turn episode (see the module docstring for the two modes)."""

    def __init__(
        self, task: BFCLTask, config: BFCLEnvConfig, mode: Mode, workers: CallWorkers | None = None
    ) -> None:
        self.task, self.config, self.mode = task, config, mode
        # Where the model's calls of stateless classes run, stopped past config.PURE_CALL_BUDGET_S.
        self._workers = workers
        self._limit = config.eval_max_step_limit if mode == "eval" else config.max_step_limit
        # Built on first use after reset(), not in it: the episode's first model call then starts
        # without waiting for them, and they are built while it runs (on a batch start every
        # episode's reset runs before any first call goes out).
        self._model: World | None = None
        self._gold: World | None = None
        self._reset = False
        n = len(task.ground_truth)
        self._scores: list[float | None] = [None] * n
        self._errors: list[str | None] = [None] * n
        self._finished = [False] * n
        self._turn_steps = [0] * n  # env steps (model actions) each turn took
        self._turn = 0
        self._attempts = 0  # per turn: what the step limit counts
        self._calls_this_turn = 0
        self._model_results: list[str] = []  # every call result of the model, all turns
        self._cut_off: set[int] = set()
        self._done = False
        # Corrective hints (train mode only: eval observations stay exactly bfcl-eval's).
        augmentation = config.augmentation
        self._augmenter = (
            Augmenter(augmentation, task.id) if mode == "train" and augmentation.enabled else None
        )
        self.force_terminated = False
        self.format_errors = self.tool_call_errors = self.tool_calls = self.interactions = 0

    @property
    def turn(self) -> int:
        """Index of the current user turn (equals the number of turns once the episode is over)."""
        return self._turn

    @property
    def done(self) -> bool:
        return self._done

    def parse_call(self, call_string: str) -> ToolCall:
        """A bfcl call string (positional arguments allowed) as a ToolCall of the model world's API."""
        return self._model_world("parse_call").parse(call_string)

    def _model_world(self, caller: str) -> World:
        if self._model is None:
            if not self._reset:
                raise RuntimeError(f"BFCLEnv.{caller}() before reset()")
            self._model = self._world()
        return self._model

    def _gold_world(self) -> World:
        if self._gold is None:
            self._gold = self._world()
        return self._gold

    def _world(self) -> World:
        return World(self.task.initial_config, self.task.involved_classes, is_long_context(self.task.id))

    # ------------------------------------------------------------------------------------- episode

    async def reset(self) -> Transition:
        self._model = self._gold = None
        self._reset = True
        return Transition()

    async def step(self, action: Action) -> Transition:
        self._model_world("step")
        if self._done:
            raise RuntimeError(f"{self.task.id}: step() after the episode ended")
        self.interactions += 1
        self._turn_steps[self._turn] += 1
        if isinstance(action, InvalidAction):
            self.format_errors += 1
            if self.mode == "eval" and self.config.eval_invalid_action_ends_turn:
                return self._end_turn([], cut_off=False)
            return self._count_attempt([{"role": "user", "content": action.error}])
        if isinstance(action, ToolCallAction) and action.calls:
            return self._count_attempt(await self._run_calls(action))
        return self._end_turn([], cut_off=False)

    async def _run_calls(self, action: ToolCallAction) -> list[Message]:
        model = self._model_world("step")
        messages: list[Message] = []
        for call in action.calls:
            result = await self._execute(model, call)
            self._model_results.append(result)
            self.tool_calls += 1
            self._calls_this_turn += 1
            if result.startswith(ERROR_PREFIX):
                self.tool_call_errors += 1
            if self._augmenter is not None:
                result = self._augmenter.augment(model, call, result, self._offered())
            messages.append({"role": "tool", "name": call.name, "content": result})
        return messages

    async def _execute(self, model: World, call: ToolCall) -> str:
        """A call's result text; a stateless class's call in a worker process, stopped past its budget
        (bfcl-eval's `power(10, 10**9)` would hold the event loop, and every episode, for minutes)."""
        budget = self.config.PURE_CALL_BUDGET_S
        pure = model.pure_call(call) if self._workers is not None and budget is not None else None
        if pure is None or self._workers is None or budget is None:
            return model.execute(call)
        try:
            text = await self._workers.run(*pure, budget)
        except CallKilled as killed:
            return f"{ERROR_PREFIX}{call.name} was stopped: {killed}"
        if text is None:
            return f"{ERROR_PREFIX}{call.name} ran past its {budget:g} s budget and was stopped"
        return text

    def _offered(self) -> set[str] | None:
        """The functions the model has been offered by the current turn."""
        if self.task.offered is None:
            return None
        later = self.task.offered_later or {}
        return {
            *self.task.offered,
            *(n for turn, names in later.items() if turn <= self._turn for n in names),
        }

    def _count_attempt(self, messages: list[Message]) -> Transition:
        self._attempts += 1
        if self._attempts > self._limit:
            return self._end_turn(messages, cut_off=True)
        return Transition(messages=messages)

    def _end_turn(self, messages: list[Message], *, cut_off: bool) -> Transition:
        turn = self._turn
        last = turn == len(self.task.ground_truth) - 1
        if cut_off:
            self._cut_off.add(turn)
        if cut_off and self.mode == "eval" and not last:
            # bfcl-eval's loop stops the entry here; the runner then sees too few turns and fails it.
            self.force_terminated = True
            self._scores[turn], self._errors[turn] = 0.0, FORCE_TERMINATED
            self._finished[turn] = self._done = True
            return Transition(messages=messages, done=True, truncated=True, info=self._turn_info(turn))
        if cut_off and self.mode == "eval":
            self.force_terminated = True
        self._score_turn(turn, cut_off=cut_off and self.mode == "train")
        self._finished[turn] = True
        info = self._turn_info(turn)
        self._turn += 1
        self._attempts = self._calls_this_turn = 0
        if self._turn == len(self.task.ground_truth):
            self._done = True
            return Transition(messages=messages, done=True, truncated=cut_off, info=info)
        question = {"role": "user", "content": self.task.follow_ups[self._turn - 1]}
        return Transition(messages=[*messages, question], info=info)

    def _score_turn(self, turn: int, *, cut_off: bool) -> None:
        model, gold = self._model_world("step"), self._gold_world()
        gold_calls = self.task.ground_truth[turn]
        gold_results = gold.execute_all([gold.parse(call) for call in gold_calls])
        if not gold_calls:
            if self.mode == "train" and self.config.strict_irrelevance:
                asked = None if not self._calls_this_turn else IRRELEVANCE
                failed = FORCE_TERMINATED if cut_off else asked
                self._scores[turn], self._errors[turn] = (0.0 if failed else 1.0), failed
            elif cut_off:
                self._errors[turn] = FORCE_TERMINATED
            return
        if cut_off:
            error: str | None = FORCE_TERMINATED
        elif self._calls_this_turn == 0:
            error = EMPTY_RESPONSE
        else:
            error = check_turn(model, gold, self._model_results, gold_results, turn, self.task.id)
        self._scores[turn], self._errors[turn] = (0.0 if error else 1.0), error

    def _turn_info(self, turn: int) -> dict[str, Any]:
        return {"turn": turn, "turn_score": self._scores[turn], "turn_error": self._errors[turn]}

    # ------------------------------------------------------------------------------------- results

    def _counted(self, turn: int) -> bool:
        """Whether a turn enters progress: empty-ground-truth turns only under strict train scoring."""
        if self.task.ground_truth[turn]:
            return True
        return self.mode == "train" and self.config.strict_irrelevance

    def outcome(self) -> dict[str, Any]:
        scores: list[float | None] = []
        for turn, finished in enumerate(self._finished):
            if not self._counted(turn):
                scores.append(None)
            else:
                scores.append(self._scores[turn] if finished else 0.0)  # unreached or unfinished: 0
        counted = [score for score in scores if score is not None]
        correct = sum(1 for score in counted if score == 1.0)
        reached_all = all(self._finished)
        cut_short = self.mode == "train" and bool(self._cut_off)
        accuracy = float(reached_all and not cut_short and correct == len(counted))
        return {
            "task_id": self.task.id,
            "category": self.task.category,
            "mode": self.mode,
            "turn_scores": scores,
            "turn_errors": list(self._errors),
            "turns_total": len(counted),
            "turns_correct": correct,
            "turns_completed": sum(self._finished),
            "progress": correct / len(counted) if counted else 0.0,
            "accuracy": accuracy,
            "format_errors": self.format_errors,
            "tool_call_errors": self.tool_call_errors,
            "tool_calls": self.tool_calls,
            "interactions": self.interactions,
            "force_terminated": self.force_terminated,
            "failure": None if accuracy else self._failure(reached_all),
            # Train-mode corrective hints given, per kind (empty when augmentation is off).
            "hints": dict(self._augmenter.counts) if self._augmenter is not None else {},
            # Per-turn credit (t3rl_core.credit): a reached turn's score (an uncounted turn's None).
            "turn_rewards": [
                score if steps else None for score, steps in zip(scores, self._turn_steps, strict=True)
            ],
            "turn_steps": list(self._turn_steps),
        }

    def _failure(self, reached_all: bool) -> str:
        """The official runner's reason: too few turns first, then the first failing turn."""
        if not reached_all:
            return FORCE_TERMINATED
        return next((error for error in self._errors if error), FORCE_TERMINATED)

    def oracle(self) -> Action | None:
        """The gold next action: the turn's ground-truth calls, then a short answer.

        The calls are offered while the model has made no call in the current turn; afterwards (and
        on an empty-ground-truth turn, where the right move is to ask) the oracle answers in text.
        """
        if self._done or not self._reset:
            return None
        gold_calls = self.task.ground_truth[self._turn]
        if gold_calls and self._calls_this_turn == 0:
            calls = tuple(self.parse_call(call) for call in gold_calls)
            return ToolCallAction(calls=calls, text="\n".join(render_call(call) for call in calls))
        if gold_calls:
            return AnswerAction(text=DONE_TEXT)
        missing = MISSING_FUNCTION_TEXT if "miss_func" in self.task.id else MISSING_PARAMETER_TEXT
        return AnswerAction(text=missing)


class BFCLEnvFactory:
    """Makes one `BFCLEnv` per dataset row; nothing is shared between episodes."""

    def __init__(self, config: BFCLEnvConfig) -> None:
        self.config = config
        self._workers: CallWorkers | None = None  # started with the first episode

    def __call__(self, task: Mapping[str, Any], mode: Mode) -> BFCLEnv:
        if mode not in ("train", "eval"):
            raise ValueError(f"mode must be 'train' or 'eval', got {mode!r}")
        if self._workers is None and self.config.PURE_CALL_BUDGET_S is not None:
            self._workers = CallWorkers(stateless_modules())
        return BFCLEnv(BFCLTask.from_row(task), self.config, mode, self._workers)

    def start_ahead(self) -> None:
        """Start a tool-call worker for the episodes' first pure call before any asks for one."""
        if self._workers is not None:
            self._workers.start_ahead()

    def expected_model_calls(self, task: Mapping[str, Any]) -> int | None:
        """The model calls of the gold play of a row (`BFCLEnv.oracle`): two per turn with ground-truth
        calls (the calls, then the answer), one per empty turn; None for a row without a BFCL task.
        A scheduling hint: an eval starts its long episodes first."""
        bfcl_task = (task.get("metadata") or {}).get("bfcl_task")
        if not isinstance(bfcl_task, Mapping):
            return None
        return sum(2 if turn else 1 for turn in bfcl_task.get("ground_truth") or ())

    async def aclose(self) -> None:
        """Episodes own their worlds; the tool-call workers are the factory's."""
        if self._workers is not None:
            self._workers.close()


def make_factory(config: BFCLEnvConfig) -> BFCLEnvFactory:
    """Registry factory of `bfcl_multi_turn` (t3rl_core.registries.ENVS)."""
    return BFCLEnvFactory(config)
