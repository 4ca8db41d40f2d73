"""Hub worlds, round twelve: rows pinned to a release, played by an environment that shows none.

The rows of an OpenEnv or verifiers environment record the release they were prepared from, and the
world refuses rows of another one. A side publishing nothing was taken for the same release: an OpenEnv
server whose /metadata is gone (or did not answer in time: any error read as "none"), a verifiers
environment installed again from source or editable (no dist-info with a version beside it). Its
results sat beside those of the pinned release on the same rows, same identity. Rows that pin a
release now need the environment to show it; rows that pin none play as before.

A verifiers environment adding a message of megabytes (a tool's result, an env_response) was tokenized
whole (minutes) into a context that cannot hold it; OpenEnv's observations were bounded, verifiers'
not. Past env.max_observation_chars the episode fails as the environment's."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.server import EnvServer
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.types import AnswerAction
from tests.envs.test_hub_kinds_three import SCORED_ENV, _release, first_episode, released_server  # noqa: F401

# openenv and verifiers (and t3rl's modules that import them: data, env) are imported in the tests that use
# them: ~4 s per process, and every xdist worker collects this module.
PINNED = {"name": "released", "version": "1.0.0"}


@pytest.mark.parametrize(
    ("server", "rows", "refused"),
    [
        (PINNED, PINNED, None),
        ({}, {}, None),
        (PINNED, {}, None),  # rows of an older t3rl pin nothing
        ({"name": "released", "version": "1.1.0"}, PINNED, "the server now runs released 1.1.0"),
        ({}, PINNED, "publishes no release now"),
    ],
)
def test_rows_pinning_a_release_need_the_server_to_publish_it(
    server: dict, rows: dict, refused: str | None
) -> None:
    from t3rl_core.envs.openenv.env import other_release_problem

    problem = other_release_problem(server, rows)
    assert (problem is None) if refused is None else (refused in str(problem))


def test_a_server_that_no_longer_publishes_its_release_does_not_play_pinned_rows(
    released_server: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from t3rl_core.envs.openenv.data import prepare as openenv_prepare
    from t3rl_core.envs.openenv.env import OpenEnvEpisode, OpenEnvFactory

    config = OpenEnvEnvConfig(url=released_server)
    row = json.loads(openenv_prepare(config, tmp_path)["openenv_eval"].read_text().splitlines()[0])
    assert row["metadata"]["openenv_release"] == PINNED
    monkeypatch.setattr(EnvServer, "release", lambda self: {})  # /metadata gone, or not answering in time
    with pytest.raises(
        WorldUnavailable, match=r"prepared against released 1\.0\.0 and the server publishes no"
    ):
        OpenEnvFactory(config)(row, "eval")
    del row["metadata"]["openenv_release"]  # rows pinning none play as before
    assert isinstance(OpenEnvFactory(config)(row, "eval"), OpenEnvEpisode)


def test_a_verifiers_environment_installed_without_its_version_does_not_play_pinned_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.envs.verifiers.data import prepare as verifiers_prepare
    from t3rl_core.envs.verifiers.env import VerifiersEnvFactory

    config = _release(tmp_path / "a", monkeypatch, "0.1.2")
    row = json.loads(
        verifiers_prepare(config, tmp_path / "out")["verifiers_eval"].read_text().splitlines()[0]
    )
    assert row["metadata"]["verifiers_release"] == {"package": "vf_released_env", "version": "0.1.2"}
    monkeypatch.undo()
    source = tmp_path / "b"  # the same module from a checkout: no dist-info beside it
    source.mkdir()
    (source / "vf_released_env.py").write_text(SCORED_ENV)
    monkeypatch.syspath_prepend(str(source))
    monkeypatch.delitem(sys.modules, "vf_released_env", raising=False)
    with pytest.raises(
        WorldUnavailable, match=r"prepared from vf_released_env 0\.1\.2 and the installed module has no"
    ):
        VerifiersEnvFactory(config)(row, "eval")
    del row["metadata"]["verifiers_release"]
    assert VerifiersEnvFactory(config)(row, "eval") is not None


# A MultiTurnEnv whose env_response adds a message of `SIZE` characters.
WORDY = """
import verifiers as vf
from datasets import Dataset

SIZE = {size}

class Wordy(vf.MultiTurnEnv):
    async def env_response(self, messages, state, **kwargs):
        return [{{"role": "user", "content": "x" * SIZE}}]

def load_environment():
    return Wordy(dataset=Dataset.from_list([{{"question": "q", "answer": "a"}}]), max_turns=3,
                 rubric=vf.Rubric(funcs=[lambda completion: 1.0]))
"""


@pytest.mark.parametrize(("size", "fails"), [(1_000, False), (1_001, True)])
def test_a_verifiers_message_past_the_limit_fails_the_episode(
    size: int, fails: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.envs.verifiers.env import EnvTooLong

    module = f"vf_wordy_{size}"
    env = first_episode(
        tmp_path, monkeypatch, WORDY.format(size=size), id=module, max_observation_chars=1_000
    )

    async def go() -> object:
        await env.reset()
        try:
            return await env.step(AnswerAction(text="a"))
        except EnvTooLong as exc:
            return exc
        finally:
            await env.aclose()

    answer = asyncio.run(go())
    if fails:
        assert isinstance(answer, EnvTooLong)
        assert f"environment '{module}' added a message of 1,001 characters" in str(answer)
        assert "env.max_observation_chars=1,000" in str(answer)
    else:
        assert answer.messages[-1]["content"] == "x" * size  # type: ignore[attr-defined]
