"""First hour, hunted (wave six): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave six)"). Each fails on the code before its
fix; in-process where the kind allows."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main
import yaml

from launch.cli.app import app
from launch.cli.run_command import run_command
from launch.files import exclusive_lock
from launch.run.unfinished import unfinished_same_run
from tests.cli.test_newcomer_four import pasted_examples
from tests.launch.test_cli_help import complete
from tests.support.cli_app import (
    fix_of,
    invoke,
    refused,
    validates,
    warned_with_a_fix_that_clears_it,
    warnings_of,
)
from tests.support.retool_prepare_only import rec_config_dir

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------ a non-ASCII value where t3rl wants ASCII, in one step


@pytest.mark.parametrize(("typed", "fixed"), [("name=café", "name=cafe"), ("name=café run", "name=cafe_run")])
def test_a_value_quoted_and_then_refused_is_answered_with_one_that_validates(typed: str, fixed: str) -> None:
    """`name=café`: Hydra's grammar reads the accent only quoted, and a directory name is ASCII. Was: fix
    `"name='café'"`, which was refused in turn with `name=cafe`: two steps. Now the quoted form is tried
    as applied and the field's own proposal (from what was typed) is the fix, which validates."""
    output = refused(["+experiment=quickstart", typed])
    fix = fix_of(output)
    assert fix.startswith(f"{fixed} (quoted,") and "refused in turn" in fix, output
    validates(["+experiment=quickstart", shlex.split(fix)[0]])


def test_a_quoted_value_the_field_takes_keeps_the_quoted_fix() -> None:
    """No over-refusal: a field that takes any text (`tracking.project`) keeps the quoted form, and it
    validates."""
    fix = fix_of(refused(["+experiment=quickstart", "tracking.project=naïve"]))
    assert fix == "\"tracking.project='naïve'\"", fix
    validates(["+experiment=quickstart", shlex.split(fix)[0]])


# ------------------------------------------------ a second `t3rl run` of the same line while the first runs


def _run_record(runs: Path, stamp: str) -> Path:
    """A run record of `+experiment=quickstart` whose pipeline is recorded running (as a live run's is)."""
    run = runs / "quickstart" / stamp
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(
        json.dumps({"record": "run", "overrides": ["+experiment=quickstart"], "config_dirs": []})
    )
    (run / "state.json").write_text(json.dumps({"stages": {"eval_tiny": {"status": "running"}}}))
    return run


def test_a_run_still_running_is_named_as_running_not_as_one_to_resume(tmp_path: Path) -> None:
    """The same `t3rl run +experiment=quickstart` typed again in a second terminal while the first runs.
    Was: 'did not finish (its stage eval_tiny is recorded running) … stop this one and resume that one:
    t3rl run --run-dir …', a resume `t3rl run` refuses while that run holds its lock. A run that died
    (nobody holds its lock) keeps the resume note."""
    run = _run_record(tmp_path, "20260101-000000")
    args = (tmp_path, "quickstart", ["+experiment=quickstart"], [])
    with exclusive_lock(run / ".lock"):
        note = unfinished_same_run(*args)
    assert note is not None and "is running now (another t3rl holds it)" in note, note
    assert "t3rl run --run-dir" not in note and f"t3rl runs show {run}" in note, note
    note = unfinished_same_run(*args)  # its t3rl died: nobody holds the lock
    assert note is not None and "did not finish" in note and f"t3rl run --run-dir {run}" in note, note


# ------------------------------------------------ Ctrl-C while `t3rl plan` writes its plan


