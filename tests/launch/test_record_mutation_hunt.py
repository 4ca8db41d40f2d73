"""Every record file of a run dir, a sweep dir and a `t3rl eval` out dir, damaged every way
(tests/support/record_hunt.MUTATIONS: deleted, emptied, cut in half, a torn last line, bytes that are no
UTF-8, JSON/YAML of another shape, a field removed or added, 8 MB, a directory, a symlink out of the
dir, mode 000, a time in the future), then read by every command that reads it: `t3rl runs`,
`runs show`, `runs diff`, `plan --run-dir`, and the commands that write on: `run --run-dir` (a run, a
sweep) and `eval --resume`. Each answer keeps the contract `record_hunt.judge` states: refused with
exit 1 or 2 naming the file and the record left as it was, or gone on without losing what it held
(a command that only reads writes nothing at all); never a traceback, never a write outside the dir.

One run of a data-preparation experiment, one sweep of two of its points and one eval of the reference
policy are recorded once per module; each case damages a copy.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from launch.run.rundir import RECORD_FILES, STAGE_RECORD_FILES
from t3rl_core.eval import report
from tests.support import record_hunt as hunt
from tests.support.retool_prepare_only import rec_config_dir


def invoke(args: list[str], reads_only: bool = True) -> hunt.Answer:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "300"})
    return hunt.Answer(" ".join(args[:2]), result.exit_code, result.output, result.exception, reads_only)


def _probed_once(probe: Callable[[Any], dict[str, Any]]) -> Callable[[Any], dict[str, Any]]:
    """`probe` (`sandbox_manifest`: the run manifest's sandbox section, found by starting a sandbox)
    run once per sandbox config: what this host's sandbox protects is the same for every run the hunt
    records (~0.12 s of CPU a probe, most of it the zygote's process), and the probe reads no record."""
    probed: dict[str, dict[str, Any]] = {}

    def once(config: Any) -> dict[str, Any]:
        key = config.model_dump_json()
        if key not in probed:
            probed[key] = probe(config)
        return copy.deepcopy(probed[key])

    return once


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A finished run of `rec`, a finished sweep of it, a finished eval; and where they were made."""
    root = tmp_path_factory.mktemp("recorded")
    with pytest.MonkeyPatch.context() as patch:
        conf = rec_config_dir(root, patch)
        from t3rl_core.sandbox import local  # lazy: as write_run_dir imports it, which finds the patch

        patch.setattr(local, "sandbox_manifest", _probed_once(local.sandbox_manifest))
        # The sweep varies the seed, which the data's content key leaves out: its points adopt the data
        # the run prepared (~0.3 s of CPU a point less than preparing it again); the records are alike.
        for args in (["run", "+experiment=rec"], ["run", "-m", "+experiment=rec", "seed=1,2"]):
            answer = invoke([*args, "--config-dir", str(conf)], reads_only=False)
            assert answer.code == 0, answer.output
        from tests.support.tiny_stack import shared_tiny_stack  # lazy: the eval's model and data

        data, model = shared_tiny_stack()
        eval_dir = root / "eval"
        eval_args = [
            "eval",
            "+experiment=quickstart",
            f"model.hf_checkpoint={model}",
            "--engine",
            "reference",
        ]
        eval_args += ["--limit-per-category", "1", "--data", str(data), "--out"]
        answer = invoke([*eval_args, str(eval_dir)], reads_only=False)
        assert answer.code == 0, answer.output
        (run,) = (root / "runs" / "rec").glob("2*")
        (sweep,) = (root / "runs" / "rec").glob("sweep-*")
        yield {"root": root, "run": run, "sweep": sweep, "eval": eval_dir, "eval_args": eval_args}


def _commands(target: str, copy: Path, runs: Path, recorded: dict) -> list[tuple[list[str], bool]]:
    """Each command that reads the record `copy` of `target`, with whether it only reads."""
    listing = (["runs", "--runs-dir", str(runs)], True)
    if target == "run":
        return [
            listing,
            (["runs", "show", str(copy)], True),
            (["runs", "diff", str(copy), str(recorded["run"])], True),
            (["plan", "--run-dir", str(copy)], True),
            (["run", "--run-dir", str(copy)], False),
        ]
    if target == "sweep":
        return [
            listing,
            (["runs", "show", str(copy)], True),
            (["runs", "show", str(copy / "p00")], True),
            (["plan", "--run-dir", str(copy)], True),
            (["run", "--run-dir", str(copy)], False),
        ]
    return [
        listing,
        (["runs", "show", str(copy)], True),
        (["runs", "diff", str(copy), str(recorded["eval"])], True),
        ([*recorded["eval_args"], str(copy), "--resume"], False),
    ]


_USUAL: dict[str, dict[tuple[str, str], int]] = {}


def _usual(target: str, scratch: Path, recorded: dict) -> dict[tuple[str, str], int]:
    """Each command's exit code on an intact copy of `target`'s record (once per module)."""
    if target not in _USUAL:
        copy = scratch / WHERE[target]
        shutil.copytree(recorded[target], copy, symlinks=True)
        _USUAL[target] = {
            (args[0], args[1]): invoke(args, reads_only).code or 0
            for args, reads_only in _commands(target, copy, scratch / "runs", recorded)
        }
    return _USUAL[target]


_DAMAGED: list[Path] = []
_PLOT = report.plot_categories


def _plot_if_damaged(summary: dict, path: Path) -> None:
    if path in _DAMAGED:
        _PLOT(summary, path)


# The commands that resume a record (and `plan --run-dir`, the preview of one): those `Record.unread`
# speaks of.
RESUMES = ("run", "plan", "eval")
RECORDS = {"run": hunt.RUN_RECORDS, "sweep": hunt.SWEEP_RECORDS, "eval": hunt.EVAL_RECORDS}
WHERE = {"run": "runs/rec/20260101-000000", "sweep": "runs/rec/sweep-20260101-000000", "eval": "runs/eval-x"}


# A torn last line is a JSONL record's damage: only an eval writes one.
CASES = [(t, m) for t in RECORDS for m in hunt.MUTATIONS if m != "partial-line" or t == "eval"]


@pytest.mark.parametrize(("target", "mutation"), CASES)
def test_every_reader_of_a_damaged_record_refuses_naming_it_or_goes_on_losing_nothing(
    target: str, mutation: str, recorded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(recorded["root"])  # where the runs were started (a resume goes back there)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(recorded["root"] / "cache"))
    broken, applied = [], 0
    usual = _usual(target, tmp_path / "intact", recorded)
    if target == "eval":
        # Drawing the chart is most of a resumed eval's time (~0.3 s) and reads no record: it is drawn
        # only where the chart's own file is damaged.
        monkeypatch.setattr("t3rl_core.eval.report.plot_categories", _plot_if_damaged)
    for n, record in enumerate(RECORDS[target]):
        case = hunt.Case(tmp_path / str(n) / WHERE[target], record, tmp_path / str(n) / "outside")
        shutil.copytree(recorded[target], case.root, symlinks=True)
        case.outside.mkdir()
        if not hunt.MUTATIONS[mutation](case.damaged, record, case.outside):
            continue
        applied += 1
        _DAMAGED[:] = [case.damaged]
        outside = {p.name: p.read_bytes() for p in case.outside.iterdir()}
        before = hunt.tree(case.root)
        for args, reads_only in _commands(target, case.root, tmp_path / str(n) / "runs", recorded):
            if args[0] in RESUMES and record.unread and mutation not in hunt.OF_THE_FILE:
                continue  # a file it does not read: only what the file is can matter to it
            answer = invoke(args, reads_only)
            # Taken once: the dir after one command is the dir before the next (nothing runs between).
            after = hunt.tree(case.root)
            problem = hunt.judge(answer, case, before, outside, usual[args[0], args[1]], after)
            before = after
            if problem:
                broken.append(f"{record.path} [{' '.join(args[:2])}]: {problem}")
    if mutation == "mode-000" and os.geteuid() == 0:
        pytest.skip("root reads a file of mode 000")
    assert applied, f"{mutation} applies to no record of a {target}"
    assert not broken, "\n".join(broken)


def test_the_hunt_knows_every_file_a_run_a_sweep_and_an_eval_write(recorded: dict) -> None:
    """A record file t3rl starts writing is one the hunt must learn to damage: the files each recorded
    dir holds, and those rundir declares, are each one the hunt knows."""
    known = {r.path for r in hunt.RUN_RECORDS}
    assert set(RECORD_FILES) <= known
    assert {f"stages/prepare_data/{name}" for name in STAGE_RECORD_FILES} <= known
    assert hunt.unknown_files(recorded["run"], hunt.RUN_RECORDS) == []
    assert hunt.unknown_files(recorded["sweep"], hunt.SWEEP_RECORDS, below=("p00", "p01")) == []
    assert hunt.unknown_files(recorded["sweep"] / "p00", hunt.RUN_RECORDS) == []
    assert hunt.unknown_files(recorded["eval"], hunt.EVAL_RECORDS) == []


def test_the_hunt_finds_an_unknown_file_and_a_broken_contract(recorded: dict, tmp_path: Path) -> None:
    """The hunt's own checks can fail: a file it does not know is listed, and a reader that changed
    the damaged file, named nothing or raised is judged so."""
    copy = tmp_path / "run"
    shutil.copytree(recorded["run"], copy, symlinks=True)
    (copy / "stages" / "prepare_data" / "new_record.json").write_text("{}")
    assert hunt.unknown_files(copy, hunt.RUN_RECORDS) == ["stages/prepare_data/new_record.json"]
    record = next(r for r in hunt.RUN_RECORDS if r.path == "state.json")
    case = hunt.Case(copy, record, tmp_path / "outside")
    case.outside.mkdir()
    before = hunt.tree(copy)
    refused = hunt.Answer("run --run-dir", 1, "error: something is wrong\n", reads_only=False)
    assert "without naming state.json" in str(hunt.judge(refused, case, before, {}))
    named = hunt.Answer("run --run-dir", 1, f"error: {copy / 'state.json'} is bad\n", reads_only=False)
    assert "naming no fix" in str(hunt.judge(named, case, before, {}))
    raised = hunt.Answer("runs show", 1, "", KeyError("key"))
    assert "raised KeyError" in str(hunt.judge(raised, case, before, {}))
    (copy / "state.json").write_text("{}")
    went_on = hunt.Answer("run --run-dir", 0, "done\n", reads_only=False)
    assert "the damaged file changed" in str(hunt.judge(went_on, case, before, {}))
    read = hunt.Answer("runs show", 0, "", reads_only=True)
    assert "only reads changed ['state.json']" in str(hunt.judge(read, case, before, {}))


def test_runs_diff_names_damaged_secret_fingerprints_and_compares_the_rest(
    recorded: dict, tmp_path: Path
) -> None:
    """secret_fingerprints.json without its key id (edited by hand): `t3rl runs diff` raised KeyError;
    now it compares the configs and says which file kept the masked values from being compared."""
    copy = tmp_path / "run"
    shutil.copytree(recorded["run"], copy, symlinks=True)
    prints = copy / "secret_fingerprints.json"
    prints.write_text(json.dumps({"values": {}}))
    answer = invoke(["runs", "diff", str(copy), str(recorded["sweep"] / "p00")])
    assert answer.exception is None or isinstance(answer.exception, SystemExit), answer.exception
    assert answer.code == 0, answer.output
    assert f"masked values not compared: {prints} is corrupt" in "".join(answer.output.split("\n")), (
        answer.output
    )


def test_a_resume_without_manifest_json_says_it_is_missing_not_older(
    recorded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run dir whose manifest.json was deleted, resumed without its config dir: the note said its
    manifest 'names no config dirs (written before they were recorded)', an older t3rl's record, which
    it is not; it says the manifest is missing, and how to give the dir."""
    monkeypatch.chdir(recorded["root"])
    copy = tmp_path / "run"
    shutil.copytree(recorded["run"], copy, symlinks=True)
    (copy / "manifest.json").unlink()
    answer = invoke(["plan", "--run-dir", str(copy)])
    shown = " ".join(answer.output.split())
    assert answer.code == 2, answer.output
    assert "its manifest.json is missing (deleted, or a copy without it)" in shown, shown
    assert f"give it again with `t3rl plan --run-dir {copy} --config-dir DIR`" in shown, shown
    assert not (copy / "manifest.json").exists()


_OPENED: list[str] | None = None


def _opened(event: str, args: tuple) -> None:
    """An audit hook: each file opened for reading while `_OPENED` is a list."""
    if _OPENED is None or event != "open" or not isinstance(args[0], str | bytes | os.PathLike):
        return
    mode, flags = args[1], args[2]
    reading = (
        ("r" in mode and "+" not in mode) if isinstance(mode, str) else flags & os.O_ACCMODE == os.O_RDONLY
    )
    if reading:
        _OPENED.append(os.fsdecode(args[0]))


def test_what_the_hunt_calls_unread_no_resume_reads(
    recorded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Record.unread` lets the resuming commands skip damage to what a file says: checked here, every
    file each of them opens for reading on an intact record is one the hunt does not call unread."""
    global _OPENED
    monkeypatch.chdir(recorded["root"])
    monkeypatch.setenv("T3RL_CACHE_DIR", str(recorded["root"] / "cache"))
    sys.addaudithook(_opened)  # stays for the process: inert while _OPENED is None
    read: list[str] = []
    for target in RECORDS:
        copy = tmp_path / WHERE[target]
        shutil.copytree(recorded[target], copy, symlinks=True)
        unread = {str(copy / r.path) for r in RECORDS[target] if r.unread}
        for args, _ in _commands(target, copy, tmp_path / "runs", recorded):
            if args[0] not in RESUMES:
                continue
            _OPENED = []
            try:
                answer = invoke(args, reads_only=False)
            finally:
                opened, _OPENED = _OPENED, None
            assert answer.code in (0, 1), answer.output  # `plan --run-dir` of a sweep refuses it
            read += [path for path in opened if path in unread]
    assert read == []


def test_a_run_dir_missing_its_config_or_overrides_names_the_file_and_how_to_restore_it(
    recorded: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's record without config.yaml was 'not a run dir' (`t3rl runs` lists them; `t3rl run
    OVERRIDES…` starts a new run): it is named as the run's record missing that file, to restore. One
    without overrides.yaml was 'not a t3rl run directory': it is named missing, with the overrides its
    history recorded last."""
    monkeypatch.chdir(recorded["root"])
    copy = tmp_path / "run"
    shutil.copytree(recorded["run"], copy, symlinks=True)
    (copy / "config.yaml").unlink()
    for args in (["runs", "show", str(copy)], ["run", "--run-dir", str(copy)]):
        shown = " ".join(invoke(args).output.split())
        assert "without its config.yaml, the config the run ran with: restore" in shown, shown
    shutil.copy2(recorded["run"] / "config.yaml", copy / "config.yaml")
    (copy / "overrides.yaml").unlink()
    answer = invoke(["run", "--run-dir", str(copy)], reads_only=False)
    shown = " ".join(answer.output.split())
    assert answer.code == 1, answer.output
    assert (
        f"{copy / 'overrides.yaml'} is missing: restore it; the last attempt ran with +experiment=rec"
        in shown
    )
    assert not (copy / "overrides.yaml").exists()


def test_overrides_yaml_cut_short_is_named_as_the_damaged_file(recorded: dict, tmp_path: Path) -> None:
    """overrides.yaml cut in half (`- +experi`): the resume composed `+experi` as if typed, refused it
    as an override given on the command line (`fix: +experi=<value>`); it is the file that is named."""
    copy = tmp_path / "run"
    shutil.copytree(recorded["run"], copy, symlinks=True)
    (copy / "overrides.yaml").write_text("- +experi")
    for command in ("plan", "run"):
        answer = invoke([command, "--run-dir", str(copy)], reads_only=False)
        shown = " ".join(answer.output.split())
        assert answer.code == 1, answer.output
        assert f"error: {copy / 'overrides.yaml'} is corrupt ('+experi' is no override KEY=VALUE)" in shown
        assert "+experi=<value>" not in shown, shown
    assert (copy / "overrides.yaml").read_text() == "- +experi"
