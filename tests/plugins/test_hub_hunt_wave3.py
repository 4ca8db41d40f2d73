"""Adversarial hub environments and plugins, hunt wave three (docs/explanation/plugins.md, "Hunt wave
three"). Each is answered by the declaration every world (or plugin) shares, not by a case of its own:
a world call's bound (`Env.CALL_TIMEOUT_S`) holds for the time the call took, measured; what a factory
started is released by its `aclose`; what a plugin's import did to the process is
`registry.import_effects`; a plugin distribution's requirements are read where its name is.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest

from t3rl_core import registry
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.envs.base import Env
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, Transition
from tests.rollout.fakes import FixedEngine


class _Config(EnvConfig):
    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset({"reward", "metrics"})
    name: str = f"{__name__}:World"


class _Quick(Env):
    CALL_TIMEOUT_S = 60.0  # generous: a busy machine must not fail the world that keeps its bound

    async def step(self, action: Action) -> Transition:
        await asyncio.sleep(0)
        return Transition(done=True)

    def outcome(self) -> dict[str, Any]:
        return {"reward": 1.0, "metrics": {}}


class _Blocking(_Quick):
    CALL_TIMEOUT_S = 0.05

    async def step(self, action: Action) -> Transition:
        time.sleep(0.2)  # the kind under test: a blocking call in an async def
        return Transition(done=True)


class _Swallowing(_Quick):
    CALL_TIMEOUT_S = 0.05

    async def step(self, action: Action) -> Transition:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:  # the kind under test: the bound's cancellation swallowed
            time.sleep(0.01)
        return Transition(done=True)


class World:
    """A factory of `env_class` worlds (one per call)."""

    Config = _Config
    env_class: type[Env] = _Quick

    def __init__(self, config: _Config) -> None:
        self.config = config

    def __call__(self, task: dict[str, Any], mode: str) -> Env:
        return self.env_class()

    async def aclose(self) -> None:
        pass


def _runner() -> EpisodeRunner:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": f"{__name__}:World"},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    return EpisodeRunner.from_runtime(runtime, FixedEngine([]))


def _play(runner: EpisodeRunner) -> str:
    ids = runner.chat.encode('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "stop")])
    task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}
    episode, _ = asyncio.run(runner.run(task, "eval"))
    return f"{episode.status}: {episode.failure.message if episode.failure else ''}"


# ----------------------------------------------------------------------------- a call's bound, measured


@pytest.mark.parametrize(
    ("world", "said"),
    [
        (_Blocking, "it held the event loop (a time.sleep or blocking I/O in an async def)"),
        (_Swallowing, "it caught the cancellation and returned anyway: let asyncio.CancelledError propagate"),
    ],
    ids=["time-sleep", "swallowed-cancel"],
)
def test_a_call_asyncio_could_not_cut_still_fails_past_its_bound(
    world: type[Env], said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both went on as if the bound held: `t3rl eval` complete, the bound of 0.05 s silently 0.2 s (a
    `time.sleep` holds every concurrent episode too)."""
    monkeypatch.setattr(World, "env_class", world)
    found = _play(_runner())
    assert found.startswith(f"failed: environment error: {world.__name__}.step() took "), found
    assert "past its 0.05 s bound" in found and said in found
    monkeypatch.setattr(World, "env_class", _Quick)  # a world within its bound is played as before
    assert _play(_runner()) == "completed: "


# ----------------------------------------------------------------------------- what a factory leaves


POOLED = """
import threading
from t3rl_counter.world import CounterConfig, CounterWorld

STOP = threading.Event()


class PooledConfig(CounterConfig):
    name: str = "{module}:Pooled"


class Pooled(CounterWorld):
    Config = PooledConfig

    def __init__(self, config):
        super().__init__(config)
        self.poller = threading.Thread(target=STOP.wait, args=(30,), daemon={daemon}, name="poller")
        self.poller.start()

    async def aclose(self):
{close}
"""
# How the factory's aclose ends its thread: not at all, or as it should (set the event, join).
CLOSES = {"kept": "        pass", "ended": "        STOP.set()\n        self.poller.join()"}


