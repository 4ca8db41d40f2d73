"""A fifth round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates:

- `t3rl runs --where lr=1e-6`: a filter on a key by its last names, which lives at
  `stages.train.curriculum.optimizer.lr`, answered with that place as an override's misplaced key is
  (`launch.config.misplaced_keys`); and a value typed as on a command line (`1e-6`) matches the recorded
  number, which YAML 1.1 read as the text '1e-6' and matched nothing;
- a reasoning parser where the model does not reason, or none where it does, decided from the model's
  declaration `model.thinks` (`launch/checks/rules/model.py`);
- a tracker run name every point of a sweep shares (a `tracking.run_name` typed beside the swept key,
  which the points now keep: it was replaced by each point's own name without a word), warned about
  before the sweep starts with the swept key interpolated as the fix (`launch/run/sweep_checks.py`);
- a list item YAML 1.1 reads otherwise than written (`[--weight-cache-mode, off]`, `[1, 010]`), refused at
  the list with the whole list as meant (`launch/config/yaml_readings.py`);
- two evals that differ only in the tokenizer's revision, now two benchmarks (`protocol.tokenizer_sha256`);
- kinds found by typing what a newcomer would: a name in the wrong case (`gpu_type=h100`), a SLURM time
  with a unit (`2h`), an interpolation cycle on the command line, a setting by its last name that only a
  schema default holds (`margin=0.0`).

Each refusal names the key, where it was set (the file, or the override) and a first fix that validates
when applied; the valid settings next to them are accepted. The config cases share the first round's
working directory and composition cache (a module-scoped fixture)."""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
import yaml
from test_preflight import _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.eval.identity import differences, remedy
from t3rl_core.eval.runner import run_eval
from tests.support.cli_app import invoke
from tests.support.eval_runs import bfcl_runtime, reference_config
from tests.support.fix_applier import apply_first_fix
from tests.support.tiny_stack import bfcl_rows

S1 = "+experiment=stage1_bfcl"
C = "stages.train.curriculum"

data = first_round.data

# ------------------------------------------------------------------ t3rl runs --where on a misplaced key


def _a_run(root: Path, name: str, lr: float) -> None:
    """A planned run's record: the config with the learning rate where t3rl writes it."""
    path = root / name / "20260101-000000"
    path.mkdir(parents=True)
    config = {"name": name, "reward": {"name": "progress"}, "stages": {"train": {"curriculum": {}}}}
    config["stages"]["train"]["curriculum"]["optimizer"] = {"lr": lr}
    (path / "config.yaml").write_text(yaml.safe_dump(config))
    stages = {"train": {"status": "succeeded", "fingerprint": "f", "run_id": "1"}}
    (path / "state.json").write_text(json.dumps({"version": 1, "stages": stages}))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    _a_run(root, "low", 1e-6)
    _a_run(root, "high", 2e-6)
    return root


@pytest.mark.parametrize("typed", ["lr", "optimizer.lr", "train.lr", "curriculum.optimizer.lr"])
def test_a_where_key_by_its_last_names_gets_the_place_it_lives_at(typed: str, runs: Path) -> None:
    result = invoke(["runs", "--runs-dir", str(runs), "--where", f"{typed}=1e-6"])
    assert result.exit_code == 2, result.output
    fix = f"--where {C}.optimizer.lr=1e-6"
    assert f"no run's config has the key '{typed}'; it is at {C}.optimizer.lr: {fix}" in result.output
    fixed = invoke(["runs", "--runs-dir", str(runs), *fix.split()])
    assert fixed.exit_code == 0 and "1 run in" in fixed.output and "low" in fixed.output, fixed.output


@pytest.mark.parametrize("op", ["!=", ">="])
def test_a_where_key_moved_keeps_the_comparison_typed(op: str, runs: Path) -> None:
    result = invoke(["runs", "--runs-dir", str(runs), "--where", f"lr{op}2e-6"])
    assert f"it is at {C}.optimizer.lr: --where {C}.optimizer.lr{op}2e-6" in result.output, result.output


@pytest.mark.parametrize(("typed", "listed"), [("1e-6", "low"), ("0.000002", "high"), ("2.0e-06", "high")])
def test_a_where_value_matches_the_number_it_denotes_in_any_notation(
    typed: str, listed: str, runs: Path
) -> None:
    """`1e-6` is the text '1e-6' to YAML 1.1 (no dot), so it matched no run's 1e-06."""
    result = invoke(["runs", "--runs-dir", str(runs), "--where", f"{C}.optimizer.lr={typed}"])
    assert result.exit_code == 0 and "1 run in" in result.output and listed in result.output, result.output


def test_a_misspelt_where_key_still_gets_the_nearest_key(runs: Path) -> None:
    result = invoke(["runs", "--runs-dir", str(runs), "--where", "reward.nme=progress"])
    assert result.exit_code == 2 and "did you mean 'reward.name'" in result.output, result.output


