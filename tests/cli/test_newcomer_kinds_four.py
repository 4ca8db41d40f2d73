"""A newcomer's first hour, round four: what the earlier passes left, found by following README.md and the
tutorials literally in a scratch clone, then working from another directory, on a full disk and with
the words other tools use.

- typed in a subdirectory of the checkout (docs/), `t3rl runs` said "no runs yet" beside the checkout's
  runs/, and `t3rl runs show|diff runs/quickstart/<ts>` and `t3rl run|plan --run-dir runs/…` said the
  run dir does not exist and that `t3rl runs` lists them (which listed none).
- the words other tools use for a command (`t3rl status`, `t3rl resume`, `t3rl compare`, `t3rl runs list`):
  "No such command", with no guess or a wrong one ("Did you mean 'score'?" for compare).
- `t3rl run` on a disk that fills up under a stage: the file named and "free space", but not the line
  that resumes the run it left (its record was whole: `t3rl run --run-dir` went on from the stage); a
  resume into a run dir on a read-only file system was told to choose another paths.runs_dir.
- `t3rl runs` on a terminal of 20 or 40 columns: rich's table folded each cell to a few letters a line,
  and at 20 left the metric column empty.
- `t3rl runs --help` and `t3rl --help` listed `diff`, `show` and `check-template` with the docstring's
  line break kept: a full line, then a line of one word ('then', 'attempts') at any width.
- the first-experiment tutorial's experiment had no description, so `t3rl ls experiment --config-dir
  my_conf` listed it blank beside every shipped one, and nothing said where a description comes from.
- the quickstart's last table (the next experiment's stages) was rich's boxed table in a log or a pipe,
  each stage folded over two or three lines.
- `t3rl runs --json` (a script's way to read the listing): "No such option"; the table was all there was.
- `t3rl runs diff A B | grep KEY`: the keys table was rich's boxed one in a pipe too, a long key folded
  over two or three lines.
- `t3rl runs show` of a run without manifest.json (an older t3rl's, or a copy): its stages, and no word
  that its code, host, hardware and seeds are unknown; of any run, 'updated <time>' for the time its
  last attempt started.
- `t3rl runs show` with no run dir: "Missing argument 'RUN_DIR'" (now the newest run, as `t3rl runs`
  lists it first).
- `t3rl eval` stopped (Ctrl-C) while its split was prepared or its server checked: "stopped: …" alone,
  where one stopped later printed the line that resumes it.
- `t3rl -h`: "No such option: -h"; `t3rl run -h`: "'-h' is not an option … write it as an override without
  dashes". Then `-h --help` or `--help -h` by the hash seed (Click takes them through a set), so
  docs/reference/cli.md regenerated differently from run to run.
- `t3rl eval --help`'s first example evaluated the scripted gold policy on the quickstart with eval.*'s
  default token budget: a long gold call was truncated, overall 0.950 for a policy that is always right.
Each failed before.
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
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch.cli.failures import exit_code_for
from launch.cli.other_words import _IN_GROUP
from launch.output.plain import PlainConsole
from launch.run.single import _show_next
from tests.support.cli_app import invoke

RUN = Path("runs") / "quickstart" / "20260101-000000"


def _run_dir(root: Path) -> Path:
    """A finished run dir with one eval stage under `root` (what `t3rl runs` and `runs show` read)."""
    path = root / RUN
    (path / "stages" / "eval_reference").mkdir(parents=True)
    config = {"name": "quickstart", "stages": {"eval_reference": {}}}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    summary = {"overall": {"accuracy": 1.0, "tasks": 20}}
    (path / "stages" / "eval_reference" / "summary.json").write_text(json.dumps(summary))
    state = {"version": 1, "stages": {"eval_reference": {"status": "succeeded"}}}
    (path / "state.json").write_text(json.dumps(state))
    return path


# ------------------------------------------- typed in a subdirectory of where the runs are


def test_runs_in_a_subdirectory_names_the_runs_dir_above(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: 'no runs yet: runs does not exist (`t3rl run …` makes it)', with a run one directory up."""
    _run_dir(here)
    (here / "docs").mkdir()
    monkeypatch.chdir(here / "docs")
    result = invoke(["runs"])
    assert result.exit_code == 0, result.output
    assert "no runs yet" not in result.output, result.output
    assert f"t3rl runs --runs-dir {here / 'runs'}" in result.output, result.output
    assert f"cd {here}" in result.output, result.output
    # the line it names lists the run
    listed = invoke(["runs", "--runs-dir", str(here / "runs")])
    assert listed.exit_code == 0 and "quickstart/20260101-000000" in listed.output, listed.output


