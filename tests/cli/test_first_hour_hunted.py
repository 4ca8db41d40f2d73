"""A newcomer's first hour, hunted by following the README and the tutorials and then making the usual
mistakes (helper-134). Each case failed before its fix; each printed fix is applied as printed."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from launch.config.defaults_entries import entry_meant
from tests.support.cli_app import fix_of, invoke

REPO = Path(__file__).resolve().parents[2]
QUICKSTART = (REPO / "conf/experiment/quickstart.yaml").read_text(encoding="utf-8")

# ------------------------------------------- a defaults-list entry of one's own file, misread by Hydra

# (the line of quickstart.yaml's defaults list, as mistyped): each was answered with a problem of another
# entry or of no entry ("'experiment/myqs' is not a config group", fix "did you mean 'experiment'?").
MISREAD = [
    ("  - override /reward: progress", "  - override /rewards: progress"),  # a misspelt group
    ("  - override /model: tiny_qwen3", "  - override model: tiny_qwen3"),  # no leading '/'
    ("  - override /env: bfcl_multi_turn", "  - env: bfcl_multi_turn"),  # no `override`
    ("  - override /env: bfcl_multi_turn", "  - /env: bfcl_multi_turn"),  # no `override`, with '/'
    ("  - override /env: bfcl_multi_turn", "  - override /env bfcl_multi_turn"),  # no ':'
    ("  - override /env: bfcl_multi_turn", "  - overide /env: bfcl_multi_turn"),  # a misspelt keyword
    ("  - _self_", "  - self"),  # the file's own keys
]


@pytest.fixture
def own_experiment(here: Path) -> Path:
    (here / "mine/experiment").mkdir(parents=True)
    file = here / "mine/experiment/myqs.yaml"
    file.write_text(QUICKSTART.replace("name: quickstart", "name: myqs"), encoding="utf-8")
    return file


@pytest.mark.parametrize(("meant", "typed"), MISREAD, ids=[t.strip() for _, t in MISREAD])
def test_a_misread_defaults_entry_is_named_with_the_entry_meant(
    own_experiment: Path, meant: str, typed: str
) -> None:
    text = own_experiment.read_text(encoding="utf-8")
    assert meant in text
    own_experiment.write_text(text.replace(meant, typed, 1), encoding="utf-8")
    entry = typed.strip().removeprefix("- ")
    argv = ["validate", "--config-dir", "mine", "+experiment=myqs"]
    result = invoke(argv)
    assert result.exit_code == 2, result.output
    assert f"lists `- {entry}`" in result.output, result.output
    fix = fix_of(result.output)
    found = re.fullmatch(r"in (\S+)'s defaults list, write `- (.+)` for `- (.+)`", fix)
    assert found is not None and found[3] == entry and found[2] == meant.strip().removeprefix("- "), fix
    # applied as printed: the entry replaced in the file named
    file = Path(found[1])
    file.write_text(file.read_text(encoding="utf-8").replace(found[3], found[2], 1), encoding="utf-8")
    assert invoke(argv).exit_code == 0


def test_an_override_listed_too_early_is_still_answered_by_its_order(own_experiment: Path) -> None:
    """A well-formed entry is read as written: the refusal that is about order keeps its answer."""
    text = own_experiment.read_text(encoding="utf-8")
    own_experiment.write_text(
        text.replace(
            "  - override /model: tiny_qwen3\n", "  - override /model: tiny_qwen3\n  - stage1_bfcl\n"
        ),
        encoding="utf-8",
    )
    result = invoke(["validate", "--config-dir", "mine", "+experiment=myqs"])
    assert (
        result.exit_code == 2
        and "move `- override /model: tiny_qwen3` below `- stage1_bfcl`" in result.output
    )


def test_no_shipped_defaults_entry_is_taken_for_a_misread_one() -> None:
    """Every entry of every shipped config file is read as written (no composition: the groups are the
    directories of conf/)."""
    conf = REPO / "conf"
    groups = {str(d.relative_to(conf)) for d in conf.rglob("*") if d.is_dir()} | {"hydra/sweeper"}
    top = sorted(g for g in groups if "/" not in g)
    primary = [
        next(iter(e)).split("@")[0].split()[-1]
        for e in yaml.safe_load((conf / "config.yaml").read_text())["defaults"]
        if isinstance(e, dict)
    ]
    checked = 0
    for file in conf.rglob("*.yaml"):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        own = str(file.parent.relative_to(conf))
        for entry in data.get("defaults", []) if isinstance(data, dict) and own != "." else []:
            assert entry_meant(entry, own, groups.__contains__, top, primary) is None, (file, entry)
            checked += 1
    assert checked > 100


# ------------------------------------------- a misspelt key in one's own file


@pytest.mark.parametrize(
    ("right", "typed"),
    [("name: myqs", "nmae: myqs"), ("limit_per_category: 5", "limit_per_categroy: 5")],
)
def test_a_misspelt_key_of_a_file_is_fixed_in_that_file(own_experiment: Path, right: str, typed: str) -> None:
    """Before: `fix: did you mean 'seed'? e.g. seed=3`, an override that leaves the misspelt key in the
    file, which is refused again."""
    text = own_experiment.read_text(encoding="utf-8")
    own_experiment.write_text(text.replace(right, typed, 1), encoding="utf-8")
    argv = ["validate", "--config-dir", "mine", "+experiment=myqs"]
    result = invoke(argv)
    assert result.exit_code == 2, result.output
    found = re.fullmatch(
        r"did you mean '\S+'\? in (\S+), rename `(\w+):` to `(\w+):`( \(under \S+\))?", fix_of(result.output)
    )
    assert found is not None and found[2] == typed.split(":")[0].strip(), result.output
    file = Path(found[1])
    file.write_text(
        file.read_text(encoding="utf-8").replace(f"{found[2]}:", f"{found[3]}:", 1), encoding="utf-8"
    )
    assert invoke(argv).exit_code == 0


# ------------------------------------------- Ctrl-C, then the same `t3rl run` again


def _recorded_run(name: str, statuses: dict[str, str], *overrides: str) -> Path:
    """A run record of the quickstart (its plan's files, recorded as a run) with these stage statuses."""
    path = Path("runs/quickstart") / name
    assert invoke(["plan", "+experiment=quickstart", *overrides, "--out", str(path)]).exit_code == 0
    manifest = json.loads((path / "manifest.json").read_text(encoding="utf-8"))
    (path / "manifest.json").write_text(json.dumps({**manifest, "record": "run"}), encoding="utf-8")
    stages = {s: {"status": status, "fingerprint": "0" * 16, "run_id": s} for s, status in statuses.items()}
    state = {"version": 1, "run_dir": str(path.resolve()), "stages": stages}
    (path / "state.json").write_text(json.dumps(state), encoding="utf-8")
    return path


STOPPED = {"prepare_data": "succeeded", "prepare_model": "stopped"}
DONE = dict.fromkeys(["prepare_data", "prepare_model", "eval_reference", "eval_tiny"], "succeeded")
NOTE = "note: the last run of these same overrides"


def test_the_same_run_again_after_a_stop_names_the_run_to_resume(here: Path) -> None:
    """Before: a new run dir and every stage from the beginning, without a word of the stopped run."""
    stopped = _recorded_run("20260101-000000", STOPPED)
    # `--only eval_tiny` ends the new run before its first stage (its upstream outputs are not there),
    # after what it says on starting (`--only nosuch` is refused with the config's errors, before that)
    result = invoke(["run", "+experiment=quickstart", "--only", "eval_tiny"])
    assert NOTE in result.output and "its stage prepare_model is recorded stopped" in result.output, (
        result.output
    )
    line = next(x for x in result.output.splitlines() if x.startswith(NOTE))
    resume = shlex.split(line.rpartition("resume that one: ")[2])
    assert resume == ["t3rl", "run", "--run-dir", str(stopped)], line
    assert invoke(["plan", *resume[2:]]).exit_code == 0  # a resumable run record


@pytest.mark.parametrize(
    "records",
    [
        [("20260101-000000", DONE, ())],  # it finished
        [("20260101-000000", STOPPED, ("seed=3",))],  # other overrides
        [("20260101-000000", STOPPED, ()), ("20260102-000000", DONE, ())],  # a later one finished
    ],
    ids=["finished", "other-overrides", "finished-later"],
)
def test_no_note_where_no_unfinished_run_is_repeated(
    here: Path, records: list[tuple[str, dict[str, str], tuple[str, ...]]]
) -> None:
    for name, statuses, overrides in records:
        _recorded_run(name, statuses, *overrides)
    result = invoke(["run", "+experiment=quickstart", "--only", "eval_tiny"])
    assert result.exit_code == 2 and "needs the outputs" in result.output and NOTE not in result.output, (
        result.output
    )


# ------------------------------------------- where the docs say a run dir goes


def test_every_run_dir_layout_the_config_and_docs_name_is_the_one_made(tmp_path: Path) -> None:
    """conf/config.yaml and the quickstart said `<paths.runs_dir>/<name>-<timestamp>` (so did `t3rl show
    --explain name` and the config reference), while a run goes to `<name>/<timestamp>`: `<name>-<timestamp>`
    is the run's id, not its dir."""
    from launch.run.rundir import RunDir  # the layout itself, beside what is said of it

    made = RunDir.new(tmp_path, "quickstart", "20260101-000000").path.relative_to(tmp_path)
    assert made.parts == ("quickstart", "20260101-000000")
    said = re.compile(r"<(?:paths\.)?runs_dir>/(?:<name>|[a-z0-9_]+)(?P<sep>[-/])<(?:time|timestamp|ts)>")
    files = [
        *(REPO / "conf").rglob("*.yaml"),
        *(REPO / "docs").rglob("*.md"),
        *(REPO / "launch").rglob("*.py"),
    ]
    found = [(f, m["sep"]) for f in files for m in said.finditer(f.read_text(encoding="utf-8"))]
    assert len(found) >= 3 and all(sep == "/" for _, sep in found), [str(f) for f, s in found if s != "/"]


# ------------------------------------------- t3rl's own config dir, or a copy of it, given as one


def test_t3rls_own_config_dir_given_as_one_is_no_mistake(here: Path) -> None:
    """Before: one error per file the quickstart composed (`conf/env/bfcl_multi_turn.yaml is never read:
    conf/env/bfcl_multi_turn.yaml has the same name`), each fixed by renaming t3rl's own file."""
    result = invoke(["validate", "--config-dir", str(REPO / "conf"), "+experiment=quickstart"])
    assert result.exit_code == 0, result.output


def test_a_copy_of_the_config_dir_names_only_the_file_edited(here: Path) -> None:
    shutil.copytree(REPO / "conf", "my_conf")
    edited = Path("my_conf/experiment/quickstart.yaml")
    edited.write_text(
        edited.read_text(encoding="utf-8").replace("limit_per_category: 5", "limit_per_category: 3")
    )
    argv = ["validate", "--config-dir", "my_conf", "+experiment=quickstart"]
    result = invoke(argv)
    assert result.exit_code == 2 and result.output.count("is never read") == 1, result.output
    move, _, choose = (
        fix_of(result.output).removeprefix("give yours a name of its own: ").partition(" and choose it with ")
    )
    _, source, target = shlex.split(move)
    assert source == str(edited), move
    Path(source).rename(target)
    assert invoke(["validate", "--config-dir", "my_conf", choose]).exit_code == 0


# ------------------------------------------- every command's --help says its exit codes


def _commands() -> list[tuple[str, bool]]:
    """(path, runs something) of every command and group under `t3rl`."""
    import typer.main

    from launch.cli.app import app

    found: list[tuple[str, bool]] = []

    def walk(command: object, path: str) -> None:
        subcommands = getattr(command, "commands", None)
        found.append((path, subcommands is None or bool(getattr(command, "invoke_without_command", False))))
        for name, sub in (subcommands or {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(typer.main.get_command(app), "")
    return found


def test_every_command_that_runs_something_says_its_exit_codes_in_its_help() -> None:
    """Before: `t3rl ls`, `eval`, `data bfcl`, `runs show`, `runs diff` and `rollouts show` said nothing of
    them; the others in a sentence each, without 130."""
    from launch.cli.exit_help import EXIT_CODES

    commands = _commands()
    running = [path for path, runs in commands if runs and path]
    assert sorted(EXIT_CODES) == sorted(running)  # a new command declares its codes
    for path, runs in commands:
        text = " ".join(invoke([*path.split(), "--help"]).output.replace("│", " ").split())
        said = re.findall(r"\bExit\b", text)
        if not runs or not path:
            assert not said, (path, text)
            continue
        assert len(said) == 1, (path, text)  # the declaration, not a docstring's own sentence as well
        for code, meaning in {**EXIT_CODES[path], 130: "stopped"}.items():
            assert f"{code} {meaning}" in text, (path, code, text)


# ------------------------------------------- no experiment chosen, with a config dir of one's own


def test_no_experiment_with_an_own_config_dir_names_ones_own(own_experiment: Path) -> None:
    """Before: `fix: choose an experiment: +experiment=quickstart (`t3rl ls experiment` lists them)`:
    without --config-dir that listing leaves out the user's own experiments."""
    result = invoke(["run", "--config-dir", "mine"])
    assert result.exit_code == 2, result.output
    found = re.fullmatch(
        r"choose an experiment: (\S+) \(`(t3rl ls experiment .*)` lists them\)", fix_of(result.output)
    )
    assert found is not None and found[1] == "+experiment=myqs", result.output
    assert invoke(["validate", "--config-dir", "mine", found[1]]).exit_code == 0
    listed = invoke(shlex.split(found[2])[1:])
    assert listed.exit_code == 0 and "myqs" in listed.output, listed.output


# ------------------------------------------- a stage's log: a long line stays one line


def test_the_eval_reports_path_is_one_line_in_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: `report: ` at the end of one line and the path on the next in every eval stage's log.txt
    (rich folds text at 80 columns where stdout is no terminal), so `grep report: log.txt` found no path."""
    from t3rl_core.eval import evaluate

    monkeypatch.setenv("COLUMNS", "80")
    block = {"tasks": 1, "accuracy": 1.0, "progress": 1.0, "pass@1": 1.0, "statuses": {}}
    summary = {"pass_k": [1], "split": "s", "engine": {"name": "reference"}, "categories": {"c": block}}
    out = tmp_path / ("a-long-run-dir-name-" * 4) / "stages" / "eval_reference"
    evaluate._print({**summary, evaluate.OVERALL: block, "complete": True}, out)
    assert f"report: {out / 'report.md'}\n" in capsys.readouterr().out


def test_a_data_stages_error_is_one_line_in_its_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.data.__main__ import main

    monkeypatch.setenv("COLUMNS", "80")
    missing = tmp_path / ("a-long-run-dir-name-" * 4) / "runtime" / "prepare_data.yaml"
    assert main(["--runtime-config", str(missing), "--out", str(tmp_path / "out")]) == 2
    line = next(x for x in capsys.readouterr().err.splitlines() if x.startswith("cannot read the env config"))
    assert str(missing) in line, line


# ------------------------------------------- a path inside a run dir given for the run dir


@pytest.mark.parametrize(
    ("argv", "inside"),
    [
        (["plan", "--run-dir"], "stages/eval_tiny"),  # a stage's dir, copied from the stage's header
        (["run", "--run-dir"], "stages/eval_tiny/log.txt"),  # its log
        (["runs", "show"], "stages"),
        (["runs", "show"], "manifest.json"),
    ],
)
def test_a_path_inside_a_run_dir_names_the_run_dir(here: Path, argv: list[str], inside: str) -> None:
    """Before: `… is not a run dir (no config.yaml: `t3rl runs` lists the run dirs)`, for plan with
    `t3rl plan --out runs/…/stages/eval_tiny … writes a new plan there` (a plan into a run's stage dir)."""
    run = _recorded_run("20260101-000000", DONE)
    result = invoke([*argv, str(run / inside)])
    text = " ".join(result.output.split())
    assert result.exit_code == 1 and f"it is inside the run dir {run}: did you mean {run}?" in text, text
    assert "writes a new plan there" not in text and "starts a new run" not in text, text
    if inside.startswith("stages/"):
        assert "(--only eval_tiny runs stage eval_tiny alone)" in text, text
    assert (
        invoke(["runs", "show", str(run)] if argv[0] == "runs" else ["plan", "--run-dir", str(run)]).exit_code
        == 0
    )


# ------------------------------------------- --from / --only with a misspelt stage


@pytest.mark.parametrize("flag", ["--from", "--only"])
def test_a_misspelt_stage_is_answered_with_the_stage_meant(here: Path, flag: str) -> None:
    """Before: `--from eval_tny: no such stage (stages: …)`, the four names listed and none chosen."""
    run = _recorded_run("20260101-000000", DONE)
    result = invoke(["plan", "--run-dir", str(run), flag, "eval_tny"])
    # refused with the config's errors (exit 2, as every bad value of an option), before its warnings
    assert result.exit_code == 2 and f"did you mean {flag} eval_tiny?" in result.output, result.output
    # the name as meant passes the stage check (the record made here has no outputs for the rest)
    assert "no such stage" not in invoke(["plan", "--run-dir", str(run), flag, "eval_tiny"]).output


# ------------------------------------------- a run dir where an override goes (a pattern the shell expanded)


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--run-dir", "{a}", "{b}"],  # `--run-dir runs/quickstart/*` matching two runs
        ["plan", "+experiment=quickstart", "{b}"],
        ["validate", "{b}"],
    ],
)
def test_a_run_dir_given_as_an_override_is_named_so(here: Path, argv: list[str]) -> None:
    """Before, for the first two: the shell split `+experiment=quickstart runs/quickstart/<ts>` at the
    space, `fix: "+experiment='quickstart runs/quickstart/<ts>'"` (an experiment of that name)."""
    a, b = _recorded_run("20260101-000000", DONE), _recorded_run("20260102-000000", DONE)
    result = invoke([x.format(a=a, b=b) for x in argv])
    assert result.exit_code == 2 and f"'{b}' is a run's record, not an override" in result.output, (
        result.output
    )
    fix = fix_of(result.output)
    assert fix == f"t3rl run --run-dir {b} resumes it; t3rl runs show {b} shows it", fix
    assert invoke(["runs", "show", str(b)]).exit_code == 0


# ------------------------------------------- an option given no value (`--run-dir $RUN`, RUN unset)


def test_every_option_given_no_value_says_what_it_takes() -> None:
    """Before: `Option '--run-dir' requires an argument.` alone, without the usage lines, what the
    option takes, or why nothing followed it."""
    import typer.main

    from launch.cli.app import app

    checked = 0

    def walk(command: object, path: list[str]) -> None:
        nonlocal checked
        for sub_name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, sub_name])
        for param in getattr(command, "params", []):
            takes_value = param.param_type_name == "option" and not param.is_flag and not param.count
            if not takes_value or param.hidden:
                continue
            name = param.opts[0]
            result = invoke([*path, name])
            text = " ".join(result.output.replace("│", " ").split())
            assert result.exit_code == 2 and f"{name} takes " in text and "nothing followed it" in text, text
            assert "Usage:" in text and "requires an argument" not in text, text
            checked += 1

    walk(typer.main.get_command(app), [])
    assert checked > 30