# ------------------------------------------------------ a reasoning parser where the model reasons

V3_LAYOUT = [
    "hardware.nodes=32",
    "hardware.tensor_parallel=4",
    "hardware.expert_parallel=256",
    "executor=slurm",
    "hardware.recompute.num_layers=1",  # chunks that divide its 61 layers (launch/checks/rules/megatron.py)
]
PARSER = "model.parsers.reasoning_parser"
THINKING_OFF = "+model.chat.chat_template_kwargs.enable_thinking=false"
# (id, overrides, key refused, a fragment of the message, the first fix)
REASONING = [
    (
        "a_thinking_model_without_a_reasoning_parser",
        [S1, "model=qwen3_8b", "model.parsers.reasoning_parser=null"],
        "model.parsers.reasoning_parser",
        "writes a reasoning block before its answers by itself, but neither",
        "set model.parsers.reasoning_parser=qwen3",
    ),
    (
        "a_forced_parser_on_a_model_that_does_not_reason",
        [S1, "model.parsers.think_tags=null"],
        "model.parsers.think_tags",
        "reasoning parser 'qwen3-thinking' reads a reply up to its end tag as reasoning even when no block "
        "was opened, but Qwen/Qwen3-4B-Instruct-2507 (model.thinks: false) writes no reasoning unasked",
        "set model.parsers.reasoning_parser=null",
    ),
    (
        "an_r1_parser_on_deepseek_v3",
        [S1, "model=deepseek_v3", "model.parsers.reasoning_parser=deepseek-r1", *V3_LAYOUT],
        "model.parsers.reasoning_parser",
        "deepseek-ai/DeepSeek-V3 (model.thinks: false) writes no reasoning unasked",
        "set model.parsers.reasoning_parser=null",
    ),
    (
        "thinking_switched_off_under_a_forced_parser",
        [S1, "model=qwen3_8b", f"{PARSER}=qwen3-thinking", THINKING_OFF],
        "model.chat.chat_template_kwargs.enable_thinking",
        "thinking is switched off (enable_thinking: false)",
        "set model.parsers.reasoning_parser=null",
    ),
    (
        "a_thinking_model_with_its_parser_taken_off",
        ["+experiment=hub_env_grpo", "model=qwen3_8b", f"{PARSER}=null"],
        "model.parsers.reasoning_parser",
        "Qwen/Qwen3-8B (model.thinks: true) writes a reasoning block",
        "set model.parsers.reasoning_parser=qwen3",
    ),
]
REASONING_AS_MEANT = [
    ("t3rl_prompted_thinking", [S1]),
    ("a_thinking_model_with_its_parser", [S1, "model=qwen3_8b"]),
    ("thinking_switched_off_without_a_parser", [S1, "model=qwen3_8b", f"{PARSER}=null", THINKING_OFF]),
    ("an_instruct_model_without_a_parser", ["+experiment=tau2_pipeline"]),
    # the experiment chose the plain 2507 option: a model swapped in brings its own parsers
    ("a_thinking_model_swapped_in", ["+experiment=hub_env_grpo", "model=qwen3_8b"]),
    # ReTool reads code blocks its own way: no parser splits its text
    (
        "retool_reads_no_reasoning_parser",
        ["+experiment=retool", "model.thinks=false", f"{PARSER}=qwen3-thinking"],
    ),
    ("a_hub_environment_on_the_instruct_model", ["+experiment=hub_env_grpo"]),
]


@pytest.mark.parametrize(
    ("overrides", "key", "message", "fix"), [c[1:] for c in REASONING], ids=[c[0] for c in REASONING]
)
def test_a_reasoning_parser_that_does_not_fit_the_model_is_refused(
    overrides: list[str], key: str, message: str, fix: str, data: Path
) -> None:
    block = refused_with_a_fix_that_validates(overrides, key, message)
    assert block["fix"].startswith(fix), block


@pytest.mark.parametrize(
    "overrides", [c[1] for c in REASONING_AS_MEANT], ids=[c[0] for c in REASONING_AS_MEANT]
)
def test_reasoning_parsers_that_fit_the_model_are_accepted(overrides: list[str], data: Path) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0, out


# ------------------------------------------------------------ a run name every point of a sweep shares

_SHARED = "every point of the sweep names its wandb run 'myrun'"