def test_ctrl_c_during_plan_says_no_plan_is_left_not_that_stages_were_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C while `t3rl plan` wrote its stages' files. Was: 'stopped: stages that were running are
    recorded as stopped.' on stdout (among the plan's own output), of a command that runs no stage; the
    half-written plan dir was removed without a word. A `t3rl run` stopped keeps its line."""
    rec_config_dir(tmp_path, monkeypatch)

    def stopped_while_writing(*args: object, record: Callable[[], None], **kwargs: object) -> None:
        record()  # the record is written, then Ctrl-C lands before the stages' files are
        raise KeyboardInterrupt

    monkeypatch.setattr("launch.run.single.execute", stopped_while_writing)
    code = run_command(["+experiment=rec"], False, None, None, None, [str(tmp_path / "conf")], dry=True)
    out, err = capsys.readouterr()
    assert code == 130 and "stages that were running" not in out + err, out + err
    assert "stopped: interrupted by Ctrl-C or SIGTERM before the plan was written: no plan dir is left" in err
    assert not any((tmp_path / "plans").rglob("manifest.json")), list((tmp_path / "plans").rglob("*"))
    code = run_command(["+experiment=rec"], False, None, None, None, [str(tmp_path / "conf")], dry=False)
    assert code == 130 and "stages that were running are recorded as stopped" in capsys.readouterr().out


def test_ctrl_c_before_a_runs_record_is_written_says_nothing_is_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during a new run's pre-flight (before its record is whole). Was: 'stopped: stages that were
    running are recorded as stopped.', of a run dir then removed and stages never started."""
    rec_config_dir(tmp_path, monkeypatch)

    def stopped_at_preflight(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("launch.run.single.execute", stopped_at_preflight)
    code = run_command(["+experiment=rec"], False, None, None, None, [str(tmp_path / "conf")], dry=False)
    out, err = capsys.readouterr()
    assert code == 130 and "recorded as stopped" not in out + err and "resume with" not in out, out + err
    assert "before the run's record was written: no run dir is left and no stage ran" in err, err
    assert not any((tmp_path / "runs").rglob("manifest.json"))


# ------------------------------------------------ TAB after `t3rl ls GROUP `


def test_ls_completes_the_options_of_the_group_typed(tmp_path: Path) -> None:
    """`t3rl ls experiment <TAB>` (the OPTION argument `t3rl ls` takes since wave five). Was: nothing, so
    bash offered the working directory's files. Now GROUP's options, one's own config dir's too."""
    assert "quickstart" in complete("t3rl ls experiment ")
    assert complete("t3rl ls model qwen3_8") == ["qwen3_8b"]
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "my_own_model.yaml").write_text("name: mine\n")
    assert complete(f"t3rl ls --config-dir {tmp_path} model my_") == ["my_own_model"]
    assert complete("t3rl ls nosuch x") == []  # no such group: nothing, no traceback


def test_check_template_completes_its_model_options_and_chat_families() -> None:
    """`t3rl check-template <TAB>` (MODEL: a model option or a chat family). Was: the directory's files."""
    assert complete("t3rl check-template qwen3_8") == ["qwen3_8b"]
    offered = complete("t3rl check-template gl")
    assert "glm4_9b" in offered and "glm4" in offered, offered  # an option and a family


# ------------------------------------------------ help examples pasted from a terminal narrower than 80


@pytest.mark.parametrize("columns", ["60", "40"])
def test_help_examples_pasted_from_a_narrow_terminal_are_whole_commands(columns: str) -> None:
    """A split pane of 60 columns: `t3rl --help` wrapped `t3rl run -m +experiment=stage1_bfcl
    reward=progress,binary` after the experiment (the examples were laid out for 80 only); pasted, the
    block started that run without its sweep and then set a shell variable `reward`; `t3rl eval --help`'s
    comment left `settings` on a line of its own. Each example is now one `t3rl` command (continued with
    ` \\`) and each comment line a comment, at the width the help is printed at."""
    for path in ([], ["run"], ["eval"], ["plan"], ["runs", "diff"], ["data", "bfcl"], ["score"]):
        output = invoke([*path, "--help"], COLUMNS=columns).output
        block = output.partition("Examples:")[2].partition("╭")[0]
        assert block.strip() and all(len(line) <= int(columns) for line in block.splitlines()), output
        for command in pasted_examples(output):
            assert shlex.split(command.partition("  #")[0])[0] == "t3rl", f"{command!r} of\n{output}"


# ------------------------------------------------ t3rl typed in another checkout of t3rl


