"""Kinds a newcomer meets in the first hour, round five:

- a full disk under an eval: `python -m t3rl_core.eval` (the eval stage of `t3rl run`) printed a Python
  traceback ending `OSError: [Errno 28] No space left on device` into the stage's log, and `t3rl eval`
  said "t3rl failed unexpectedly … This is a bug": a failed write() or close() names no file. The file
  is taken from the traceback (the file object the failing frame held), for every writer, and every
  stage command (eval, data, the tiny model) ends with `error: <file>: <reason> (<fix>)`, exit 1.
- `t3rl eval` (or an eval stage) with its output in a pipe printed nothing until its first episode ended.
  It prints `eval progress: 0/N episodes, starting` at once; the lines' format is declared once
  (t3rl_core.progress_format) for the writers and the launcher's parser, and every line the docs and
  tests quote must parse (a property over every line the writers can print).
- a home directory nothing can be written into (a read-only home on a cluster node, a HOME of another
  user): matplotlib printed two warnings in every eval stage. The libraries' per-user dirs
  (XDG_CACHE_HOME, XDG_CONFIG_HOME, unless the user set them) go to a private dir under the temp dir,
  in the launcher and in every stage command.
- a stopped `t3rl eval` said 'resume with the same command plus --out DIR --resume': typed with --out
  (or --resume), that gave a command with two of each. It prints the command itself (the line as
  typed, its --out and --resume replaced), unless a credential typed in it would have to be masked.
"""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.cli.failures import exit_code_for
from launch.run.stage_progress import StageProgress
from t3rl_core.os_errors import failed_file, os_error_line, stage_main
from t3rl_core.progress_format import DATA_LABEL, DATA_LINE, EVAL_LABEL, EVAL_LINE, counted_line, eval_line
from tests.support.cli_app import invoke
from tests.support.eval_runs import bfcl_runtime
from tests.support.tiny_stack import bfcl_rows, write_jsonl

ROOT = Path(__file__).resolve().parents[2]

# ------------------------------------------- a write that fails names its file


def _text(path: Path) -> None:
    with open(path, "w") as handle:
        handle.write("x" * 100_000)


def _append_flushed(path: Path) -> None:
    handle = open(path, "a")  # noqa: SIM115
    handle.write("line\n")
    handle.flush()


def _binary(path: Path) -> None:
    with path.open("wb") as handle:
        handle.write(b"x" * 100_000)


def _write_text(path: Path) -> None:
    path.write_text("x" * 100_000)


def _json_dump(path: Path) -> None:
    with path.open("w") as handle:
        json.dump({"x": "y" * 100_000}, handle)


def _fdopen(path: Path) -> None:
    with os.fdopen(os.open(path, os.O_WRONLY), "w") as handle:
        handle.write("x" * 100_000)


def _print(path: Path) -> None:
    with path.open("w") as handle:
        print("x" * 100, file=handle, flush=True)


WRITERS: tuple[Callable[[Path], None], ...] = (
    _text, _append_flushed, _binary, _write_text, _json_dump, _fdopen, _print,
)  # fmt: skip


def _full_file(tmp_path: Path) -> Path:
    """A file every write to fails with ENOSPC, as on a full disk."""
    path = tmp_path / "records dir é" / "trajectories.jsonl"
    path.parent.mkdir()
    path.symlink_to("/dev/full")
    return path


@pytest.mark.parametrize("writer", WRITERS, ids=lambda w: w.__name__)
def test_every_way_of_writing_a_file_names_it_when_the_disk_is_full(
    tmp_path: Path, writer: Callable[[Path], None]
) -> None:
    path = _full_file(tmp_path)
    with pytest.raises(OSError) as caught:
        writer(path)
    assert caught.value.errno == errno.ENOSPC
    assert failed_file(caught.value) in (str(path), "/dev/full"), failed_file(caught.value)
    line = os_error_line(caught.value)
    assert line is not None and "the disk is full" in line, line


