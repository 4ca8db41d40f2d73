"""Kinds of input a newcomer's shell hands `t3rl` that ended in a Python traceback, a wrong exit code or
no message at all (docs/reference/cli-behaviour.md, "When a command cannot go on"). One test per kind;
each drives the app in process (CliRunner) unless a closed stream needs a real process.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from launch import cli
from tests.support.cli_app import invoke

NOT_UTF8 = b"\xff\xfe\x00garbage \xc3\x28 not text\n"


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# ---------------------------------------------------------------- a path t3rl must write is unusable


@pytest.mark.parametrize(
    ("argv", "blocked"),
    [
        (["run", "+experiment=quickstart"], "runs"),
        (["plan", "+experiment=quickstart"], "plans"),
        (["run", "+experiment=quickstart", "paths.runs_dir=a/b"], "a"),
    ],
    ids=["runs-dir-is-a-file", "plans-dir-is-a-file", "runs-dir-under-a-file"],
)
def test_a_file_in_the_way_of_a_dir_is_named(here: Path, argv: list[str], blocked: str) -> None:
    """Refused by the config's checks (2) or when the dir is made (1): named either way, nothing written."""
    (here / blocked).write_text("a file where t3rl makes a directory\n")
    before = _files(here)
    result = invoke(argv)
    assert result.exit_code in (1, 2), result.output
    assert f"{blocked} is a file" in result.output or "Not a directory" in result.output, result.output
    assert _files(here) == before


@pytest.mark.parametrize(
    ("error", "says"),
    [
        (PermissionError(13, "Permission denied", "/data/runs"), "no permission there"),
        (OSError(30, "Read-only file system", "/data/runs"), "read-only file system"),
        (OSError(28, "No space left on device", "/data/runs"), "disk is full"),
    ],
    ids=["permission", "read-only", "full"],
)
def test_an_os_error_on_a_path_is_one_line_exit_1(
    here: Path, monkeypatch: pytest.MonkeyPatch, error: OSError, says: str
) -> None:
    def failing(*args: Any) -> int:
        raise error

    monkeypatch.setattr("launch.cli.inspect.ls_command", failing)
    result = invoke(["ls"])
    assert result.exit_code == 1 and "error: /data/runs" in result.output and says in result.output


def test_an_existing_file_where_score_writes_is_named(here: Path) -> None:
    (here / "r.jsonl").write_text('{"id": "multi_turn_base_1", "decoded": []}\n')
    (here / "r.scored").write_text("in the way\n")
    result = invoke(["score", "bfcl", "r.jsonl", "--no-progress"])
    # Probed before any scoring as a given --out is (launch/cli/out_option.py): exit 2, the dir named.
    text = " ".join(result.output.split())
    assert result.exit_code == 2 and "r.scored is a file, not a directory" in text, result.output


# ---------------------------------------------------------------- SIGTERM stops any command as Ctrl-C


def _reached_the_test(signum: int, frame: Any) -> None:  # instead of ending the test process
    raise AssertionError("SIGTERM reached the test process's handler")


@pytest.fixture
def sigterm_guard() -> Any:
    """The test process's SIGTERM handler while a test signals itself, put back afterwards."""
    previous = signal.signal(signal.SIGTERM, _reached_the_test)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_sigterm_stops_any_command_with_130(
    here: Path, monkeypatch: pytest.MonkeyPatch, sigterm_guard: None
) -> None:
    """Only `run` turned SIGTERM into a stop; `eval`, `score`, `data`, … died with 143 and no word."""

    def terminated(*args: Any) -> int:
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr("launch.cli.inspect.ls_command", terminated)
    result = invoke(["ls"])
    assert result.exit_code == 130 and "stopped" in result.output, result.output


def test_sigterms_repeated_during_a_stop_are_let_go(
    here: Path, monkeypatch: pytest.MonkeyPatch, sigterm_guard: None
) -> None:
    """A scheduler repeats SIGTERM: the second broke the stop's cleanup, and one after the command had
    put the default action back ended `t3rl run` with 143 (-15) instead of 130."""
    cleaned = []

    def terminated(*args: Any) -> int:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)  # again, during the stop's cleanup
            cleaned.append(True)
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr("launch.cli.inspect.ls_command", terminated)
    result = invoke(["ls"])
    assert result.exit_code == 130 and cleaned == [True], result.output
    os.kill(os.getpid(), signal.SIGTERM)  # after the command: still the stop's, not the default action