def test_runs_where_no_run_ever_started_still_says_none_yet(here: Path) -> None:
    result = invoke(["runs"])
    assert result.exit_code == 0 and "no runs yet" in result.output, result.output


@pytest.mark.parametrize(
    "argv",
    [["runs", "show", str(RUN)], ["runs", "diff", str(RUN), str(RUN)], ["plan", "--run-dir", str(RUN)]],
    ids=["runs-show", "runs-diff", "plan-run-dir"],
)
def test_a_run_dir_typed_in_a_subdirectory_names_it_from_the_dir_above(
    here: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """Before: '… is not a t3rl run dir: it does not exist (`t3rl runs` lists the run dirs)'."""
    path = _run_dir(here)
    (here / "docs").mkdir()
    monkeypatch.chdir(here / "docs")
    result = invoke(argv)
    assert result.exit_code == 1, result.output
    assert f"did you mean {path}" in result.output, result.output
    assert f"cd {here} first" in result.output, result.output


# ------------------------------------------- the words other tools use for a command


@pytest.mark.parametrize(
    ("typed", "line"),
    [
        (["status"], "`t3rl runs`"),
        (["resume"], "`t3rl run --run-dir RUN_DIR`"),
        (["compare", "a", "b"], "`t3rl runs diff A B`"),
        (["runs", "list"], "`t3rl runs`"),
        (["runs", "compare"], "`t3rl runs diff A B`"),
        (["Train", "+experiment=quickstart"], "`t3rl run +experiment=NAME`"),
    ],
)
def test_a_command_other_tools_have_gets_the_line_that_does_it(
    here: Path, typed: list[str], line: str
) -> None:
    result = invoke(typed)
    assert result.exit_code == 2, result.output
    assert line in " ".join(result.output.split()), result.output
    assert "score" not in result.output, result.output


LINES = sorted({line for words in _IN_GROUP.values() for line in words.values() if "`t3rl " in line})


@pytest.mark.parametrize("line", LINES)
def test_every_line_offered_for_another_tools_word_is_a_t3rl_command(line: str) -> None:
    """The command each answer names exists: its words up to the first argument get their --help."""
    words = shlex.split(line.split("`")[1])[1:]
    command = [w for w in words[:2] if w.isalpha() and w.islower()]
    result = invoke([*command, "--help"])
    assert result.exit_code == 0, (line, result.output)
    for option in (w for w in words if w.startswith("--")):
        assert option in result.output, (line, option)


def test_a_real_command_is_still_itself(here: Path) -> None:
    result = invoke(["runs"])
    assert result.exit_code == 0 and "has no command" not in result.output, result.output


# ------------------------------------------- a full disk under a run


def test_a_run_that_could_not_write_its_record_names_the_line_that_resumes_it(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 'error: …/state.json: No space left on device (the disk is full: free space or choose
    another directory)', and no word of the run dir holding the stages that had finished."""
    run = here / "runs" / "quick start" / "20260101-000000"
    (run / "stages" / "eval_reference").mkdir(parents=True)
    (run / "config.yaml").write_text("name: quickstart\n")
    (run / "manifest.json").write_text("{}")
    log = run / "stages" / "eval_reference" / "log.txt"
    full = OSError(errno.ENOSPC, "No space left on device", str(log))
    assert exit_code_for(full, "run") == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "the disk is full" in said, said
    assert f"then `t3rl run --run-dir {shlex.quote(str(run))}` resumes the run" in said, said


def test_a_file_outside_any_run_gets_no_resume_line(here: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code_for(OSError(errno.ENOSPC, "No space left on device", str(here / "x")), "run") == 1
    assert "--run-dir" not in capsys.readouterr().err


# ------------------------------------------- a terminal too narrow for a table's columns


@pytest.mark.parametrize("columns", ["20", "40"])
def test_runs_on_a_narrow_terminal_keeps_every_value(here: Path, columns: str) -> None:
    """Before: at 20 columns rich's table folded each cell to a letter a line and printed nothing of the
    metric column; at 40, each value was cut into pieces of five between borders."""
    _run_dir(here)
    result = invoke(["runs"], COLUMNS=columns, TTY_COMPATIBLE="1")
    assert result.exit_code == 0, result.output
    lines = [line.rstrip() for line in _unstyled(result.output).splitlines()]
    assert "status: ✓ succeeded" in lines, result.output
    assert any(line.startswith("overall.accuracy:") for line in lines), result.output
    # each value whole, at most wrapped where the terminal ends
    joined = "".join("".join(lines).split())  # the terminal's line ends (and the spaces there) dropped
    assert str(RUN.relative_to("runs")) in joined and "eval_reference1.000(n=20)" in joined, result.output


def test_runs_on_a_wide_terminal_is_still_a_table(here: Path) -> None:
    _run_dir(here)
    result = invoke(["runs"], COLUMNS="120", TTY_COMPATIBLE="1")
    shown = _unstyled(result.output)
    assert "┃ run" in shown and "status:" not in shown, shown


def _unstyled(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# ------------------------------------------- a group's list of its commands


@pytest.mark.parametrize(
    ("group", "command", "words"),
    [([], "check-template", "(and reasoning) back"), (["runs"], "diff", "then their eval results")],
)
def test_a_groups_list_of_commands_keeps_each_summary_one_paragraph(
    group: list[str], command: str, words: str
) -> None:
    """Before: `t3rl runs --help` listed diff as 'How two runs' configs differ, …; then' and 'their eval
    results …' on the next line (the docstring's line break kept), whatever the terminal's width."""
    result = invoke([*group, "--help"], COLUMNS="250")
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.startswith(f"│ {command} "))
    assert words in line, result.output


# ------------------------------------------- the first own experiment, as the tutorial writes it

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "first-experiment.md"


def test_the_tutorials_own_experiment_is_listed_with_a_description(here: Path) -> None:
    """Before: `t3rl ls experiment --config-dir my_conf` listed my_stage1 with an empty description (the
    file had no comment under its header), beside every shipped experiment's."""
    text = TUTORIAL.read_text()
    found = re.search(r"cat > (my_conf/experiment/(\w+)\.yaml) <<'EOF'\n(.*?)\nEOF\n", text, re.S)
    assert found is not None, "the tutorial writes its experiment with a heredoc"
    (here / found[1]).parent.mkdir(parents=True)
    (here / found[1]).write_text(found[3] + "\n")
    result = invoke(["ls", "experiment", "--config-dir", "my_conf"])
    assert result.exit_code == 0, result.output
    line = next(line for line in result.output.splitlines() if line.split()[:1] == [found[2]])
    assert line.split(found[2], 1)[1].strip(), result.output


# ------------------------------------------- the next experiment's table in a log


def test_the_next_experiments_table_in_a_log_keeps_each_stage_on_one_line(here: Path) -> None:
    """Before: the quickstart's last table (bfcl_env_tuning's stages) was rich's boxed table in a pipe
    too, each stage's summary folded over two or three lines: `grep 'stage1 '` found half a row."""
    out = io.StringIO()
    _show_next(["+experiment=bfcl_env_tuning"], [], PlainConsole(file=out))
    lines = out.getvalue().splitlines()
    assert "│" not in out.getvalue(), out.getvalue()
    row = [line for line in lines if line.split()[:1] == ["stage1"]]
    assert len(row) == 1 and "train.py, 8 GPUs" in row[0] and row[0].split()[-1] == "8", out.getvalue()
    assert lines[-1] == "next: t3rl run +experiment=bfcl_env_tuning", out.getvalue()


# ------------------------------------------- machine-readable: t3rl runs --json


def test_runs_json_is_one_json_list_of_what_the_table_shows(here: Path) -> None:
    """Before: `No such option: --json`; a script had to parse the table."""
    path = _run_dir(here)
    result = invoke(["runs", "--json"])
    assert result.exit_code == 0, result.output
    (run,) = json.loads(result.stdout)
    assert run["run"] == str(RUN.relative_to("runs")) and run["path"] == str(path.resolve())
    assert run["status"] == "succeeded" and run["stages"] == {"eval_reference": "succeeded"}
    assert run["evals"] == [
        {
            "stage": "eval_reference",
            "metric": "overall.accuracy",
            "value": 1.0,
            "tasks": 20,
            "identity": None,
            "other_benchmark": [],
        }
    ]
    # filters and the metric apply as to the table
    assert json.loads(invoke(["runs", "--json", "--status", "failed"]).stdout) == []
    picked = json.loads(invoke(["runs", "--json", "--metric", "overall.tasks"]).stdout)
    assert picked[0]["evals"][0]["metric"] == "overall.tasks" and picked[0]["evals"][0]["value"] == 20


def test_runs_json_with_no_runs_dir_is_an_empty_list_and_the_reason_on_stderr(here: Path) -> None:
    result = invoke(["runs", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout) == [], result.output
    assert "no runs yet" in result.stderr, result.stderr


# ------------------------------------------- t3rl eval --help's gold-policy example

QUICKSTART = Path(__file__).resolve().parents[2] / "conf" / "experiment" / "quickstart.yaml"


def test_the_eval_helps_reference_example_gives_gold_calls_the_quickstarts_token_budget(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: its first example, `t3rl eval +experiment=quickstart --engine reference
    --limit-per-category 5`, evaluated the scripted gold policy with eval.*'s default token budget, so a
    long_context gold call (the tiny tokenizer is verbose) was truncated: overall 0.950, 19/1 truncated,
    where the quickstart's eval_reference (max_new_tokens 32768) scores 1.000."""
    budget = yaml.safe_load(QUICKSTART.read_text())["stages"]["eval_reference"]["eval"]["max_new_tokens"]
    lines = [" ".join(line.split()) for line in invoke(["eval", "--help"], COLUMNS="200").output.splitlines()]
    examples = [
        line.strip("│ ") for line in lines if line.strip("│ ").startswith("t3rl eval") and "reference" in line
    ]
    assert examples, lines
    handed: list[Any] = []

    def evaluate(runtime: Any, config: Any, data: Path, out: Path, **kwargs: Any) -> dict[str, Any]:
        handed.append(config)
        (out / "summary.json").write_text('{"complete": true}')
        return {"complete": True}

    monkeypatch.setattr("t3rl_core.eval.evaluate.evaluate", evaluate)
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", lambda runtime, data_dir, split: data_dir)
    for example in examples:
        result = invoke([*shlex.split(example)[1:], "--out", str(here / "out" / str(len(handed)))])
        assert result.exit_code == 0, (example, result.output)
        assert handed[-1].engine.name == "reference" and handed[-1].max_new_tokens == budget, example


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_resume_into_a_run_dir_it_cannot_write_says_to_make_that_dir_writable(
    here: Path, capsys: pytest.CaptureFixture[str], code: int
) -> None:
    """Before: 'error: RUN/.lock: Read-only file system (a read-only file system: choose a writable
    directory (paths.runs_dir=…))': another runs dir starts a new run, not this one's resume."""
    run = here / "runs" / "quickstart" / "20260101-000000"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text("name: quickstart\n")
    (run / "manifest.json").write_text("{}")
    assert exit_code_for(OSError(code, os.strerror(code), str(run / ".lock")), "run") == 1
    said = " ".join(capsys.readouterr().err.split())
    assert "paths.runs_dir" not in said, said
    assert f"the run dir {run} cannot be written here: make it writable" in said, said


# ------------------------------------------- -h, as most tools take it


@pytest.mark.parametrize(
    "argv", [["-h"], ["run", "-h"], ["validate", "+experiment=quickstart", "-h"], ["runs", "show", "-h"]]
)
def test_dash_h_is_help(here: Path, argv: list[str]) -> None:
    """Before: `t3rl -h` 'No such option: -h'; `t3rl run -h` 'error h: '-h' is not an option of this
    command … fix: write it as an override without dashes'."""
    result = invoke(argv)
    assert result.exit_code == 0, result.output
    assert "Usage: t3rl" in result.output and "No such option" not in result.output, result.output
    assert not any(line.startswith("error") for line in result.output.splitlines()), result.output


# ------------------------------------------- a run of an older t3rl


def test_runs_show_of_a_run_without_a_manifest_says_what_is_unknown(here: Path) -> None:
    """Before: the run's path and status, then its stages: nothing said that the code, host, hardware
    and seeds every other run shows are unknown for it (no manifest.json: an older t3rl's, or a copy)."""
    path = _run_dir(here)
    result = invoke(["runs", "show", str(path)])
    assert result.exit_code == 0, result.output
    assert "manifest   none: no manifest.json here" in result.output, result.output
    (path / "manifest.json").write_text(json.dumps({"run_id": "quickstart-20260101-000000"}))
    assert "manifest   none" not in invoke(["runs", "show", str(path)]).output


# ------------------------------------------- t3rl runs diff in a pipe


def test_runs_diff_in_a_pipe_keeps_each_key_on_one_line(here: Path) -> None:
    """Before: rich's boxed table at 80 columns folded `stages.train.curriculum.optimizer.lr` over three
    lines, so `t3rl runs diff A B | grep optimizer.lr` found none of its values."""
    runs = []
    for name, lr in (("a", 1e-6), ("b", 5e-7)):
        path = here / "runs" / name / "20260101-000000"
        path.mkdir(parents=True)
        config = {"name": name, "stages": {"train": {"curriculum": {"optimizer": {"lr": lr}}}}}
        (path / "config.yaml").write_text(yaml.safe_dump(config))
        runs.append(str(path))
    result = invoke(["runs", "diff", *runs], COLUMNS="80")
    assert result.exit_code == 0, result.output
    found = [line.split() for line in result.output.splitlines() if "optimizer.lr" in line]
    assert found == [["stages.train.curriculum.optimizer.lr", "1e-06", "5e-07"]], result.output


# ------------------------------------------- t3rl runs show with no run dir


def test_runs_show_without_a_run_dir_shows_the_newest_run(here: Path) -> None:
    """Before: 'Missing argument 'RUN_DIR'.', where `t3rl runs` lists the newest run first."""
    path = _run_dir(here)
    result = invoke(["runs", "show"])
    assert result.exit_code == 0, result.output
    assert f"the newest run: {RUN}" in result.stderr, result.stderr
    assert result.stdout.startswith(f"{path.resolve()}: ✓ succeeded"), result.stdout


def test_runs_show_without_a_run_dir_where_there_is_none_says_why(here: Path) -> None:
    result = invoke(["runs", "show"])
    assert result.exit_code == 2, result.output
    assert "no RUN_DIR given, and no runs yet" in " ".join(result.output.replace("│", "").split())


def test_the_help_options_are_listed_in_one_order_whatever_the_hash_seed() -> None:
    """Click takes the help option names through a set: `-h --help` or `--help -h` by the process's hash
    seed, and docs/reference/cli.md, regenerated, changed from run to run (its test failed at random)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "gen_cli_reference.py"
    made = []
    for seed in ("1", "2"):  # the two orders of Click's set(["-h", "--help"])
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, str(script), "--out", "/dev/stdout"], env=env, capture_output=True, text=True
        )
        made.append(done.stdout)
    assert len(set(made)) == 1 and "| `-h`, `--help` |" in made[0]


def test_runs_show_says_which_attempt_its_time_is_the_start_of(here: Path) -> None:
    """Before: 'updated  <time>', the time the last attempt started (when manifest.json is written): a
    run that ran for an hour after it showed that start as its last update."""
    path = _run_dir(here)
    manifest = {
        "run_id": "q",
        "attempt": 2,
        "created_at": "2026-01-01T00:00:00",
        "updated_at": "2026-01-02T09:00:00",
    }
    (path / "manifest.json").write_text(json.dumps(manifest))
    lines = [line.split() for line in invoke(["runs", "show", str(path)]).output.splitlines()]
    assert ["attempt", "2,", "started", "2026-01-02T09:00:00"] in lines, lines
    assert not any(line[:1] == ["updated"] for line in lines), lines


def test_an_eval_stopped_while_its_data_is_prepared_says_how_to_go_on(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: Ctrl-C before the first episode (preparing the split, checking the server: minutes on a
    cold cache) printed only 'stopped: interrupted …', where one later printed the --resume line."""

    def interrupted(*args: Any) -> Path:
        raise KeyboardInterrupt

    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    monkeypatch.setattr("launch.cli.eval_setup.prepared", interrupted)
    out = here / "ev"
    result = invoke(["eval", "+experiment=quickstart", "--stage", "eval_reference", "--out", str(out)])
    assert result.exit_code == 130, result.output
    said = " ".join(result.stderr.split())
    # the command itself since tests/cli/test_newcomer_kinds_five.py's round
    assert (
        f"resume with: t3rl eval +experiment=quickstart --stage eval_reference --out {out} --resume" in said
    )
