"""Hunt wave eight on the launcher's records and resume: kinds earlier waves left open.

- SIGHUP (a closed terminal, a dropped ssh session) stops a run as Ctrl-C and SIGTERM do: the stage is
  stopped, its record and the pipeline's say so, and a resume reruns it alone. Before, the launcher died
  at once and the stage, in its own session, ran on unwatched while its record said `running`.
- Each record of a stop names what stopped it: Ctrl-C, SIGTERM or SIGHUP (each was "Ctrl-C" in a stage's
  record and "Ctrl-C or SIGTERM" in the pipeline's).
- Ctrl-C pressed again while a stage is given its grace period to stop kills it at once: before, the
  second one abandoned the stop, and a stage that ignores SIGTERM ran on unwatched, recorded `stopped`
  (a resume stops leftovers of `running` records only).
- A process a stage moved into a session of its own (`setsid`, a daemon) ends with the stage: it carries
  the stage's execution id, which finds it as a resume finds a dead launcher's leftovers. Before, only
  the stage's process group was stopped.
- A signal the launcher was started ignoring (`nohup t3rl run …`) stays ignored.

In process: the stage sends the signal to this process, inside the handler `t3rl run` installs.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pipeline_helpers import alive, count, run, three_stage_plan
from test_resume_verifies_outputs import dirs  # noqa: F401  (a fixture: a run dir and a marks dir)

from launch.cli.failures import sigterm_as_interrupt
from launch.run.executors import local
from launch.run.exit_codes import StopSignal, stop_reason


@pytest.fixture
def sentinel_handlers() -> Iterator[list[int]]:
    """A handler of this test's for each stop signal while the test runs, restored after: a signal that
    reaches it (instead of stopping the run) is listed, and never ends the test process."""
    got: list[int] = []
    # Named here, not read from STOP_SIGNALS: a SIGHUP left out of it must not end the test run.
    handled = (signal.SIGTERM, signal.SIGHUP)
    previous = {signum: signal.signal(signum, lambda signum, frame: got.append(signum)) for signum in handled}
    try:
        yield got
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_a_hangup_stops_the_stage_records_it_and_the_resume_reruns_it_alone(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
    sentinel_handlers: list[int],
) -> None:
    run_dir, marks = dirs
    # The first attempt hangs up on the launcher and would run on for 5 s; the resumed one just ends.
    hang_up = f"touch {marks}/hup; echo $$ > {marks}/b.pid; kill -HUP {os.getpid()}; sleep 5"
    plan = three_stage_plan(run_dir, marks, f"if [ ! -e {marks}/hup ]; then {hang_up}; fi")
    with pytest.raises(KeyboardInterrupt), sigterm_as_interrupt():
        run(plan, run_dir)
    assert sentinel_handlers == []
    state = json.loads((run_dir / "state.json").read_text())
    # Each record names the signal that stopped it, not Ctrl-C.
    hangup = "stopped by SIGHUP (the terminal closed or the ssh session dropped)"
    assert state["pipeline"]["status"] == "stopped" and state["pipeline"]["message"] == f"{hangup} at b"
    assert state["stages"]["b"]["message"] == hangup
    statuses = {name: rec["status"] for name, rec in state["stages"].items()}
    assert statuses == {"a": "succeeded", "b": "stopped"}
    # Stopped with its stage, not left running unwatched (a zombie not yet reaped has ended).
    assert not alive(int((marks / "b.pid").read_text()))

    result = run(plan, run_dir)
    assert result.status == "succeeded"
    assert [(d.stage, d.action) for d in result.decisions] == [("a", "cached"), ("b", "resume"), ("c", "run")]
    assert [count(marks, name, "done") for name in "abc"] == [1, 1, 1]


def test_a_signal_ignored_at_start_stays_ignored(sentinel_handlers: list[int]) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as `nohup` starts t3rl
    with sigterm_as_interrupt():
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)  # ignored: nothing is raised
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_ctrl_c_is_still_named_as_ctrl_c() -> None:
    assert stop_reason(KeyboardInterrupt()) == "stopped by the user (Ctrl-C)"
    assert stop_reason(StopSignal(signal.SIGTERM)).startswith("stopped by SIGTERM (a scheduler")


def test_ctrl_c_again_while_a_stage_is_stopping_kills_it_instead_of_leaving_it_running(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
    sentinel_handlers: list[int],
) -> None:
    run_dir, marks = dirs
    plan = three_stage_plan(run_dir, marks, f"trap '' TERM; echo $$ > {marks}/b.pid; sleep 60")

    def press_ctrl_c_twice() -> None:
        while not (marks / "b.pid").exists():
            time.sleep(0.02)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.3)  # within the 30 s grace period the stage is given
        os.kill(os.getpid(), signal.SIGINT)

    presser = threading.Thread(target=press_ctrl_c_twice)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(plan, run_dir, grace=30.0)
        presser.join()
        state = json.loads((run_dir / "state.json").read_text())
        assert state["stages"]["b"]["status"] == "stopped"
        assert not alive(int((marks / "b.pid").read_text()))
    finally:
        presser.join()
        pgid = json.loads((run_dir / "state.json").read_text())["stages"]["b"]["handle"]["pgid"]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGKILL)


def test_ctrl_c_again_while_the_stages_groups_are_looked_up_kills_it(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
    sentinel_handlers: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second Ctrl-C may come before the grace period starts: while the stage's groups are looked up
    (every process's environment read, slow on a busy machine). It raised out of the stop then, and the
    stage, which ignores SIGTERM, ran on unwatched."""
    run_dir, marks = dirs
    plan = three_stage_plan(run_dir, marks, f"trap '' TERM; echo $$ > {marks}/b.pid; sleep 60")
    looked_up = local._stage_groups
    pressed: list[bool] = []

    ran = threading.Event()

    def pressed_again_meanwhile(*args: object) -> list[int]:
        if ran.is_set() and not pressed:  # the stop's lookup, not the one after stage a ended
            pressed.append(True)
            raise KeyboardInterrupt  # as the handler of a SIGINT arriving here raises it
        return looked_up(*args)

    def press_ctrl_c() -> None:
        while not (marks / "b.pid").exists():
            time.sleep(0.02)
        ran.set()
        os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(local, "_stage_groups", pressed_again_meanwhile)
    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run(plan, run_dir, grace=30.0)
        state = json.loads((run_dir / "state.json").read_text())
        assert pressed and state["stages"]["b"]["status"] == "stopped"
        assert not alive(int((marks / "b.pid").read_text()))
    finally:
        presser.join()
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int((marks / "b.pid").read_text()), signal.SIGKILL)


def test_a_process_a_stage_moved_into_its_own_session_ends_with_the_stage(
    dirs: tuple[Path, Path],  # noqa: F811 - the fixture
) -> None:
    """A daemon a stage starts in a session of its own (`setsid`) carries the stage's execution id: it is
    stopped when the stage ends, as its process group is, not left running unwatched."""
    run_dir, marks = dirs
    plan = three_stage_plan(run_dir, marks, f"setsid sleep 60 & echo $! > {marks}/daemon.pid")
    try:
        assert run(plan, run_dir).status == "succeeded"
        assert not alive(int((marks / "daemon.pid").read_text()))
    finally:
        with contextlib.suppress(ProcessLookupError, ValueError, FileNotFoundError):
            os.kill(int((marks / "daemon.pid").read_text()), signal.SIGKILL)
