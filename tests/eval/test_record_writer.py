"""A large eval's records are masked, hashed and written by a child process (t3rl_core.eval.record_writer),
off the event loop: the same bytes as the loop writes (drawn records with credentials in keys and
values, a Secret revealed between two records), every record sent on disk in order however the eval
ends (an exception, Ctrl-C and SIGTERM at the child, the eval's process killed), and a child that died
is an error of its own, never a BrokenPipeError (the eval's reader gone)."""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from t3rl_core.eval import jsonl, record_writer, runner
from t3rl_core.eval import resume as resuming
from t3rl_core.eval.record_writer import ChildWriter, LoopWriter, RecordWriterError
from t3rl_core.os_errors import failed_file, os_error_line
from t3rl_core.secret import Secret
from tests.eval.test_record_bytes import records
from tests.support.eval_runs import bfcl_runtime, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows

# Credentials of the kinds the masks know, placed in keys, values and episode text; JSON may split them
# over a key and its value (`"token": "V"`) or escape their quotes.
_CREDENTIALS = st.sampled_from(
    [
        "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv",
        "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "postgres://alice:V3ryS3cret@db.example.com/app",
        "Authorization: Bearer abc123def456ghi789",
        "mysql -u root -pHunter2xyz app",
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
        "https://example.com/x?token=Zq8Wm3Lp9Xr2",
    ]
)


@st.composite
def records_with_credentials(draw: st.DrawFn) -> dict[str, Any]:
    record = draw(records())
    credential = draw(_CREDENTIALS)
    where = draw(st.sampled_from(["error", "messages", "response_text", "key"]))
    if where == "error":
        record["error"] = f"RuntimeError: refused {credential}"
    elif where == "messages":
        record["messages"] = [*record.get("messages", []), {"role": "tool", "content": credential}]
    elif where == "response_text":
        record["response_text"] = f"{record.get('response_text', '')} {credential}"
    else:
        record["outcome"] = {credential.split()[0]: credential}
    return record


def write_all(writer: LoopWriter | ChildWriter, drawn: list[dict[str, Any]], reveal_at: int = -1) -> None:
    for number, record in enumerate(drawn):
        if number == reveal_at:
            Secret("env:T3RL_TEST_WRITER_SECRET").reveal()
        writer.write((f"task-{number}", 0, 0), record, f"job-{number}", 1)
    writer.close()


def _files(out: Path) -> tuple[bytes, bytes]:
    return (out / "lines").read_bytes(), (out / "index").read_bytes()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    drawn=st.lists(st.one_of(records(), records_with_credentials()), min_size=1, max_size=25),
    reveal_at=st.integers(0, 25),
)
def test_the_child_writes_the_bytes_the_loop_writes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, drawn: Any, reveal_at: int
) -> None:
    # A value a Secret reveals between two records: masked from that record on, by both writers.
    monkeypatch.setenv("T3RL_TEST_WRITER_SECRET", "Xy7-revealed-Qz4")
    drawn = [*drawn, {"error": "quotes Xy7-revealed-Qz4", "messages": [{"content": "Xy7-revealed-Qz4"}]}]
    reveal_at = min(reveal_at, len(drawn) - 1)
    files = []
    for kind in (LoopWriter, ChildWriter):
        monkeypatch.setattr("t3rl_core.secret._REVEALED", set())
        out = tmp_path_factory.mktemp(kind.__name__)
        write_all(kind(out / "lines", out / "index"), drawn, reveal_at)
        files.append(_files(out))
    assert files[0] == files[1]
    lines = files[1][0].splitlines()
    assert len(lines) == len(drawn) and b"Xy7-revealed-Qz4" not in lines[-1]
    assert b"V3ryS3cret" not in files[1][0] and b"Hunter2xyz" not in files[1][0]


# The eval's process, leader of its process group as a command run from a shell is, sends 40 records and,
# after the 6th, the terminal's Ctrl-C and a launcher's SIGTERM reach its group (the child's start-up
# still under way); it stops, closing the writer in its `finally`.
_STOPPED = """
import os, signal, sys
from pathlib import Path
from t3rl_core.eval.record_writer import ChildWriter
from t3rl_core.eval.resume import INDEX_FILE

def stop(signum, frame):
    raise SystemExit(128 + signum)

signal.signal(signal.SIGTERM, stop)
out = Path(sys.argv[1])
writer = ChildWriter(out / "trajectories.jsonl", out / INDEX_FILE)
try:
    for n in range(40):
        record = {"task_id": f"t{n}", "sample": 0, "repeat": 0, "status": "completed"}
        writer.write((f"t{n}", 0, 0), {**record, "response_ids": list(range(n))}, "job", 1)
        if n == 5:
            os.killpg(0, signal.SIGTERM)
            os.killpg(0, signal.SIGINT)
except BaseException as stopped:
    print(type(stopped).__name__)
finally:
    writer.close()
"""


