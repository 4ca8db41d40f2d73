"""Runtime hunt, wave six, on a shipped world: verifiers' scoring after t3rl ended the episode is bounded
as its steps are (docs/explanation/tito.md, "Hunted, wave six")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.envs.test_hub_kinds_three import first_episode

pytestmark = pytest.mark.slow  # verifiers' import tree: seconds once per process

# A single-turn environment whose rubric awaits what never comes (an LLM judge that is gone).
HANGING_RUBRIC = """
import asyncio
import verifiers as vf
from datasets import Dataset

async def judged(completion):
    await asyncio.Event().wait()

def load_environment():
    return vf.SingleTurnEnv(dataset=Dataset.from_list([{"question": "q", "answer": "a"}]),
                            rubric=vf.Rubric(funcs=[judged]))
"""


def test_a_verifiers_rubric_that_hangs_after_t3rl_ended_the_episode_fails_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """t3rl ends an episode (a step or token limit) while verifiers waits for a turn; `finish()` then let
    verifiers end and score it, awaiting the rollout unbounded (the world's CALL_TIMEOUT_S is None: it
    bounds its own calls, and its steps were). A rubric that never answered held the episode, and the
    eval or the rollout batch with it, for good. Now `env.step_timeout_s` bounds it too: the
    environment's failure, named, its rollout cancelled."""
    from t3rl_core.envs.verifiers.env import EnvHung

    env = first_episode(tmp_path, monkeypatch, HANGING_RUBRIC, id="vf_hanging_rubric", step_timeout_s=0.5)

    async def go() -> Any:
        await env.reset()
        try:
            await asyncio.wait_for(env.finish(), 60)  # a hang fails the test rather than holding it
        except EnvHung as exc:
            await asyncio.sleep(0)  # the cancelled rollout task ends
            return exc
        finally:
            await env.aclose()
        return None

    failure = asyncio.run(go())
    assert failure is not None, "finish() returned though the rubric never answers"
    assert "environment 'vf_hanging_rubric' did not finish within 0.5 s of the episode's end" in str(failure)
    assert "raise env.step_timeout_s" in str(failure)