class _Failing(io.RawIOBase):
    """A file whose writes fail with one errno (a quota, an I/O error, a file too large)."""

    def __init__(self, name: str, code: int) -> None:
        self.name, self.code = name, code

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        raise OSError(self.code, os.strerror(self.code))


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG, errno.EROFS])
def test_every_kind_of_failed_write_ends_with_one_line_naming_the_file_and_exit_1(
    tmp_path: Path, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a traceback (the stage command) or 't3rl failed unexpectedly … This is a bug' (t3rl)."""
    name = str(tmp_path / "out" / "summary.json")

    def main() -> int:
        handle = io.TextIOWrapper(io.BufferedWriter(_Failing(name, code)))
        handle.write("{}")
        handle.flush()
        return 0

    with pytest.raises(SystemExit) as ended:
        stage_main(main)
    assert ended.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {name}: {os.strerror(code)} ("), err
    assert "Traceback" not in err
    # and the same line from t3rl itself (t3rl eval runs the eval in its own process)
    try:
        main()
    except OSError as error:
        assert exit_code_for(error, "eval") == 1
    said = " ".join(capsys.readouterr().err.split())
    assert f"error: {name}: {os.strerror(code)}" in said and "unexpectedly" not in said, said


def test_an_error_of_no_file_is_left_as_it_is(tmp_path: Path) -> None:
    assert os_error_line(OSError(errno.ECONNREFUSED, "Connection refused")) is None
    with (tmp_path / "log.txt").open("w") as log:  # a file the failing frame holds is not the cause
        try:
            log.write("connecting\n")
            raise OSError(errno.ECONNREFUSED, "Connection refused")
        except OSError as error:
            assert failed_file(error) is None and os_error_line(error) is None


# ------------------------------------------- the eval stage's command on a full disk


def _eval_args(tmp_path: Path, out: Path) -> list[str]:
    """The eval stage's own arguments (reference engine, two BFCL tasks) into `out`."""
    runtime = tmp_path / "runtime.yaml"
    runtime.write_text(yaml.safe_dump({"t3rl": bfcl_runtime().model_dump(mode="json")}))
    eval_config = tmp_path / "eval.yaml"
    eval_config.write_text(yaml.safe_dump({"engine": {"name": "reference"}, "concurrency": 1}))
    data = write_jsonl(bfcl_rows(1)[:2], tmp_path / "bfcl_test.jsonl")
    args = ["--runtime-config", str(runtime), "--eval-config", str(eval_config), "--data", str(data)]
    return [*args, "--out", str(out), "--no-progress"]


def _eval_stage(tmp_path: Path, out: Path, **environ: str) -> subprocess.CompletedProcess[str]:
    """The eval stage's own command, `python -m t3rl_core.eval` (_eval_args), in a process of its own."""
    command = [sys.executable, "-m", "t3rl_core.eval", *_eval_args(tmp_path, out)]
    env = {**os.environ, "PYTHONPATH": str(ROOT), **environ}
    return subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, env=env)


def _full_disk_line(path: Path) -> str:
    return (
        f"error: {path}: No space left on device (the disk is full: free space or choose another directory)"
    )


def test_the_eval_stage_on_a_full_disk_ends_with_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Before: 'Traceback (most recent call last): … OSError: [Errno 28] No space left on device' (exit 1).
    The stage's own process: its entry point (stage_main) prints the line and sets the exit code."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "trajectories.jsonl").symlink_to("/dev/full")
    done = _eval_stage(tmp_path, out)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert done.stderr.strip().splitlines()[-1] == _full_disk_line(out / "trajectories.jsonl"), done.stderr