def test_a_command_that_ends_leaves_sigterm_as_it_found_it(here: Path, sigterm_guard: None) -> None:
    assert invoke(["ls", "model"]).exit_code == 0
    assert signal.getsignal(signal.SIGTERM) is _reached_the_test


# ---------------------------------------------------------------- the terminal and standard streams


@pytest.mark.parametrize("columns", ["0", "-5", "wide"])
def test_a_terminal_width_that_is_no_width_still_prints_the_error(here: Path, columns: str) -> None:
    """rich printed nothing at all at COLUMNS=0: exit 2 without a word."""
    result = invoke(["runs", "--status", "sucess"], COLUMNS=columns)
    assert result.exit_code == 2 and "sucess" in result.output, result.output


def test_a_terminal_width_that_is_no_width_on_the_plain_path(
    here: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("T3RL_COMPOSE_AHEAD", "0")
    monkeypatch.setenv("COLUMNS", "0")
    monkeypatch.setattr(sys, "argv", ["t3rl", "run"])
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out, err = capfd.readouterr()
    assert exit_.value.code == 2 and "no stages" in out + err


@pytest.mark.parametrize("stream", [1, 2])
def test_a_closed_standard_stream_is_no_traceback(here: Path, stream: int) -> None:
    """`t3rl ls >&-`: sys.stdout was None and rich's flush raised AttributeError (exit 120)."""
    keep = 3 - stream  # the other stream, to read what it says
    result = subprocess.run(
        [sys.executable, "-m", "launch", "ls", "model"],
        cwd=here,
        stdout=subprocess.PIPE if keep == 1 else None,
        stderr=subprocess.PIPE if keep == 2 else None,
        preexec_fn=lambda: os.close(stream),
        timeout=300,
    )
    said = (result.stdout or result.stderr or b"").decode()
    assert result.returncode == 0 and "Traceback" not in said, said


def test_an_output_encoding_that_cannot_spell_the_marks(here: Path) -> None:
    """PYTHONIOENCODING=ascii (or a latin-1 locale): `t3rl runs` died with UnicodeEncodeError on '✓'."""
    _run_dir(here)
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}
    result = subprocess.run(
        [sys.executable, "-m", "launch", "runs"], cwd=here, env=env, capture_output=True, timeout=300
    )
    assert result.returncode == 0 and b"demo" in result.stdout, result.stdout + result.stderr


def test_a_working_directory_that_was_deleted(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = here / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    result = invoke(["ls"])
    assert result.exit_code == 2 and "current directory no longer exists" in result.output, result.output


# ---------------------------------------------------------------- a damaged run record


def _run_dir(root: Path) -> Path:
    """A small run record as t3rl writes one: a finished one-stage run."""
    run = root / "runs" / "demo" / "20260101-000000"
    (run / "stages" / "eval_tiny").mkdir(parents=True)
    (run / "config.yaml").write_text(
        yaml.safe_dump({"name": "demo", "stages": {"eval_tiny": {"kind": "eval"}}})
    )
    (run / "overrides.yaml").write_text(yaml.safe_dump(["+experiment=quickstart"]))
    (run / "manifest.json").write_text(json.dumps({"run": "demo", "record": "run", "created_at": "2026"}))
    state = {"version": 1, "stages": {"eval_tiny": {"status": "succeeded"}}}
    (run / "state.json").write_text(json.dumps(state))
    return run


DAMAGE = {
    "manifest-truncated": ("manifest.json", b'{"run": "demo", "rec'),
    "manifest-a-list": ("manifest.json", b"[1, 2]\n"),
    "state-truncated": ("state.json", b'{"version": 1, "sta'),
    "state-stages-a-list": ("state.json", b'{"version": 1, "stages": [1]}'),
    "state-stage-a-number": ("state.json", b'{"version": 1, "stages": {"eval_tiny": 5}}'),
    "config-truncated": ("config.yaml", b"name: demo\nstages: {eval_tiny: [\n"),
    "config-a-list": ("config.yaml", b"- 1\n"),
    "config-stages-a-number": ("config.yaml", b"stages: 5\n"),
    "config-not-utf8": ("config.yaml", NOT_UTF8),
}


# Fields of a readable record whose values are not of the shape t3rl writes: `runs show` shows the rest.
ODD_FIELDS = {
    "git": 5,
    "launcher": "a host",
    "overrides": 5,
    "planned_topology": {"stages": [1], "hardware": 3},
}


def test_the_undamaged_record_lists(here: Path) -> None:
    _run_dir(here)
    result = invoke(["runs"])
    assert result.exit_code == 0 and "demo" in result.output, result.output


@pytest.mark.parametrize(("file", "content"), DAMAGE.values(), ids=DAMAGE)
def test_a_damaged_run_record_is_named_exit_1(here: Path, file: str, content: bytes) -> None:
    run = _run_dir(here)
    _run_dir(here / "other")  # an intact run beside it is still listed
    (run / file).write_bytes(content)
    listed = invoke(["runs"])
    assert listed.exit_code == 1 and f"{file}" in listed.output, listed.output
    shown = invoke(["runs", "show", str(run)])
    assert shown.exit_code == 1 and str(run / file) in shown.output, shown.output
    assert invoke(["runs", "--runs-dir", "other/runs"]).exit_code == 0


@pytest.mark.parametrize(("field", "value"), ODD_FIELDS.items(), ids=ODD_FIELDS)
def test_a_manifest_field_of_another_shape_is_shown_as_absent(here: Path, field: str, value: Any) -> None:
    run = _run_dir(here)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, field: value}))
    assert invoke(["runs", "show", str(run)]).exit_code == 0