@pytest.mark.parametrize(
    ("swept", "fix"),
    [
        ("reward=progress,binary", "'tracking.run_name=myrun-${reward.name}'"),
        (f"{C}.optimizer.lr=1e-6,2e-6", f"'tracking.run_name=myrun-${{{C}.optimizer.lr}}'"),
    ],
)
def test_a_run_name_every_point_shares_is_warned_with_the_swept_key_in_it(
    swept: str, fix: str, data: Path
) -> None:
    args = [S1, "tracking=wandb", "tracking.run_name=myrun", swept]
    code, out = _invoke("validate", "-m", *args)
    assert code == 0, out
    assert f"warning tracking.run_name: {_SHARED}" in out, out
    assert "set in: override `tracking.run_name=myrun`" in out, out
    fix_line = out.split(f"warning tracking.run_name: {_SHARED}", 1)[1].split("fix: ", 1)[1].splitlines()[0]
    assert fix_line.startswith(f"{fix} (a name per point)"), out
    # pasted into a shell, as the fix is quoted for one
    typed = shlex.split(fix_line.split(" (", 1)[0])
    code, out = _invoke(
        "validate", "-m", *[a for a in args if not a.startswith("tracking.run_name=")], *typed
    )
    assert code == 0 and _SHARED not in out and "names its wandb run" not in out, out


def test_each_point_keeps_its_own_run_name_when_none_is_typed(data: Path) -> None:
    code, out = _invoke("validate", "-m", S1, "tracking=wandb", "reward=progress,binary")
    assert code == 0 and "names its wandb run" not in out, out


# ------------------------------------------------------------- YAML 1.1 readings of a list's items

_BASE = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - _self_\n"
# (id, the experiment file's own lines, key, message, fix)
LIST_ITEMS = [
    (
        "a_boolean_word_in_a_flow_list_of_text",
        "eval:\n  server:\n    extra_args: [--weight-cache-mode, off]\n",
        "eval.server.extra_args",
        "`off` (item 1 of the list) written unquoted is a boolean false to Hydra's YAML 1.1 loader, "
        "not the text off",
        "set eval.server.extra_args=[--weight-cache-mode,'off'] (quote it in the file)",
    ),
    (
        "a_boolean_word_in_a_block_list_of_text",
        "eval:\n  server:\n    extra_args:\n      - --weight-cache-mode\n      - off\n",
        "eval.server.extra_args",
        "is a boolean false",
        "set eval.server.extra_args=[--weight-cache-mode,'off']",
    ),
    (
        "a_leading_zero_in_a_list_of_numbers",
        "eval:\n  samples: 16\n  temperature: 1.0\n  pass_k: [1, 010]\n",
        "eval.pass_k",
        "`010` (item 1 of the list) written unquoted is the octal number 8 to Hydra's YAML 1.1 loader, "
        "not the number 10",
        "set eval.pass_k=[1,10] (write it as a plain decimal in the file)",
    ),
]


@pytest.mark.parametrize(
    ("lines", "key", "message", "fix"), [c[1:] for c in LIST_ITEMS], ids=[c[0] for c in LIST_ITEMS]
)
def test_a_list_item_yaml_reads_otherwise_than_written_is_refused_with_the_list_as_fix(
    lines: str, key: str, message: str, fix: str, data: Path, tmp_path: Path
) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(_BASE + lines)
    args = ["--config-dir", str(tmp_path), "+experiment=mine"]
    code, out = _invoke("validate", *args)
    assert code == 2 and re.search(rf"^error {re.escape(key)}: .*{re.escape(message)}", out, re.M), out
    assert f"set in: {tmp_path / 'experiment' / 'mine.yaml'}" in out and f"fix: {fix}" in out, out
    fixed = apply_first_fix(args, {"message": message, "source": "", "fix": fix})
    assert fixed is not None
    code, out = _invoke("validate", *fixed)
    assert code == 0, out


@pytest.mark.parametrize(
    "lines",
    [
        "eval:\n  server:\n    extra_args: [--weight-cache-mode, 'off']\n",  # quoted: the text
        "eval:\n  samples: 16\n  temperature: 1.0\n  pass_k: [1, 2, 10]\n",
    ],
)
def test_list_items_written_as_meant_are_accepted(lines: str, data: Path, tmp_path: Path) -> None:
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(_BASE + lines)
    code, out = _invoke("validate", "--config-dir", str(tmp_path), "+experiment=mine")
    assert code == 0, out


def test_an_overrides_boolean_words_in_a_list_are_the_text_written(data: Path) -> None:
    """Hydra's grammar, not YAML's: `[--weight-cache-mode,off]` on the command line is two strings."""
    code, out = _invoke("validate", S1, "eval.server.extra_args=[--weight-cache-mode,off]")
    assert code == 0, out


# ---------------------------------------------------------- the tokenizer's revision in the identity


def _eval_identity(out: Path, tokenizer: Path) -> dict:
    """The identity of the scripted reference engine's eval of one BFCL task per category, the runtime's
    tokenizer the directory given."""
    runtime = bfcl_runtime()
    runtime = runtime.model_copy(
        update={"chat": runtime.chat.model_copy(update={"tokenizer": str(tokenizer)})}
    )
    config = reference_config(concurrency=1)
    return asyncio.run(run_eval(runtime, config, bfcl_rows(per_category=1), out, show_progress=False))[
        "identity"
    ]