def test_a_full_disk_under_the_trajectory_index_is_named_as_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index's own writer, in this process: what reaches stage_main (the case above runs it in the
    stage's process, ~2.5 s of CPU a start) is an OSError from which it reads the index's line."""
    from t3rl_core.eval.__main__ import main  # lazy: the eval stage's modules, for this case only

    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "trajectories.index.jsonl").symlink_to("/dev/full")
    with pytest.raises(OSError) as raised:
        main(_eval_args(tmp_path, out))
    assert os_error_line(raised.value) == _full_disk_line(out / "trajectories.index.jsonl")


# ------------------------------------------- the eval's first line comes at once, in one declared format


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(1, 10**6),
    data=st.data(),
    accuracy=st.none() | st.floats(0, 1),
    eta=st.none() | st.floats(0, 10**7, allow_nan=False),
)
def test_every_eval_line_the_runner_can_print_is_read_back_by_the_launcher(
    total: int, data: st.DataObject, accuracy: float | None, eta: float | None
) -> None:
    done = data.draw(st.integers(0, total))
    progress = StageProgress()
    assert progress.feed(eval_line(done, total, accuracy, eta) + "\n") == "eval"
    assert (progress.done, progress.total) == (done, total)
    assert progress.accuracy == (None if accuracy is None else round(accuracy, 3))


@settings(max_examples=200, deadline=None)
@given(
    total=st.integers(1, 10**6),
    what=st.text(st.characters(categories=("L", "Nd"), include_characters=" "), min_size=1).filter(
        lambda w: w.strip() == w
    ),
    eta=st.none() | st.floats(0, 10**7, allow_nan=False),
)
def test_every_data_line_is_read_back_by_the_launcher(total: int, what: str, eta: float | None) -> None:
    progress = StageProgress()
    assert progress.feed(counted_line(DATA_LABEL, total // 2, total, what, eta) + "\n") == "data"
    assert (progress.done, progress.total, progress.what) == (total // 2, total, what)


def _quoted_progress_lines() -> list[tuple[str, str]]:
    """Every whole progress line the docs and tests quote (`eval progress: 12/40 …`), with its file."""
    quoted = re.compile(rf"({EVAL_LABEL}|{DATA_LABEL}): \d+/\d+ [^`\"'\\\n]*")
    found = []
    for folder, suffix in (("docs", "*.md"), ("tests", "*.py"), ("t3rl_core", "*.py"), ("launch", "*.py")):
        for path in sorted((ROOT / folder).rglob(suffix)):
            text = path.read_text()
            if suffix == "*.md":  # a line of the docs may wrap inside a quoted progress line
                text = re.sub(r"\n\s*", " ", text)
            found += [(str(path.relative_to(ROOT)), m.group(0).rstrip()) for m in quoted.finditer(text)]
    # elided (…) or a prefix a test compares a line's start with (it ends with a space)
    return [(where, line) for where, line in found if not re.search(r"…|\.\.\.|(accuracy|ETA)$", line)]


def test_every_progress_line_the_docs_and_tests_quote_is_one_the_launcher_reads() -> None:
    quoted = _quoted_progress_lines()
    assert len(quoted) >= 10, quoted
    for where, line in quoted:
        pattern = EVAL_LINE if line.startswith(EVAL_LABEL) else DATA_LINE
        assert pattern.match(line), (where, line)


def test_an_eval_without_a_terminal_says_it_started_before_its_first_episode_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: nothing on stdout until the first episode ended (tens of seconds on a loaded machine)."""
    from t3rl_core.eval import runner
    from t3rl_core.eval.evaluate import evaluate
    from tests.support.eval_runs import reference_config

    data = write_jsonl(bfcl_rows(1)[:3], tmp_path / "bfcl_test.jsonl")
    seen_at_first_episode: list[str] = []
    original = runner._run_episode

    async def first(*args: object) -> dict[str, object]:
        if not seen_at_first_episode:
            seen_at_first_episode.append(capsys.readouterr().out)
        return await original(*args)

    monkeypatch.setattr(runner, "_run_episode", first)
    evaluate(bfcl_runtime(), reference_config(1), data, tmp_path / "out", progress=False)
    printed = seen_at_first_episode[0].splitlines()
    assert printed == ["eval progress: 0/3 episodes, starting"], printed
    assert StageProgress().feed(printed[0]) == "eval"
    # a resume starts from what it kept, with its accuracy
    (tmp_path / "out" / "summary.json").unlink()
    capsys.readouterr()
    evaluate(bfcl_runtime(), reference_config(1), data, tmp_path / "out", progress=False, resume=True)
    assert capsys.readouterr().out.splitlines()[0].startswith("eval progress: 3/3 episodes, accuracy "), (
        printed
    )


# ------------------------------------------- a home directory nothing can be written into


def _unwritable_home(tmp_path: Path) -> dict[str, str]:
    """A HOME below a regular file: nothing can be made there, whoever runs the test (root included)."""
    (tmp_path / "not a dir").write_text("")
    environ = {"HOME": str(tmp_path / "not a dir" / "home"), "XDG_CACHE_HOME": "", "XDG_CONFIG_HOME": ""}
    return environ | {"MPLCONFIGDIR": "", "TMPDIR": str(tmp_path)}


def test_an_eval_stage_under_an_unwritable_home_prints_no_librarys_warning(tmp_path: Path) -> None:
    """Before: 'mkdir -p failed for path …/.config/matplotlib … Matplotlib created a temporary cache
    directory … it is highly recommended to set the MPLCONFIGDIR environment variable' in every eval."""
    environ = _unwritable_home(tmp_path)
    done = _eval_stage(tmp_path, tmp_path / "out", **environ)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "report.md").exists()
    for warning in ("mkdir -p failed", "Matplotlib", "highly recommended", "Read-only", "Not a directory"):
        assert warning not in done.stderr + done.stdout, done.stderr