@pytest.mark.parametrize("status", [5, ["succeeded"], "sucess"])
def test_a_stage_status_t3rl_never_writes_is_named(here: Path, status: Any) -> None:
    run = _run_dir(here)
    (run / "state.json").write_text(json.dumps({"version": 1, "stages": {"eval_tiny": {"status": status}}}))
    for argv in (["runs"], ["runs", "show", str(run)]):
        result = invoke(argv)
        named = "state.json" in result.output and "stage 'eval_tiny'" in result.output
        assert result.exit_code == 1 and named and "status" in result.output, result.output


def test_resuming_an_eval_record_is_refused(here: Path) -> None:
    """`t3rl run --run-dir <a t3rl eval record>` ran the experiment's four stages into it."""
    run = _run_dir(here)
    (run / "manifest.json").write_text(json.dumps({"run": "eval", "record": "eval"}))
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    for command in ("run", "plan"):
        result = invoke([command, "--run-dir", str(run)])
        assert result.exit_code == 1 and "record of a `t3rl eval`" in result.output, result.output
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before


def test_recorded_config_dirs_of_another_shape_are_named(here: Path) -> None:
    """A string was read as a list of one-letter config dirs (eight "does not exist" errors)."""
    run = _run_dir(here)
    (run / "manifest.json").write_text(json.dumps({"run": "demo", "config_dirs": "/my/conf"}))
    result = invoke(["run", "--run-dir", str(run)])
    assert result.exit_code == 1 and "`config_dirs` is not a list" in result.output, result.output


def test_resuming_a_run_whose_manifest_is_a_list_names_it(here: Path) -> None:
    run = _run_dir(here)
    (run / "manifest.json").write_text("[1, 2]\n")
    result = invoke(["run", "--run-dir", str(run)])
    assert result.exit_code == 1 and "manifest.json" in result.output, result.output


@pytest.mark.parametrize("damage", ["config-not-utf8", "config-truncated"])
def test_a_resume_preview_of_a_damaged_config(here: Path, damage: str) -> None:
    run = _run_dir(here)
    (run / "config.yaml").write_bytes(DAMAGE[damage][1])
    before = {p: p.read_bytes() for p in run.rglob("*") if p.is_file()}
    result = invoke(["plan", "--run-dir", str(run)])
    assert result.exit_code in (0, 1), result.output
    assert {p: p.read_bytes() for p in run.rglob("*") if p.is_file()} == before  # a preview writes nothing


# ---------------------------------------------------------------- a config file that is not UTF-8 text


@pytest.mark.parametrize(
    "argv",
    [
        ["validate", "--config-dir", "mine", "model=broken"],  # composed without Hydra
        ["validate", "--config-dir", "mine", "+experiment=quickstart", "model=broken"],  # with Hydra
        ["ls", "--config-dir", "mine", "model"],
    ],
    ids=["direct", "hydra", "ls"],
)
def test_a_config_file_that_is_not_text_is_named_exit_2(here: Path, argv: list[str]) -> None:
    (here / "mine" / "model").mkdir(parents=True)
    (here / "mine" / "model" / "broken.yaml").write_bytes(NOT_UTF8)
    result = invoke(argv)
    assert result.exit_code == 2, result.output
    assert "broken.yaml" in result.output and "UTF-8" in result.output, result.output


