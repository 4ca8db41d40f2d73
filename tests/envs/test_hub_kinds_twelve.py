"""Hub worlds, round twelve: rows pinned to a release, played by an environment that shows none.

The rows of an OpenEnv or verifiers environment record the release they were prepared from, and the
world refuses rows of another one. A side publishing nothing was taken for the same release: an OpenEnv
server whose /metadata is gone (or did not answer in time: any error read as "none"), a verifiers
environment installed again from source or editable (no dist-info with a version beside it). Its
results sat beside those of the pinned release on the same rows, same identity. Rows that pin a
release now need the environment to show it; rows that pin none play as before."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.openenv.data import prepare as openenv_prepare
from t3rl_core.envs.openenv.env import OpenEnvEpisode, OpenEnvFactory, other_release_problem
from t3rl_core.envs.openenv.server import EnvServer
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.envs.verifiers.data import prepare as verifiers_prepare
from t3rl_core.envs.verifiers.env import VerifiersEnvFactory
from tests.envs.test_hub_kinds_three import SCORED_ENV, _release, released_server  # noqa: F401

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
    problem = other_release_problem(server, rows)
    assert (problem is None) if refused is None else (refused in str(problem))


def test_a_server_that_no_longer_publishes_its_release_does_not_play_pinned_rows(
    released_server: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
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
