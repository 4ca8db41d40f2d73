"""A forked child composes while the command imports the schema (launch.config.compose_ahead): what it
hands back is what composing in process gives, errors included; a child that fails hands composition
back; nothing is forked where it cannot help; no child outlives the command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import launch.config.resolved as resolved_module
from launch.config import compose_ahead
from launch.config.errors import ConfigError
from launch.config.plain import Plain

REPO = Path(__file__).resolve().parents[2]
THREADS_RUNNING = compose_ahead._threads_running  # the fixture below stands it in for each test
HELPS = compose_ahead._helps  # the fixture forks for every line, so that the child is tested
HYDRA_LINE = "paths.cache_dir=${paths.runs_dir}/cache"  # an interpolated value: left to Hydra


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    monkeypatch.delenv(compose_ahead.ENV_SWITCH, raising=False)
    monkeypatch.setattr(compose_ahead, "_threads_running", lambda: False)  # pytest may run helper threads
    monkeypatch.setattr(compose_ahead, "_helps", lambda overrides: True)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.chdir(tmp_path)
    yield
    compose_ahead.discard()


def _as_tuple(plain: Plain) -> tuple:
    return plain.data, dict(plain.provenance.items()), plain.hydra


def _gone(pid: int) -> bool:
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=stage2_bfcl"],
        ["+experiment=quickstart", "seed=7", "env.max_step_limit=3"],
        ["+experiment=tau2_pipeline", "hardware=h200x8"],
    ],
)
def test_the_child_hands_back_what_composing_in_process_gives(overrides: list[str]) -> None:
    compose_ahead.start(overrides)
    assert compose_ahead.composing(overrides)
    pid = compose_ahead._pending.pid
    taken = compose_ahead.take(overrides)
    assert taken is not None and _gone(pid)
    assert _as_tuple(taken) == _as_tuple(resolved_module.composed_plain(overrides))
    assert not compose_ahead.composing(overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=no_such_experiment"],
        ["+experiment=stage2_bfcl", "model=qwen9"],
        ["+experiment=stage2_bfcl", "model.no_such_key=1"],
        ["+experiment=stage2_bfcl", "eval.server.port=${nope}"],
    ],
)
def test_a_composition_error_is_raised_as_in_process(overrides: list[str]) -> None:
    with pytest.raises(ConfigError) as in_process:
        resolved_module.composed_plain(overrides)
    compose_ahead.start(overrides)
    with pytest.raises(ConfigError) as from_child:
        compose_ahead.take(overrides)
    assert from_child.value.problems == in_process.value.problems
    assert from_child.value.warnings == in_process.value.warnings


def test_a_child_that_fails_hands_composition_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object) -> Plain:
        raise RuntimeError("a bug in composition")

    monkeypatch.setattr(resolved_module, "composed_plain", broken)  # the child forks with it
    compose_ahead.start(["+experiment=stage2_bfcl"])
    pid = compose_ahead._pending.pid
    assert compose_ahead.take(["+experiment=stage2_bfcl"]) is None
    assert _gone(pid)


def test_a_child_killed_midway_hands_composition_back(monkeypatch: pytest.MonkeyPatch) -> None:
    def hanging(*args: object) -> Plain:
        import time

        time.sleep(60)
        raise AssertionError("never reached")

    monkeypatch.setattr(resolved_module, "composed_plain", hanging)
    compose_ahead.start(["+experiment=stage2_bfcl"])
    os.kill(compose_ahead._pending.pid, 9)
    assert compose_ahead.take(["+experiment=stage2_bfcl"]) is None


def test_another_command_line_discards_the_child() -> None:
    compose_ahead.start(["+experiment=stage2_bfcl"])
    pid = compose_ahead._pending.pid
    assert not compose_ahead.composing(["+experiment=stage1_bfcl"])
    assert compose_ahead.take(["+experiment=stage1_bfcl"]) is None
    assert _gone(pid) and compose_ahead._pending is None


def test_discard_leaves_no_child() -> None:
    compose_ahead.start(["+experiment=stage2_bfcl"])
    pid = compose_ahead._pending.pid
    compose_ahead.discard()
    assert _gone(pid) and compose_ahead.take(["+experiment=stage2_bfcl"]) is None


def test_one_child_at_a_time() -> None:
    compose_ahead.start(["+experiment=stage2_bfcl"])
    first = compose_ahead._pending
    compose_ahead.start(["+experiment=stage1_bfcl"])
    assert compose_ahead._pending is first


@pytest.mark.parametrize(
    "setting",
    ["switched off", "one CPU", "a thread runs"],
)
def test_nothing_is_forked_where_it_cannot_help_or_work(
    setting: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if setting == "switched off":
        monkeypatch.setenv(compose_ahead.ENV_SWITCH, "0")
    elif setting == "one CPU":
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)
    else:
        monkeypatch.setattr(compose_ahead, "_threads_running", lambda: True)
    compose_ahead.start(["+experiment=stage2_bfcl"])
    assert compose_ahead._pending is None


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts open descriptors in /proc")
def test_a_refused_fork_composes_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused() -> int:
        raise BlockingIOError(11, "Resource temporarily unavailable")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", refused)
    compose_ahead.start(["+experiment=stage2_bfcl"])
    assert compose_ahead._pending is None
    assert len(os.listdir("/proc/self/fd")) == before  # the pipe was closed again


def test_a_running_thread_is_seen() -> None:
    import threading

    release = threading.Event()
    thread = threading.Thread(target=release.wait)
    thread.start()
    try:
        assert THREADS_RUNNING()
    finally:
        release.set()
        thread.join()


def _cli(args: list[str], cwd: Path, ahead: str) -> subprocess.CompletedProcess[str]:
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('hydra imported:', 'hydra' in sys.modules, file=sys.stderr))\n"
        "sys.argv[0] = 't3rl'\nfrom launch.cli import main\nmain()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "COLUMNS": "200", compose_ahead.ENV_SWITCH: ahead}
    argv = [sys.executable, "-c", probe, *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not compose_ahead.enabled(), reason="composes ahead only with fork and a second CPU")
@pytest.mark.parametrize(
    "args",
    [
        ["validate", "+experiment=stage2_bfcl"],
        ["validate", "+experiment=stage2_bfcl", "hardware.tensor_parallel=3"],
        ["validate", "+experiment=stage2_bfcl", "model=qwen9"],
        ["validate", "+experiment=stage2_bfcl", HYDRA_LINE],
    ],
)
def test_the_cli_composes_in_the_child_and_answers_the_same(args: list[str], tmp_path: Path) -> None:
    ahead, alone = _cli(args, tmp_path, "1"), _cli(args, tmp_path, "0")
    assert (ahead.returncode, ahead.stdout) == (alone.returncode, alone.stdout)
    *ahead_err, ahead_probe = ahead.stderr.splitlines()
    *alone_err, alone_probe = alone.stderr.splitlines()
    assert ahead_err == alone_err
    # A line left to Hydra composes in the child, so the command process never imports Hydra; a plain
    # line is not forked and composes directly (an unknown option then goes to Hydra, which words it).
    unknown, hydra_line = args[-1] == "model=qwen9", args[-1] == HYDRA_LINE
    assert ahead_probe == f"hydra imported: {unknown}"
    assert alone_probe == f"hydra imported: {unknown or hydra_line}"


def test_only_a_line_left_to_hydra_is_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compose_ahead, "_helps", HELPS)
    compose_ahead.start(["+experiment=stage2_bfcl", "seed=7"])
    assert compose_ahead._pending is None  # composes directly in a few milliseconds
    compose_ahead.start(["+experiment=stage2_bfcl", HYDRA_LINE])
    assert compose_ahead.composing(["+experiment=stage2_bfcl", HYDRA_LINE])