def test_the_launcher_moves_the_libraries_dirs_under_an_unwritable_home(tmp_path: Path) -> None:
    """t3rl itself (a sweep's plot, t3rl eval's report, t3rl score) and every stage it starts inherit it."""
    code = (
        "from launch.cli.failures import mend_surroundings as m; import os; m(); "
        "print(os.environ['XDG_CONFIG_HOME'], os.environ['XDG_CACHE_HOME'])"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), **_unwritable_home(tmp_path)}
    del env["XDG_CACHE_HOME"], env["XDG_CONFIG_HOME"]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    config, cache = done.stdout.split()
    assert Path(config).is_dir() and Path(cache).is_dir() and str(tmp_path) in config, done
    # a user's own setting is theirs
    env["XDG_CONFIG_HOME"] = str(tmp_path / "mine")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.stdout.split()[0] == str(tmp_path / "mine"), done


# ------------------------------------------- a stopped eval's resume line is a command to paste


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "+experiment=quickstart", "--stage", "eval_reference"],
        ["eval", "+experiment=quickstart", "--out", "OUT", "--stage", "eval_reference"],
        ["eval", "--out=OUT", "+experiment=quickstart", "--resume", "--stage", "eval_reference"],
    ],
    ids=["no --out", "--out DIR", "--out=DIR and --resume"],
)
def test_an_eval_stopped_prints_the_command_that_resumes_it(
    here: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """Before: 'resume with the same command plus --out DIR --resume': with --out typed, that command
    had two (and with --resume, two of those); it is the command itself now, to paste."""

    def interrupted(*args: object) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", interrupted)
    out = here / "my evals é" / "first"
    typed = [str(out) if word == "OUT" else word.replace("OUT", str(out)) for word in argv]
    result = invoke(typed)
    assert result.exit_code == 130, result.output
    line = next(x for x in result.stderr.splitlines() if "resume with: " in x).split("resume with: ", 1)[1]
    again = shlex.split(line)
    if "OUT" not in " ".join(argv):  # no --out typed: the dir the eval chose
        out = Path(again[-2])
        assert out.is_dir() and (out / "manifest.json").exists(), again
    assert again[0] == "t3rl" and again[-3:] == ["--out", str(out), "--resume"], again
    assert again.count("--out") == 1 and again.count("--resume") == 1, again
    kept = [w for w in typed if w not in ("--resume", "--out", str(out)) and not w.startswith("--out=")]
    assert again[1:-3] == kept, again


def test_a_resume_line_that_would_show_a_credential_stays_generic(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupted(*args: object) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", interrupted)
    out = here / "ev"
    typed = ["eval", "+experiment=quickstart", "--stage", "eval_reference", "--out", str(out)]
    result = invoke([*typed, "--url", "http://user:hunter2pass@localhost:1"])
    assert "hunter2pass" not in result.output, result.output


# ------------------------------------------- a stopped eval's record says stopped, not failed


@pytest.mark.parametrize(
    "stop", [KeyboardInterrupt, lambda: BrokenPipeError(32, "Broken pipe")], ids=["ctrl-c", "reader-gone"]
)
def test_an_eval_stopped_between_episodes_is_listed_as_stopped(
    here: Path, monkeypatch: pytest.MonkeyPatch, stop: Callable[[], BaseException]
) -> None:
    """Before: `t3rl eval … | head -1` (or Ctrl-C once episodes ran) wrote a summary 'stopped before every
    episode finished (interrupted or crashed)' that `t3rl runs` listed as ✗ failed."""
    from launch.cli.runs import load_run
    from t3rl_core.eval import runner

    played: list[object] = []
    original = runner._run_episode

    async def stopping(*args: object) -> dict[str, object]:
        played.append(args)
        if len(played) == 3:
            raise stop()
        return await original(*args)

    monkeypatch.setattr(runner, "_run_episode", stopping)
    out = here / "ev"
    # The split as --data (the tasks the eval would select from its prepared split): preparing all
    # 800 rows and six files to play three episodes was most of the test's CPU.
    data = write_jsonl(bfcl_rows(2), here / "bfcl_test.jsonl")
    argv = ["eval", "+experiment=quickstart", "--stage", "eval_reference", "--out", str(out)]
    argv += ["--data", str(data)]
    from t3rl_core.chat.tiny import shared_tokenizer_dir

    tokenizer = f"model.chat.tokenizer={shared_tokenizer_dir('qwen3')}"
    result = invoke([*argv, "eval.concurrency=1", "eval.limit_per_category=2", tokenizer])
    assert result.exit_code in (130, 141), result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["complete"] is False and summary["stopped"] is True, summary
    assert load_run(out).status == "stopped"