def test_t3rl_typed_in_another_checkout_says_whose_conf_it_composes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second clone, `conf/experiment/quickstart.yaml` edited there, `t3rl validate +experiment=quickstart`
    with the first clone's venv on PATH. Was: valid, not a word: the first clone's conf/ was composed and
    the edit changed nothing. Now a warning names both checkouts and the t3rl to run; in a subdirectory of
    the checkout that runs, or outside any checkout, nothing is said (no over-warning)."""
    clone = tmp_path / "clone two"
    (clone / "conf").mkdir(parents=True)
    (clone / "conf" / "config.yaml").write_text("defaults: []\n")
    (clone / "launch" / "cli").mkdir(parents=True)
    (clone / "docs").mkdir()
    monkeypatch.chdir(clone / "docs")
    result = invoke(["validate", "+experiment=quickstart"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert f"warning conf: the working directory is in the t3rl checkout {clone}, but this t3rl runs" in text
    assert f"cd '{clone}' && ./scripts/setup.sh && .venv/bin/t3rl" in text, text
    (clone / ".venv" / "bin").mkdir(parents=True)
    (clone / ".venv" / "bin" / "t3rl").write_text("")
    text = " ".join(invoke(["validate", "+experiment=quickstart"]).output.split())
    assert f"fix: run that checkout's own t3rl: '{clone}/.venv/bin/t3rl' … instead of t3rl" in text, text
    for elsewhere in (REPO / "docs", tmp_path):
        monkeypatch.chdir(elsewhere)
        assert "warning conf" not in invoke(["validate", "+experiment=quickstart"]).output


# ------------------------------------------------ other tools' words: a new experiment, a search, a clean-up


@pytest.mark.parametrize(
    ("word", "line"),
    [
        ("init", "`mkdir -p my_conf/experiment`"),
        ("new", "`t3rl validate --config-dir my_conf +experiment=NAME`"),
        ("search", "`t3rl run -m +experiment=NAME +hparams_search=SEARCH`"),
        ("sweep", "`t3rl run -m +experiment=NAME KEY=a,b`"),
        ("clean", "`rm -r RUN_DIR`"),
    ],
)
def test_another_tools_word_for_a_command_gets_the_line_that_does_it(word: str, line: str) -> None:
    """`t3rl init`, `t3rl search`, `t3rl clean`. Was: `No such command 'init'.`, and for clean Click's
    `Did you mean 'plan'?` (a command of another kind entirely)."""
    result = invoke([word])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and f"`t3rl` has no command '{word}'; use" in text and line in text, text
    assert "Did you mean" not in text, text


# ------------------------------------------------ an option naming something of the config: an example

# Metavars of options whose value is free text naming something of the config or a place (a stage, a
# key, a split, a URL, a glob): the help's words alone do not say what such a value looks like.
NAMED_BY_EXAMPLE = {"STAGE", "KEY", "SPLIT", "URL", "GLOB", "KEY=VALUE"}


def _options(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    for param in command.params:
        yield " ".join((*path, param.opts[0])), param
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _options(sub, (*path, name))


def test_every_option_naming_something_of_the_config_shows_an_example() -> None:
    """`t3rl run --help`: `--from STAGE  Rerun this stage …`, `--only STAGE  Run only this stage.`, `t3rl runs
    --metric KEY  The eval summary key shown per eval stage.`, `show --explain KEY`, `eval --url URL`, `eval
    --split SPLIT`: what a value looks like was said nowhere in the help. Each such option's help has an
    example (`e.g. --only eval_tiny`), also one added later (declared here by its metavar)."""
    bare = [
        where
        for where, param in _options(typer.main.get_command(app))
        if param.metavar in NAMED_BY_EXAMPLE and "e.g." not in (getattr(param, "help", None) or "")
    ]
    assert not bare, bare


# ------------------------------------------------ `t3rl runs` over many runs: each record file read once


def test_runs_reads_each_runs_config_and_summary_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl runs` over a thousand quickstart runs took 7 s of CPU (tens of seconds on a busy machine):
    each run's config.yaml was parsed twice (for its stages, then for --where) and each eval's summary.json
    read four times (the metric's check, each stage's reference, the row). Counted, not timed: each is now
    read once, and the listing says the same."""
    for index in range(3):
        run = tmp_path / "runs" / "quickstart" / f"2026010{index}-000000"
        (run / "stages" / "eval_tiny").mkdir(parents=True)
        (run / "config.yaml").write_text(
            yaml.safe_dump({"name": "quickstart", "stages": {"eval_tiny": {"kind": "eval"}}})
        )
        (run / "manifest.json").write_text(json.dumps({"record": "run"}))
        (run / "state.json").write_text(
            json.dumps({"stages": {"eval_tiny": {"status": "succeeded", "outputs": {}}}})
        )
        summary = {"overall": {"accuracy": index / 4, "tasks": 4}}
        (run / "stages" / "eval_tiny" / "summary.json").write_text(json.dumps(summary))
    reads: Counter[str] = Counter()

    def counted(read: Callable[..., Any]) -> Callable[..., Any]:
        def reader(path: Path, *args: Any) -> Any:
            reads[os.path.relpath(path, tmp_path)] += 1
            return read(path, *args)

        return reader

    import launch.cli.runs as runs
    import launch.cli.runs_configs as runs_configs

    # A listing parses config.yaml through its cache of parsed configs (wave eight), a run dir alone here.
    monkeypatch.setattr(runs_configs, "read_yaml", counted(runs_configs.read_yaml))
    monkeypatch.setattr(runs, "read_yaml", counted(runs.read_yaml))
    monkeypatch.setattr(runs, "read_summary", counted(runs.read_summary))
    monkeypatch.chdir(tmp_path)
    result = invoke(["runs"])
    assert result.exit_code == 0 and "3 runs in runs" in result.output, result.output
    assert "eval_tiny 0.500 (n=4)" in result.output, result.output
    assert len(reads) == 6 and set(reads.values()) == {1}, reads