@pytest.mark.parametrize("content", ["- a\n- b\n", "just words\n"], ids=["a-list", "a-scalar"])
def test_a_config_file_that_is_not_a_mapping_is_named_exit_2(here: Path, content: str) -> None:
    """It said "Index 'parsers' (str) is not an int" about env.data.think_tags, in another file."""
    (here / "mine" / "model").mkdir(parents=True)
    (here / "mine" / "model" / "odd.yaml").write_text(content)
    result = invoke(["validate", "--config-dir", "mine", "model=odd"])
    assert result.exit_code == 2 and "odd.yaml" in result.output and "mapping of keys" in result.output


def test_ls_names_a_config_file_that_is_not_yaml(here: Path) -> None:
    (here / "mine" / "model").mkdir(parents=True)
    (here / "mine" / "model" / "broken.yaml").write_text("name: [\n")
    result = invoke(["ls", "--config-dir", "mine", "model"])
    assert result.exit_code == 2 and "broken.yaml" in result.output and "YAML" in result.output


# ---------------------------------------------------------------- anything else: one line, not a traceback


def test_an_unexpected_exception_is_one_line_exit_1(
    here: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any) -> int:
        raise LookupError("a bug\nwith a second line")

    monkeypatch.setattr("launch.cli.inspect.ls_command", broken)
    monkeypatch.setattr(sys, "argv", ["t3rl", "ls"])
    monkeypatch.delenv("T3RL_TRACEBACK", raising=False)
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    out, err = capfd.readouterr()
    assert exit_.value.code == 1 and "Traceback" not in out + err
    assert "LookupError: a bug" in err and "second line" not in err and "T3RL_TRACEBACK=1" in err
    monkeypatch.setenv("T3RL_TRACEBACK", "1")
    with pytest.raises(LookupError):
        cli.main()


# ---------------------------------------------------------------- input files of the wrong kind


def test_score_names_lines_as_an_editor_numbers_them(here: Path) -> None:
    """Blank lines were skipped before numbering (line 3 was reported as 1), and a line that is not
    UTF-8 text stopped the whole file with a UnicodeDecodeError traceback."""
    (here / "r.jsonl").write_bytes(b"\n\nnot json\n\xff\xfe garbage\n")
    result = invoke(["score", "bfcl", "r.jsonl", "--no-progress"])
    assert result.exit_code == 1, result.output
    assert "r.jsonl:3: JSONDecodeError" in result.output and "r.jsonl:4: UnicodeDecodeError" in result.output


@pytest.mark.parametrize(
    ("samples", "says"),
    [
        ([5], "sample 0 is a int"),
        ([{"tokens": 5}], "tokens is a int"),
        ([{"tokens": [1, 2]}, {"response_length": "many"}], "sample 1"),
        ([{"reward": "high"}], "sample 0"),
    ],
    ids=["not-a-sample", "tokens-a-number", "length-text", "reward-text"],
)
def test_a_rollout_sample_of_the_wrong_types_is_exit_2(here: Path, samples: list[Any], says: str) -> None:
    import torch  # lazy: torch, only for the rollout files these cases write

    torch.save({"rollout_id": 0, "samples": samples}, here / "r.pt")
    result = invoke(["rollouts", "show", "r.pt"])
    assert result.exit_code == 2 and "r.pt" in result.output and says in result.output, result.output


# ---------------------------------------------------------------- a group option given as a file's path


def test_an_experiment_given_as_its_path_gets_the_name(here: Path) -> None:
    """Hydra read the path's directories as groups: "unknown option 'quickstart.yaml' for config group
    'experiment/conf/experiment'", fix "did you mean experiment/conf/experiment=quickstart?"."""
    result = invoke(["validate", "+experiment=conf/experiment/quickstart.yaml"])
    assert result.exit_code == 2, result.output
    assert "is a path" in result.output and "fix: +experiment=quickstart\n" in result.output, result.output


def test_an_own_experiment_given_as_its_path_gets_a_fix_that_validates(here: Path) -> None:
    mine = here / "my" / "experiment"
    mine.mkdir(parents=True)
    (mine / "mine.yaml").write_text(
        (Path(cli.__file__).parents[2] / "conf/experiment/quickstart.yaml").read_text()
    )
    result = invoke(["validate", "+experiment=my/experiment/mine.yaml"])
    fix = f"--config-dir {here / 'my'} +experiment=mine"
    assert result.exit_code == 2 and f"fix: {fix}\n" in result.output, result.output
    assert invoke(["validate", *fix.split()]).exit_code == 0