def test_evals_that_differ_only_in_the_tokenizers_revision_are_two_benchmarks(tmp_path: Path) -> None:
    """The same model's tokenizer at another hub revision (here: its tokenizer_config.json changed, under
    the same directory name) tokenizes otherwise; the identity left the tokenizer out, so the two evals
    were ranked side by side."""
    shipped = Path(shared_tokenizer_dir("qwen3"))
    revisions = [tmp_path / "a" / "tokenizer", tmp_path / "b" / "tokenizer"]
    for copy in revisions:
        shutil.copytree(shipped, copy)
    config = json.loads((revisions[1] / "tokenizer_config.json").read_text())
    (revisions[1] / "tokenizer_config.json").write_text(json.dumps(config | {"model_max_length": 4096}))
    first, second = (_eval_identity(tmp_path / f"eval{i}", d) for i, d in enumerate(revisions))
    found = differences(first, second)
    assert [part.split(" ", 2)[:2] for part in found] == [["protocol:", "tokenizer_sha256"]], found
    assert "tokenizer files (the same hub revision)" in remedy(found)
    # one revision in two places is one benchmark
    assert differences(first, _eval_identity(tmp_path / "eval_shipped", shipped)) == []


# --------------------------------------------------- a choice in the wrong case, a duration with a unit


def test_a_choice_typed_in_the_wrong_case_gets_that_choice(data: Path) -> None:
    """`h100` was as near to V100 and A100 as to H100 for difflib, which named V100 first."""
    out = invoke(["validate", S1, "hardware=h100x8", "hardware.gpu_type=h100"], COLUMNS="400").output
    assert "fix: set hardware.gpu_type=H100" in out, out
    code, out = _invoke("validate", S1, "hardware=h100x8", "hardware.gpu_type=H100")
    assert code == 0 and "gpu_type" not in out, out


@pytest.mark.parametrize(
    ("typed", "meant"),
    [("2h", "02:00:00"), ("90min", "01:30:00"), ("1.5d", "1-12:00:00"), ("45 s", "00:00:45")],
)
def test_a_slurm_time_limit_typed_with_a_unit_gets_the_same_duration(
    typed: str, meant: str, data: Path
) -> None:
    """SLURM reads no unit (a bare number is minutes); the fix was the key's old value (24:00:00)."""
    args = [S1, "executor=slurm", f"executor.time_limit={typed}"]
    block = refused_with_a_fix_that_validates(args, "executor.time_limit", "not a unit")
    assert block["fix"].startswith(f"set executor.time_limit={meant} (the value typed"), block


@pytest.mark.parametrize(
    ("overrides", "key"),
    [
        (["name=${name}"], "name"),
        (
            ["tracking=wandb", "tracking.project=${tracking.group}", "tracking.group=${tracking.project}"],
            None,
        ),
    ],
    ids=["a_key_reading_itself", "two_keys_reading_each_other"],
)
def test_an_interpolation_cycle_typed_on_the_command_line_is_dropped_as_the_fix(
    overrides: list[str], key: str | None, data: Path
) -> None:
    """It was 'fix the ${...} interpolation (it must name an existing key …)': no override to type."""
    block = refused_with_a_fix_that_validates([S1, *overrides], key or "tracking.project", "Recursive")
    assert block["fix"].startswith(f"drop `{overrides[-1] if key else overrides[1]}`"), block


@pytest.mark.parametrize(
    ("args", "key", "fix"),
    [
        ([S1, "eval.categories=multi_turn_base"], "eval.categories", "set eval.categories=[multi_turn_base]"),
        (["+experiment=tau2_pipeline", "env.domains=retail"], "env.domains", "set env.domains=[retail]"),
    ],
)
def test_one_item_typed_for_a_list_gets_the_list_of_it(
    args: list[str], key: str, fix: str, data: Path
) -> None:
    """The fix was the key's old value (all categories, every domain): what was typed was dropped."""
    block = refused_with_a_fix_that_validates(args, key, "Input should be a valid list")
    assert block["fix"].startswith(f"{fix} (the value typed"), block


def test_a_list_typed_for_one_value_names_the_sweep_it_may_mean(data: Path) -> None:
    """`seed=[1,2]` for two runs: the answer said only that a seed is a whole number."""
    block = refused_with_a_fix_that_validates([S1, "seed=[1,2]"], "seed", "a run per value is a sweep")
    assert "(`t3rl run -m … seed=1,2`)" in block["message"], block
    code, out = _invoke("validate", "-m", S1, "seed=1,2")
    assert code == 0, out