# ------------------------------------------------ a model downloaded at the checkout, t3rl typed in docs/

# The fields of Qwen3-4B-Instruct-2507's config.json the checks compare with the model's config.
QWEN3_4B = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560,
    "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 36, "intermediate_size": 9728,
    "vocab_size": 151936, "head_dim": 128, "max_position_embeddings": 262144, "rope_theta": 5000000,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": True,
}  # fmt: skip


def test_a_model_dir_typed_relative_from_a_subdirectory_is_found_above(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The 4B model downloaded as the how-to says (`--local-dir models/…`, at the checkout), then `cd docs
    && t3rl validate +experiment=stage1_bfcl`. Was: 'models/Qwen3-4B-Instruct-2507 holds no config.json
    here', fix 'download it first (huggingface-cli download …)': a second download into docs/models.
    Now the directory above that holds it, as the fix (which clears the warning) or the cd."""
    model = tmp_path / "models" / "Qwen3-4B-Instruct-2507"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(QWEN3_4B))
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path / "docs")
    warned_with_a_fix_that_clears_it(
        ["+experiment=stage1_bfcl"], "model.hf_checkpoint", "holds no config.json here"
    )
    fix = next(
        b["fix"]
        for b in warnings_of(invoke(["validate", "+experiment=stage1_bfcl"], COLUMNS="400").output)
        if b["key"] == "model.hf_checkpoint"
    )
    assert (
        fix.startswith(f"set model.hf_checkpoint={model} (a relative path starts from")
        and "huggingface-cli" not in fix
    )
    monkeypatch.chdir(tmp_path)  # where it was downloaded: nothing to say
    assert "holds no config.json" not in invoke(["validate", "+experiment=stage1_bfcl"]).output


# ------------------------------------------------ a runs dir linked to a disk not mounted here


def test_a_runs_dir_linked_to_nothing_is_named_not_called_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`runs -> /scratch/…/runs` on a node where that scratch disk is not mounted. Was: `t3rl runs` 'no runs
    yet: runs does not exist' (exit 0) and `t3rl runs show` 'no runs yet', read as runs lost (`t3rl validate`
    named the link). Now the link and where it points, exit 1 (the runs cannot be read)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("T3RL_RUNS_DIR", raising=False)
    (tmp_path / "runs").symlink_to(tmp_path / "unmounted" / "runs")
    said = f"runs is a symbolic link to {tmp_path}/unmounted/runs, which does not exist here"
    result = invoke(["runs"])
    assert result.exit_code == 1 and said in " ".join(result.output.split()), result.output
    result = invoke(["runs", "show"])
    assert result.exit_code == 2 and said in " ".join(result.output.replace("│", " ").split()), result.output


# ------------------------------------------------ `t3rl ls` of a config dir with a group folder misspelt


def test_ls_names_a_group_folder_misspelt_with_the_mv_that_fixes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`mine/experimet/x1.yaml` (a typo) then `t3rl ls --config-dir mine`. Was: `experimet` listed as a
    config group with its option x1, and `choose another with GROUP=OPTION` (`+experiment=x1` is refused,
    since the folder is no group). Now the folder is named with the `mv` that fixes it; applied, x1 is an
    experiment that validates. A folder near no group of t3rl's (`ablation/`) is left alone."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine" / "experimet").mkdir(parents=True)
    (tmp_path / "mine" / "experimet" / "x1.yaml").write_text(
        "# @package _global_\ndefaults:\n  - quickstart\n  - _self_\nname: x1\n"
    )
    (tmp_path / "mine" / "ablation").mkdir()
    (tmp_path / "mine" / "ablation" / "a.yaml").write_text("x: 1\n")
    output = invoke(["ls", "--config-dir", "mine"]).output
    said = [line.strip() for line in output.splitlines() if "is no config group of t3rl's" in line]
    assert said == [
        "mine/experimet is no config group of t3rl's, so its files are never read as options of "
        "'experiment': mv mine/experimet mine/experiment"
    ], output
    subprocess.run(said[0].rpartition(": ")[2], shell=True, check=True, cwd=tmp_path)
    assert "x1" in invoke(["ls", "experiment", "--config-dir", "mine"]).output
    validates(["--config-dir", "mine", "+experiment=x1"])


# ------------------------------------------------ a setting by its initials, under its own section


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("hardware.tp=2", "hardware.tensor_parallel=2"),
        ("eval.lpc=3", "eval.limit_per_category=3"),
        ("eval.limit=3", "eval.limit_per_category=3"),
    ],
)
def test_a_setting_abbreviated_by_its_initials_is_its_own_sections(typed: str, meant: str) -> None:
    """`hardware.tp=2` (the TP of the training, as Megatron users say it). Was: `fix: set it where it
    lives: eval.server.tp=2`, SGLang's eval-server TP, another setting: applied, it validated and the
    training's TP stayed 1. Now the field of the section typed whose words' initials it is; applied, it
    validates."""
    base = "+experiment=stage1_bfcl" if typed.startswith("hardware") else "+experiment=quickstart"
    fix = fix_of(refused([base, typed]))
    assert fix == f"did you mean '{meant.partition('=')[0]}'? e.g. {meant}", fix
    validates([base, meant])


def test_a_setting_abbreviated_in_ones_file_is_renamed_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tp: 2` under `hardware:` in one's own experiment: the rename in the file, which then validates."""
    monkeypatch.chdir(tmp_path)
    experiment = tmp_path / "mine" / "experiment" / "hw.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(
        "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\nname: hw\nhardware:\n  tp: 2\n"
    )
    fix = fix_of(refused(["--config-dir", "mine", "+experiment=hw"]))
    rename = f"in {experiment.relative_to(tmp_path)}, rename `tp:` to `tensor_parallel:` (under hardware)"
    assert fix == f"did you mean 'hardware.tensor_parallel'? {rename}", fix
    experiment.write_text(experiment.read_text().replace("  tp: 2", "  tensor_parallel: 2"))
    validates(["--config-dir", "mine", "+experiment=hw"])