# ------------------------------------------- `t3rl runs show` and the runs dir given to `t3rl runs`


def test_runs_show_reads_the_runs_dir_given_to_runs(here: Path) -> None:
    """Before: `t3rl runs --runs-dir elsewhere show` looked for the newest run in ./runs ('no runs yet'),
    and `t3rl runs show --runs-dir elsewhere` said `No such option: --runs-dir`."""
    _recorded_run("20260101-000000", DONE)
    Path("runs").rename("elsewhere")
    misplaced = invoke(["runs", "show", "--runs-dir", "elsewhere"])
    text = " ".join(misplaced.output.replace("│", " ").split())
    assert misplaced.exit_code == 2, text
    assert (
        # The line typed with the option moved (first hour wave nine): the command run next.
        "--runs-dir is an option of `t3rl runs`, so it goes before `show`: "
        "t3rl runs --runs-dir elsewhere show" in text
    )
    shown = invoke(["runs", "--runs-dir", "elsewhere", "show"])
    assert shown.exit_code == 0 and "quickstart-20260101-000000" in shown.output, shown.output


# ------------------------------------------- a config dir's folder not named for its group


@pytest.mark.parametrize(
    ("folder", "file", "source", "argv"),
    [
        ("experiments", "myqs.yaml", "conf/experiment/quickstart.yaml", ["+experiment=myqs"]),
        ("Experiment", "myqs.yaml", "conf/experiment/quickstart.yaml", ["+experiment=myqs"]),
        ("models", "mymodel.yaml", "conf/model/tiny_qwen3.yaml", ["+experiment=quickstart", "model=mymodel"]),
    ],
)
def test_an_option_in_a_folder_misnamed_names_the_folder(
    here: Path, folder: str, file: str, source: str, argv: list[str]
) -> None:
    """Before: `unknown option 'myqs' for config group 'experiment'`, `fix: choose one of:` t3rl's own."""
    (here / "mine" / folder).mkdir(parents=True)
    text = (REPO / source).read_text(encoding="utf-8")
    (here / "mine" / folder / file).write_text(
        text.replace("name: quickstart", "name: myqs"), encoding="utf-8"
    )
    result = invoke(["validate", "--config-dir", "mine", *argv])
    assert result.exit_code == 2 and f"is in folder '{folder}', which is no config group" in result.output
    command, *paths = shlex.split(fix_of(result.output))
    assert command == "mv", paths
    Path(paths[0]).rename(paths[1])
    assert invoke(["validate", "--config-dir", "mine", *argv]).exit_code == 0