def _validate_pooled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, daemon: bool, close: str
) -> tuple[int, str]:
    from typer.testing import CliRunner

    from launch.cli.app import app
    from tests.support.plugin_example import EXAMPLE_CONF

    source = POOLED.format(module=module, daemon=daemon, close=CLOSES[close])
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    argv = ["validate", "--config-dir", str(EXAMPLE_CONF), "+experiment=counter", f"env.name={module}:Pooled"]
    try:
        done = CliRunner().invoke(app, argv, catch_exceptions=False)
    finally:
        sys.modules[module].STOP.set()  # the test process's own threads end here, whatever was said
    return done.exit_code, " ".join(done.output.split())


@pytest.mark.parametrize("daemon", [False, True], ids=["thread", "daemon"])
def test_a_thread_a_factory_leaves_running_after_its_close_is_named_at_validate(
    daemon: bool, example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Built once per run and closed after its last episode, a factory whose aclose does not end the
    thread it started left it running: one that is no daemon kept the stage's process from ever exiting
    (the eval hung after writing its summary), unsaid."""
    module = f"pooled_{'daemon' if daemon else 'thread'}"
    code, text = _validate_pooled(tmp_path, monkeypatch, module, daemon, "kept")
    said = f"env plugin {module}:Pooled: built and closed as each stage does, it left this process changed: "
    assert f"{said}started threads poller" in text, text
    assert "end what the component starts in its aclose() (stop and join its threads" in text
    if daemon:
        assert code == 0 and f"warning env.name: {said}" in text
    else:
        assert code == 2 and f"error env.name: {said}" in text
        assert "(not a daemon: the process cannot exit before it ends): a stage using it would never" in text


def test_a_factory_that_ends_its_thread_in_aclose_is_not_named(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, text = _validate_pooled(tmp_path, monkeypatch, "pooled_ended", False, "ended")
    assert code == 0 and "left this process changed" not in text, text


def test_a_factory_whose_close_raises_leaves_the_eval_summary_and_engine_closed(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """`runner.aclose()` raised out of the eval's `finally`: no summary.json, the engine never closed."""
    closed: list[str] = []

    async def raising(self: Any) -> None:
        raise RuntimeError("pool already gone")

    async def engine_closed(self: Any) -> None:
        closed.append("engine")

    monkeypatch.setattr(World, "aclose", raising)
    runner = _runner()
    monkeypatch.setattr(type(runner.engine), "aclose", engine_closed, raising=False)
    asyncio.run(runner.aclose())
    assert closed == ["engine"]
    said = "the env factory World failed to release (its aclose() raised RuntimeError: pool already gone)"
    assert said in caplog.text


# ----------------------------------------------------------------------------- what a plugin's import writes

WRITER = """
import os
from pathlib import Path
from t3rl_counter.reward import ExactTarget, ExactTargetConfig

Path(os.environ["T3RL_HUNT_OUTSIDE"], "cache").mkdir()
Path(os.environ["T3RL_HUNT_OUTSIDE"], "cache", "index.db").write_text("x")
Path(os.environ["T3RL_HUNT_OUTSIDE"], "seen.txt").read_text()  # a read is no write


class WriterConfig(ExactTargetConfig):
    name: str = "writer_reward:Writer"


class Writer(ExactTarget):
    Config = WriterConfig
"""


def test_files_a_plugins_import_writes_outside_the_working_directory_are_named(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the working directory's listing was compared: a cache under ~ or a lock in /tmp that every
    process importing the plugin (each stage, each rollout worker) writes again was unsaid."""
    from t3rl_core.registries import REWARDS
    from t3rl_core.registry import Registry

    outside, here = tmp_path / "home", tmp_path / "run"
    outside.mkdir(), here.mkdir()
    (outside / "seen.txt").write_text("read")
    (tmp_path / "writer_reward.py").write_text(WRITER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(here)
    monkeypatch.setenv("T3RL_HUNT_OUTSIDE", str(outside))
    fresh = Registry(REWARDS.kind, REWARDS.entries, group=REWARDS.group, base=REWARDS.base)
    fresh.validate({"name": "writer_reward:Writer"})
    (effect,) = fresh.entry("writer_reward:Writer").effects
    written = f"{outside / 'cache'}, {outside / 'cache' / 'index.db'}"
    assert effect == f"wrote {written} outside the working directory"
    # Nothing is watched once the import is read: a write afterwards is nobody's effect.
    (outside / "later.txt").write_text("x")
    assert registry._watching == [0] and registry._WRITES == []


# ----------------------------------------------------------------------------- what a plugin requires


def test_a_plugin_requiring_a_distribution_not_installed_is_named_at_validate(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_entry_points: None
) -> None:
    """Its import succeeds (the module imports the library where it uses it), and the code that needs it
    raised ImportError at its first episode: `Requires-Dist` on a distribution not installed was skipped."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from tests.plugins.test_plugin_hunt import EXACT, distribution
    from tests.support.plugin_example import EXAMPLE_CONF

    monkeypatch.syspath_prepend(str(tmp_path))
    requires = "t3rl-hunt-absent>=2.1\npytest; extra == 'test'\nt3rl-hunt-elsewhere; sys_platform == 'zos'\n"
    distribution(tmp_path, "plug_m", f"[t3rl.rewards]\nexact_m = {EXACT}\n", requires)
    argv = ["validate", "--config-dir", str(EXAMPLE_CONF), "+experiment=counter", "reward.name=exact_m"]
    done = CliRunner().invoke(app, argv, catch_exceptions=False)
    text = " ".join(done.output.split())
    assert done.exit_code == 0, text  # a warning: the stage may run where it is installed
    assert (
        "warning reward.name: reward plugin exact_m: its distribution requires t3rl-hunt-absent>=2.1, "
        "which is not installed here" in text
    ), text
    assert "fix: pip install 't3rl-hunt-absent>=2.1'" in text
    assert "pytest" not in text and "elsewhere" not in text  # an extra's, another platform's
    met = registry.Registry("reward", {}, group="t3rl.rewards")
    (tmp_path / "plug_m-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plug_m\nVersion: 1.0\nRequires-Dist: pydantic>=2\n"
    )
    registry.entry_points.cache_clear()
    assert met.entry("exact_m").missing == ()  # every requirement installed: nothing to say


# ----------------------------------------------------------------------------- async and sync, at run time


class _MissingAwait(_Quick):
    async def _settled(self) -> Transition:
        return Transition(done=True)

    async def step(self, action: Action) -> Transition:
        return self._settled()  # type: ignore[return-value]  # the kind under test: `await` left out


async def _made_async(task: dict[str, Any], mode: str) -> Env:
    return _Quick()


@pytest.mark.parametrize(
    ("made", "said"),
    [
        (
            lambda task, mode: _made_async(task, mode),
            "failed: cannot start the episode: TypeError: the world's factory returned a coroutine, not an "
            "Env: an await is missing where it returns an async call's result (return await ...), or it "
            "is async where t3rl does not await it (make it a plain def)",
        ),
        (
            lambda task, mode: {"messages": []},
            "failed: cannot start the episode: TypeError: the world's factory returned dict, not an Env: "
            "return an instance of a t3rl_core.envs.base.Env subclass",
        ),
    ],
    ids=["returns-a-coroutine", "returns-a-dict"],
)
def test_a_factory_returning_no_env_fails_its_episode_naming_what_it_returned(
    made: Any, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `__call__` returning an async helper's coroutine passes the definition check (it is a plain
    def) and every episode failed as "'coroutine' object has no attribute 'stop'", then again at its
    release ("coroutine.aclose() failed")."""
    monkeypatch.setattr(World, "__call__", lambda self, task, mode: made(task, mode))
    assert _play(_runner()).startswith(said)


def test_a_step_returning_an_async_calls_result_unawaited_names_the_missing_await(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(World, "env_class", _MissingAwait)
    found = _play(_runner())
    assert "_MissingAwait.step() returned a coroutine, not a Transition: an await is missing" in found


def test_a_reward_returning_an_async_calls_result_unawaited_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A plain reward callable returning a coroutine: `returns a RewardResult, got coroutine <…>`."""
    from t3rl_core.rewards.base import InvalidReward, RewardResult, checked

    async def scored() -> RewardResult:
        return RewardResult(value=1.0)

    with pytest.raises(InvalidReward, match=r"^mine returned a coroutine, not a RewardResult: an await is"):
        checked(scored(), "mine")  # type: ignore[arg-type]