def test_every_record_sent_is_written_in_order_when_ctrl_c_and_sigterm_reach_the_evals_group(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-c", _STOPPED, str(tmp_path)]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, start_new_session=True
    )
    assert done.returncode == 0 and done.stdout.split() == ["SystemExit"], done.stderr
    trajectories = tmp_path / "trajectories.jsonl"
    sent = [{"task_id": f"t{n}", "sample": 0, "repeat": 0, "status": "completed"} for n in range(40)]
    lines = trajectories.read_bytes().splitlines(keepends=True)
    # What was sent before the stop, in order, each line whole and verified by its index entry.
    assert 6 <= len(lines) < 40
    assert (
        lines
        == [jsonl.record_bytes({**r, "response_ids": list(range(n))}) for n, r in enumerate(sent)][
            : len(lines)
        ]
    )
    jobs = {(f"t{n}", 0, 0): "job" for n in range(40)}
    kept = resuming.load(tmp_path, trajectories, jobs)
    assert len(kept.records) == len(lines) and not kept.rerun


# The eval's process sends 30 records (outside an event loop, each in the pipe when `write` returns) and
# is killed: no close, no `finally`. Prints the child's pid.
_KILLED = """
import os, sys
from pathlib import Path
from t3rl_core.eval.record_writer import ChildWriter
out = Path(sys.argv[1])
writer = ChildWriter(out / "lines", out / "index")
for number in range(30):
    writer.write((f"t{number}", 0, 0), {"task_id": f"t{number}", "response_ids": [number]}, "job", 1)
print(writer._child.pid, flush=True)
os.kill(os.getpid(), 9)
"""


