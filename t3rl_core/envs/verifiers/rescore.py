"""Re-score a finished verifiers rollout with the environment's rubric (`t3rl score verifiers`).

A stored rollout is its prompt and completion messages (and answer, info): verifiers' own results
format, or a t3rl episode's. The rubric gets a State rebuilt the way verifiers' rollout builds it
(`init_state`, then one trajectory step per assistant message, its prompt the conversation before it),
so reward functions of the messages, the answer, the info and the turn count score as in the rollout.
Functions that read state an environment sets while it runs (its own `setup_state` keys) cannot be
re-scored from a transcript: they fail, and the line says so.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any

from verifiers.types import AssistantMessage, Response, ResponseMessage, TrajectoryStep
from verifiers.utils.message_utils import normalize_messages

from t3rl_core import outside_json
from t3rl_core.envs.verifiers.boundary import collecting, raise_problems, scores
from t3rl_core.envs.verifiers.bridge import EpisodeClient
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.envs.verifiers.convert import MODEL
from t3rl_core.envs.verifiers.env import load
from t3rl_core.score.verdict import Verdict, run_sync


def rescore(item: Mapping[str, Any], config: VerifiersEnvConfig) -> Verdict:
    """The rubric's verdict on one stored rollout (`prompt`, `completion`; optional `answer`, `info`)."""
    return run_sync(arescore(item, config))


async def arescore(item: Mapping[str, Any], config: VerifiersEnvConfig) -> Verdict:
    vf_env = _loaded(config.model_dump_json())
    info = item.get("info") or {}
    rollout_input = {
        "prompt": [_decoded(m) for m in item["prompt"]],
        "example_id": item.get("example_id", 0),
        "answer": item.get("answer", ""),
        "info": outside_json.loads(info, "the item's info") if isinstance(info, str) else info,
    }
    state = await vf_env.init_state(rollout_input, EpisodeClient(), MODEL)
    completion = normalize_messages([_decoded(m) for m in item["completion"]])
    state["completion"] = completion
    state["trajectory"] = [
        _step(state["prompt"], completion, i, state["trajectory_id"])
        for i, message in enumerate(completion)
        if message.role == "assistant"
    ]
    state["is_completed"] = True
    problems = collecting()
    await vf_env.rubric.score_rollout(state)
    raise_problems(config.id, problems)
    scored = scores(state, f"environment '{config.id}'")
    reward, metrics = scored["reward"], scored["metrics"]
    item_id = item.get("id", item.get("example_id"))
    return Verdict(
        "verifiers",
        None if item_id is None else str(item_id),
        reward,
        reward >= vf_env.pass_threshold,
        metrics,
    )


def _step(prompt: list[Any], completion: list[Any], index: int, trajectory_id: str) -> TrajectoryStep:
    message = completion[index]
    assert isinstance(message, AssistantMessage)
    response = Response(
        id=uuid.uuid4().hex,
        created=0,
        model=MODEL,
        message=ResponseMessage(
            content=message.content,
            reasoning_content=message.reasoning_content,
            tool_calls=message.tool_calls,
            finish_reason="tool_calls" if message.tool_calls else "stop",
            is_truncated=False,
        ),
    )
    return TrajectoryStep(
        prompt=[*prompt, *completion[:index]],
        completion=[message],
        response=response,
        tokens=None,
        reward=None,
        advantage=None,
        is_truncated=False,
        trajectory_id=trajectory_id,
        extras={},
    )


def _decoded(message: Mapping[str, Any]) -> dict[str, Any]:
    """A saved message, its tool calls as objects (verifiers' results file keeps each as a JSON string)."""
    calls = message.get("tool_calls")
    if not calls:
        return dict(message)
    return {
        **message,
        "tool_calls": [outside_json.loads(c, "a tool call") if isinstance(c, str) else c for c in calls],
    }


@cache
def _loaded(config_json: str) -> Any:
    """The environment, loaded once per distinct config in a scoring process."""
    return load(VerifiersEnvConfig.model_validate_json(config_json))