def test_a_model_given_as_a_file_elsewhere_says_where_it_must_be(here: Path) -> None:
    (here / "m.yaml").write_text("name: m\n")
    result = invoke(["validate", "model=./m.yaml"])
    assert result.exit_code == 2 and "DIR/model/m.yaml" in result.output and "--config-dir" in result.output


def test_eval_data_that_is_empty_says_so(here: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It said "no task of d.jsonl is in eval.categories=None", as if the categories were wrong."""
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    (here / "d.jsonl").write_text("\n")
    result = invoke(["eval", "+experiment=quickstart", "--engine", "reference", "--data", "d.jsonl"])
    assert result.exit_code == 2 and "d.jsonl holds no row (it is empty)" in result.output, result.output
    assert _files(here) == {"d.jsonl"}


# ---------------------------------------------------------------- a tokenizer dir that does not load


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["check-template", "qwen3_8b", "--tokenizer", "tk"], "cannot load a tokenizer from"),
        # The config's tokenizer is probed at pre-flight (launch/checks/probes.tokenizer_readable).
        (
            ["eval", "+experiment=quickstart", "--engine", "reference", "model.chat.tokenizer=./tk"],
            "error model.chat.tokenizer: tk/tokenizer_config.json is not JSON",
        ),
    ],
    ids=["check-template", "eval"],
)
def test_a_tokenizer_that_does_not_load_is_exit_2_and_leaves_nothing(
    here: Path, argv: list[str], said: str
) -> None:
    """A broken tokenizer_config.json was a ValueError traceback (and `eval` had written its record)."""
    (here / "tk").mkdir()
    (here / "tk" / "tokenizer_config.json").write_text("{\n")
    result = invoke(argv)
    assert result.exit_code == 2 and said in result.output, result.output
    assert _files(here) == {"tk", "tk/tokenizer_config.json"}


SWEEP_DAMAGE = {
    "truncated": b'{"name": "sw',
    "a-list": b"[1]\n",
    "points-a-number": b'{"name": "sw", "points": 5}',
    "a-field-t3rl-never-writes": b'{"name": "sw", "points": [{"index": 0, "bogus": 1}]}',
    "not-utf8": NOT_UTF8,
}


@pytest.mark.parametrize("content", SWEEP_DAMAGE.values(), ids=SWEEP_DAMAGE)
def test_a_damaged_sweep_record_is_named_exit_1(here: Path, content: bytes) -> None:
    """`runs show`, `run --run-dir` and `runs` of a sweep whose sweep.json was edited: KeyError,
    TypeError or JSONDecodeError tracebacks before."""
    point = _run_dir(here)  # runs/demo/<ts>: the sweep's point p00 below
    sweep = point.parent / "sweep-1"
    sweep.mkdir()
    point.rename(sweep / "p00")
    (sweep / "sweep.json").write_bytes(content)
    for argv in (["runs", "show", str(sweep)], ["run", "--run-dir", str(sweep)]):
        result = invoke(argv)
        assert result.exit_code == 1 and "sweep.json" in result.output, (argv, result.output)
    listed = invoke(["runs"])  # the listing reads the points' status only: an extra field does not matter
    assert listed.exit_code == 0 or ("not listed" in listed.output and "sweep.json" in listed.output)


def test_an_own_model_missing_a_key_the_env_reads_names_the_model_file(here: Path) -> None:
    """The fix said "fix the ${...} interpolation" of conf/env/bfcl_multi_turn.yaml, which holds the
    reference, not the mistake."""
    (here / "mine" / "model").mkdir(parents=True)
    (here / "mine" / "model" / "small.yaml").write_text("name: small\n")
    result = invoke(["validate", "--config-dir", "mine", "model=small"])
    assert result.exit_code == 2, result.output
    assert "fix: give model.parsers.think_tags a value in mine/model/small.yaml" in result.output, (
        result.output
    )


def test_an_eval_url_with_an_unclosed_ipv6_bracket_is_refused(here: Path) -> None:
    """`--url http://[::1` was accepted: an eval record written, then "is not answering" (exit 1)."""
    result = invoke(["eval", "+experiment=quickstart", "--url", "http://[::1"])
    assert result.exit_code == 2 and "--url" in result.output, result.output
    assert _files(here) == set()