# ------------------------------------------- check-template's MODEL misspelt


def test_a_misspelt_model_of_check_template_is_fixed_with_the_command(here: Path) -> None:
    """Before: `set in: override `model=qwen3-8b``, `fix: did you mean model=qwen3_8b?`, an override
    `t3rl check-template` does not take in place of its MODEL."""
    result = invoke(["check-template", "qwen3-8b"])
    assert result.exit_code == 2 and "set in: MODEL `qwen3-8b`" in result.output, result.output
    found = re.fullmatch(r"did you mean `(t3rl check-template \S+)`\?", fix_of(result.output))
    assert found is not None, result.output
    # the MODEL it names composes (the check itself, ~3 s of building a tokenizer, is not what was wrong)
    from launch.cli.check_template import _model

    assert _model(shlex.split(found[1])[2], [], []).name


# ------------------------------------------- an eval's stage or option misspelt or cut short


@pytest.mark.parametrize(
    ("typed", "meant", "said"),
    [
        (["--stage", "eval_tny"], ["--stage", "eval_tiny"], "did you mean --stage eval_tiny?"),
        (
            ["--limit", "1"],
            ["--limit-per-category", "1"],
            "No such option: --limit: did you mean --limit-per-category?",
        ),
    ],
)
def test_an_eval_option_misspelt_or_cut_short_is_answered_with_the_one_meant(
    here: Path, typed: list[str], meant: list[str], said: str
) -> None:
    """Before: `'eval_tny' is not an eval stage of this config (eval stages: …)`; `No such option: --limit
    (Possible options: --split)`."""
    argv = ["eval", "+experiment=quickstart", "--engine", "reference"]
    result = invoke([*argv, *typed])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and said in text, text
    # as meant, the command line passes the parser and the stage check (the eval's split is not prepared
    # here: refused later, for that)
    after = " ".join(
        invoke([*argv, *meant, "--out", "out", "--data", "nothing"]).output.replace("│", " ").split()
    )
    assert "No such option" not in after and "not an eval stage" not in after, after