def test_a_killed_evals_child_still_writes_what_the_pipe_holds(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    command = [sys.executable, "-c", _KILLED, str(tmp_path)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == -signal.SIGKILL, done.stderr
    child, deadline = int(done.stdout.split()[0]), time.monotonic() + 300.0
    while _alive(child) and time.monotonic() < deadline:  # it writes the pipe's records, then ends
        time.sleep(0.01)
    lines = (tmp_path / "lines").read_text().splitlines()
    assert lines == [f'{{"task_id": "t{n}", "response_ids": [{n}]}}' for n in range(30)]


def _alive(pid: int) -> bool:
    try:
        return "zombie" not in Path(f"/proc/{pid}/status").read_text().lower()
    except OSError:
        return False


def test_a_child_that_died_is_a_writer_error_not_a_broken_pipe(tmp_path: Path) -> None:
    writer = ChildWriter(tmp_path / "lines", tmp_path / "index")
    writer.write(("t0", 0, 0), {"task_id": "t0"}, "job", 1)
    assert writer._child is not None
    writer._child.kill()
    writer._child.wait()
    with pytest.raises(RecordWriterError):
        writer.write(("t1", 0, 0), {"task_id": "t1"}, "job", 1)
    with pytest.raises(RecordWriterError):
        writer.close()


def test_a_large_eval_masks_its_records_off_the_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The eval's own process never masks a record (the child does), and each line verifies by its
    index entry."""

    def on_the_loop(text: str) -> str:
        raise AssertionError("a record masked on the event loop")

    monkeypatch.setattr(jsonl, "mask_episode_text", on_the_loop)
    monkeypatch.setattr(record_writer, "CHILD_FROM", 2)  # this small eval is a large one
    rows = bfcl_rows(per_category=1)
    asyncio.run(runner.run_eval(bfcl_runtime(), reference_config(3), rows, tmp_path, show_progress=False))
    got = read_records(tmp_path)
    assert len(got) == len(rows) and all(record["success"] for record in got)
    lines = (tmp_path / runner.TRAJECTORIES_FILE).read_bytes().splitlines(keepends=True)
    entries = [json.loads(line) for line in (tmp_path / resuming.INDEX_FILE).read_text().splitlines()]
    assert [entry["sha256"] for entry in entries] == [resuming.line_digest(line) for line in lines]


def test_the_world_is_released_before_the_records_are_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the last episode the runner (the world's processes, the engine) is closed first, then the
    writer waits for the last records, so that the two waits on other processes overlap."""
    from t3rl_core.rollout.runner import EpisodeRunner

    closed: list[str] = []
    runner_close, writer_close = EpisodeRunner.aclose, LoopWriter.close

    async def close_runner(self: EpisodeRunner) -> None:
        closed.append("runner")
        await runner_close(self)

    def close_writer(self: LoopWriter) -> None:
        closed.append("records")
        writer_close(self)

    monkeypatch.setattr(EpisodeRunner, "aclose", close_runner)
    monkeypatch.setattr(LoopWriter, "close", close_writer)
    rows = bfcl_rows(per_category=1)[:2]
    asyncio.run(runner.run_eval(bfcl_runtime(), reference_config(1), rows, tmp_path, show_progress=False))
    assert closed == ["runner", "records"] and len(read_records(tmp_path)) == len(rows)


def test_records_not_all_written_leave_the_summary_incomplete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary is made while the last records are written, but kept only once they are: a writer
    whose close fails (a full disk) leaves the eval incomplete, not the summary made before."""
    closed = LoopWriter.close

    def full_disk(self: LoopWriter) -> None:
        closed(self)
        raise OSError(errno.ENOSPC, "No space left on device", "trajectories.jsonl")

    monkeypatch.setattr(LoopWriter, "close", full_disk)
    with pytest.raises(OSError):
        asyncio.run(
            runner.run_eval(
                bfcl_runtime(),
                reference_config(1),
                bfcl_rows(per_category=1)[:1],
                tmp_path,
                show_progress=False,
            )
        )
    summary = json.loads((tmp_path / runner.SUMMARY_FILE).read_text())
    assert summary["complete"] is False and "stopped before every episode finished" in summary["reason"]


def test_an_eval_of_many_episodes_takes_the_child(tmp_path: Path) -> None:
    few = record_writer.writer(tmp_path / "a", tmp_path / "b", record_writer.CHILD_FROM - 1)
    many = record_writer.writer(tmp_path / "c", tmp_path / "d", record_writer.CHILD_FROM)
    few.close()
    many.close()
    assert isinstance(few, LoopWriter) and isinstance(many, ChildWriter)


@pytest.mark.parametrize("full", ["lines", "index"])
@pytest.mark.parametrize("kind", [LoopWriter, ChildWriter])
def test_a_full_disk_is_the_error_of_the_file_it_filled(tmp_path: Path, full: str, kind: type) -> None:
    """The stage's one line (os_errors.stage_main) names the file a full disk refused, from whichever
    writer: the child's error was a RecordWriterError (a traceback), the loop writer's close() one
    with no file in its frames."""
    (tmp_path / full).symlink_to("/dev/full")
    writer = kind(tmp_path / "lines", tmp_path / "index")
    with pytest.raises(OSError) as raised:
        write_all(writer, [{"status": "ok", "reward": 1.0}] * 3)
    assert raised.value.errno == errno.ENOSPC and os_error_line(raised.value) is not None
    assert failed_file(raised.value) == str(tmp_path / full)


class _Stingy(io.RawIOBase):
    """A pipe's write end whose every write(2) takes at most `takes` bytes, as a write cut short by a
    signal or by the eval being stopped (Ctrl-Z, SIGSTOP) and continued takes part of a record."""

    def __init__(self, fd: int, takes: list[int]) -> None:
        self.fd, self.takes, self.calls = fd, takes, 0

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.fd

    def write(self, data: Any) -> int | None:
        most = self.takes[self.calls % len(self.takes)]
        self.calls += 1
        try:
            return os.write(self.fd, bytes(memoryview(data)[:most]))
        except BlockingIOError:
            return None

    def close(self) -> None:
        if not self.closed:
            os.close(self.fd)
        super().close()


def _stingy_pipes(monkeypatch: pytest.MonkeyPatch, takes: list[int]) -> None:
    fdopen = os.fdopen

    def opened(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        return _Stingy(fd, takes) if mode == "wb" else fdopen(fd, mode, *args, **kwargs)

    monkeypatch.setattr(record_writer.os, "fdopen", opened)


def _big(count: int) -> list[dict[str, Any]]:
    """Records of ~100-300 KB: a few fill the pipe, and each write(2) takes part of one."""
    return [
        {"task_id": f"t{n}", "response_ids": list(range(n, n + 30_000 * (1 + n % 3)))} for n in range(count)
    ]


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(takes=st.lists(st.integers(997, 300_000), min_size=1, max_size=4), in_loop=st.booleans())
def test_every_record_arrives_whole_whatever_each_write_of_the_pipe_takes(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, takes: list[int], in_loop: bool
) -> None:
    """A write(2) to a pipe may take part of what it is given; what it did not take is written next
    (it was dropped: the child read the next record's bytes as this one's rest, and the eval failed)."""
    drawn = _big(6)
    expected = LoopWriter((out := tmp_path_factory.mktemp("loop")) / "lines", out / "index")
    write_all(expected, drawn)
    with monkeypatch.context() as patched:
        _stingy_pipes(patched, takes)
        writer = ChildWriter((got := tmp_path_factory.mktemp("child")) / "lines", got / "index")
        if in_loop:

            async def from_the_loop() -> None:
                for number, record in enumerate(drawn):
                    writer.write((f"task-{number}", 0, 0), record, f"job-{number}", 1)
                    await asyncio.sleep(0)
                writer.close()

            asyncio.run(from_the_loop())
        else:
            write_all(writer, drawn)
    assert _files(got) == _files(out)


def test_the_child_yields_the_core_to_the_loop(tmp_path: Path) -> None:
    """The child writes under SCHED_BATCH: woken by a record, it waits for the loop to wait instead of
    taking the core it shares with the loop (one core kept busy) while the episodes' calls come due."""
    writer = ChildWriter(tmp_path / "lines", tmp_path / "index")
    writer.write(("t0", 0, 0), {"task_id": "t0"}, "job", 1)
    assert writer._child is not None
    try:
        assert os.sched_getscheduler(writer._child.pid) == os.SCHED_BATCH
    finally:
        writer.close()


def test_the_loop_never_waits_for_a_stopped_child(tmp_path: Path) -> None:
    """Records written from the event loop while the child is stopped (a full pipe) wait in the eval's
    buffer; `write` returns at once, and `close` writes them all once the child goes on. (A writer that
    waited for the pipe would wait here until the guard continues the child, and fail.)"""
    writer = ChildWriter(tmp_path / "lines", tmp_path / "index")
    drawn = _big(20)  # ~4 MB: four times the pipe
    guard_fired = threading.Event()

    async def write_while_stopped() -> None:
        writer.write(("t0", 0, 0), drawn[0], "job", 1)
        while writer._child is None:  # started by a thread when a loop runs
            await asyncio.sleep(0)
        os.kill(writer._child.pid, signal.SIGSTOP)
        guard = threading.Timer(120.0, _continue, args=(writer._child.pid, guard_fired))
        guard.start()
        try:
            for number, record in enumerate(drawn[1:], start=1):
                writer.write((f"t{number}", 0, 0), record, "job", 1)
                await asyncio.sleep(0)
        finally:
            guard.cancel()
            os.kill(writer._child.pid, signal.SIGCONT)
        writer.close()

    asyncio.run(write_while_stopped())
    assert not guard_fired.is_set()
    lines = (tmp_path / "lines").read_bytes().splitlines(keepends=True)
    assert lines == [jsonl.record_bytes(record) for record in drawn]


def _continue(pid: int, fired: threading.Event) -> None:
    fired.set()
    os.kill(pid, signal.SIGCONT)


def test_the_child_imports_only_what_writing_needs() -> None:
    """The child's start-up is CPU the eval's one free core pays (one core kept busy): neither asyncio
    (~60 ms, the parent's loop) nor the benchmark identity (~17 ms, the parent's settings digest)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    heavy = "asyncio", "t3rl_core.eval.identity"
    script = f"import sys, t3rl_core.eval.record_writer; print(sorted(set({heavy!r}) & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["[]"]


# An eval's process that found t3rl_core through an import hook (as an editable install's does), not on
# its sys.path: the child, started without `site`, must still import the same t3rl_core.
_HOOKED = """
import importlib.machinery, sys
from pathlib import Path
out, root = Path(sys.argv[1]), sys.argv[2]
sys.path[:] = [p for p in sys.path if p and Path(p).resolve() != Path(root).resolve()]

class Hook:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        return importlib.machinery.PathFinder.find_spec(name, [root]) if name == "t3rl_core" else None

sys.meta_path.append(Hook)
from t3rl_core.eval.record_writer import ChildWriter
writer = ChildWriter(out / "lines", out / "index")
writer.write(("t0", 0, 0), {"task_id": "t0"}, "job", 1)
writer.close()
"""


def test_the_child_imports_the_evals_t3rl_core_found_by_an_import_hook(tmp_path: Path) -> None:
    root = str(Path(record_writer.__file__).resolve().parents[2])
    path = [p for p in sys.path if p and Path(p).resolve() != Path(root).resolve()]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    done = subprocess.run(
        [sys.executable, "-c", _HOOKED, str(tmp_path), root],
        env=env, cwd=tmp_path, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "lines").read_text() == '{"task_id": "t0"}\n'
