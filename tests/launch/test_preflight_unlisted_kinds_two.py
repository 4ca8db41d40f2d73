"""A second round of kinds of mistakes no issue listed, each refused (or, where only suspicious, warned
about) by a declaration it violates: seeds slime derives beyond numpy's domain, a slime flag passed
through that t3rl's own key decides, values far outside their field's usual range, weights normalised
by a sum of zero, greedy repeats, an eval's prompts over its token budget, relative paths read from a
stage's directory, GPU stages run here on a machine without GPUs. Each refusal names the key and a
first fix that validates; the valid settings next to them are accepted."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
import test_preflight_unlisted_kinds as first_round
import yaml
from test_preflight import _errors, _invoke
from test_preflight_slime_kinds import refused_with_a_fix_that_validates

from launch.checks.rules import eval_load, kinds
from launch.config.schema import ServiceConfig
from launch.plan.anchored_paths import anchored
from launch.plan.services import wrap
from launch.plan.stages import Stage
from t3rl_core.fields import Label, LocalPath, ModelRef, OutputDir, PathComponent, TemplateRef
from t3rl_core.strict import StrictModel
from tests.support.fix_applier import apply_first_fix

S1 = "+experiment=stage1_bfcl"
TAU2 = "+experiment=tau2_pipeline"
# ReTool on problems of 10002 words ({data}: the first round's files, test_preflight_unlisted_kinds.data).
VERY_LONG = [
    "+experiment=retool",
    "env.data.source={data}/very_long.jsonl",
    "env.data.sft_source={data}/sft.jsonl",
]
X = "model.architecture.extra_args"

# (id, overrides, key named, a fragment of the message)
BAD = [
    (
        "seed_past_numpy_for_a_pipeline_rank",
        [S1, "seed=4294967295", "hardware.pipeline_parallel=2"],
        "seed",
        "Megatron seeds pipeline rank 1 with seed + 100",
    ),
    (
        "seed_past_numpy_for_an_engine",
        [S1, "seed=4294967290"],
        "seed",
        "slime seeds SGLang engine 7",
    ),
    (
        "seed_past_numpy_for_a_data_parallel_rank",
        [S1, "seed=4294967190", "hardware.pipeline_parallel=2", f"{X}=[--data-parallel-random-init]"],
        "seed",
        "+ 10 × data-parallel rank 1",
    ),
    (
        "slime_context_cap_beside_the_episode_cap",
        [S1, f"{X}=[--rollout-max-context-len,'32768']"],
        X,
        "caps each episode at its stage's max_context_len (train: null",
    ),
    (
        "slime_eval_context_cap_beside_the_episode_cap",
        [S1, f"{X}=['--eval-max-context-len=20000']", "stages.train.curriculum.max_context_len=32768"],
        X,
        "(train: 32768",
    ),
    (
        "eval_prompts_over_the_evals_token_budget",
        [*VERY_LONG, "eval.max_new_tokens=35000"],
        "eval.max_new_tokens",
        "(eval split retool_test) hold at least 5960 tokens (their words alone): with 35000 tokens per call",
    ),
    (
        "eval_category_named_twice",
        [S1, "eval.categories=[multi_turn_base,multi_turn_miss_func,multi_turn_base]"],
        "eval.categories",
        "names multi_turn_base more than once: it is a set",
    ),
    ("pass_k_named_twice", [S1, "eval.pass_k=[1,1]"], "eval.pass_k", "names 1 more than once"),
    (
        "partial_weights_all_zero",
        [TAU2, *(f"reward.partial_weights.{w}=0" for w in ("action", "communicate", "env_assertion"))],
        "reward.partial_weights.env_assertion",
        "every weight of reward.partial_weights is 0",
    ),
    (
        "a_domains_partial_weights_all_zero",
        [
            TAU2,
            *(
                f"reward.domain_partial_weights.telecom.{w}=0"
                for w in ("env_assertion", "action", "communicate")
            ),
        ],
        "reward.domain_partial_weights.telecom.communicate",
        "they weigh a mean, divided by their sum",
    ),
]

UNUSUAL = [
    ("seed_at_the_top_of_its_room", [S1, "seed=4294967239"]),
    (
        "slime_context_cap_that_is_the_episode_cap",
        [S1, f"{X}=[--rollout-max-context-len,'32768']", "stages.train.curriculum.max_context_len=32768"],
    ),
    ("seed_near_the_top_without_random_init", [S1, "seed=4294967190", "hardware.pipeline_parallel=2"]),
    ("eval_prompts_under_the_evals_token_budget", [*VERY_LONG, "eval.max_new_tokens=30957"]),
    ("eval_categories_each_once", [S1, "eval.categories=[multi_turn_miss_func,multi_turn_base]"]),
    ("server_setting_of_a_started_server", [S1, "eval.server.tp=2"]),
    ("kl_coefficient_strong", [S1, "stages.train.curriculum.algorithm.kl_loss_coef=0.5"]),
    ("gpus_of_a_sixteen_gpu_node", [S1, "hardware.gpus_per_node=16", "hardware.node_gpus=16"]),
    (
        "partial_weights_one_left",
        [TAU2, "reward.partial_weights.action=0", "reward.partial_weights.communicate=0"],
    ),
    ("eval_concurrency_at_the_engines", [S1, "eval.concurrency=64"]),
    ("rollout_temperature_high_but_usual", [S1, "stages.train.curriculum.rollout_temperature=1.5"]),
    ("largest_seed_without_slime", ["+experiment=quickstart", "seed=4294967295"]),
]


# (id, overrides, key warned about, a fragment of the message): valid, but almost never meant
WARNED = [
    (
        "rollout_temperature_of_a_typo",
        [S1, "stages.train.curriculum.rollout_temperature=50"],
        "stages.train.curriculum.rollout_temperature",
        "is 50, far above the usual at most 2",
    ),
    (
        "eval_concurrency_above_the_engines",
        [S1, "eval.concurrency=100000"],
        "eval.concurrency",
        "the engine sends at most eval.engine.concurrency 64 requests at once",
    ),
    (
        "gpus_of_a_node_past_any_board",
        [S1, "+stages.train.hardware.gpus_per_node=32", "hardware.node_gpus=32"],
        "stages.train.hardware.gpus_per_node",
        "is 32, far above the usual at most 16",
    ),
    (
        "kl_coefficient_of_a_typo",
        [S1, "stages.train.curriculum.algorithm.kl_loss_coef=100"],
        "stages.train.curriculum.algorithm.kl_loss_coef",
        "above 1 the regulariser outweighs the reward",
    ),
    (
        "server_setting_with_a_running_server",
        [S1, "eval.engine.url=http://127.0.0.1:30000", "eval.server.tp=4"],
        "eval.server.tp",
        "no eval stage starts an SGLang server from eval.server",
    ),
    (
        "tracker_setting_without_a_tracker",
        ["+experiment=quickstart", "tracking.kind=none", "tracking.project=mine"],
        "tracking.project",
        "tracking.kind is none: no tracker reads it",
    ),
    ("eval_temperature_of_a_typo", [S1, "eval.temperature=70"], "eval.temperature", "far above the usual"),
    (
        "user_temperature_of_a_typo",
        ["+experiment=tau2_pipeline", "env.user.temperature=50"],
        "env.user.temperature",
        "OpenAI's chat API refuses more than 2",
    ),
]


# The first round's fixture (a working directory, a composition cache, its dataset files) and filler.
data = first_round.data
_filled = first_round._filled


# Each kind refused, and each valid setting next to one (key None) accepted.
CASES = first_round.bad_and_unusual(BAD, UNUSUAL)


@pytest.mark.parametrize(("overrides", "key", "message"), CASES)
def test_refused_with_a_fix_that_validates_or_accepted(
    overrides: list[str], key: str | None, message: str, data: Path
) -> None:
    args = _filled(overrides, data)
    if key is not None:
        refused_with_a_fix_that_validates(args, key, message)
        return
    code, out = _invoke("validate", *args)
    assert code == 0, out


def test_a_relative_dataset_path_means_the_file_validate_probed(data: Path) -> None:
    """A stage runs in its own directory: a relative path in its runtime config was looked up there, so
    the file `t3rl validate` had read was missing when the data stage ran. Relative paths of a path
    kind are anchored at the launcher's directory when the stage's files are written."""
    (Path.cwd() / "mine").mkdir(exist_ok=True)
    shutil.copy(data / "short.jsonl", Path.cwd() / "mine" / "problems.jsonl")
    shutil.copy(data / "sft.jsonl", Path.cwd() / "mine" / "sft.jsonl")
    args = [
        "+experiment=retool",
        "env.data.source=mine/problems.jsonl",
        "env.data.sft_source=mine/sft.jsonl",
        f"paths.runs_dir={Path.cwd() / 'runs'}",
    ]
    code, out = _invoke("run", *args, "--only", "data")
    assert code == 0, out
    (runtime,) = Path.cwd().glob("runs/retool/*/runtime/data.yaml")
    assert f"source: {Path.cwd() / 'mine' / 'problems.jsonl'}" in runtime.read_text()


class _Section(StrictModel):
    one: LocalPath
    many: list[LocalPath]
    named: dict[PathComponent, LocalPath]
    maybe: LocalPath | None = None
    out: OutputDir = "out"
    label: Label = "data/x"
    template: TemplateRef = "mine.jinja"
    shipped: TemplateRef = "qwen3"
    model: ModelRef = "models/mine"
    hub: ModelRef = "Qwen/Qwen3-4B"


class _Outer(StrictModel):
    inner: _Section
    home: LocalPath = "~/x"


def test_paths_of_a_path_kind_are_anchored_alone_in_lists_and_in_maps(tmp_path: Path) -> None:
    (tmp_path / "models" / "mine").mkdir(parents=True)
    section = _Section(one="a.jsonl", many=["b", "/abs/c"], named={"train": "d.parquet"}, maybe="e")
    got = anchored(_Outer(inner=section), tmp_path)
    assert got.inner.one == str(tmp_path / "a.jsonl")
    assert got.inner.many == [str(tmp_path / "b"), "/abs/c"]
    assert got.inner.named == {"train": str(tmp_path / "d.parquet")}
    assert (got.inner.maybe, got.inner.out) == (str(tmp_path / "e"), str(tmp_path / "out"))
    assert (got.inner.label, got.home) == ("data/x", "~/x")  # a label is no path; ~ expands where read
    # a template file and a model directory here are paths; a shipped name and a hub id are not
    assert (got.inner.template, got.inner.shipped) == (str(tmp_path / "mine.jinja"), "qwen3")
    assert (got.inner.model, got.inner.hub) == (str(tmp_path / "models/mine"), "Qwen/Qwen3-4B")


@pytest.mark.parametrize(("gpus", "refused"), [(0, True), (4, True), (8, False), (None, False)])
def test_gpu_stages_run_here_need_this_machines_gpus(
    gpus: int | None, refused: bool, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl run` under the local executor refuses, before any stage starts, a stage claiming more GPUs
    than this machine shows (validate does not judge it: a GPU plan is validated on a CPU machine)."""
    monkeypatch.setattr(kinds, "visible_cuda_gpus", lambda: gpus)
    runs = Path.cwd() / f"gpu-runs-{gpus}"
    code, out = _invoke("run", S1, f"paths.runs_dir={runs}")
    assert code != 0, out  # the slime checkout and the model are missing here either way
    assert "nothing was started" in out and "executor=slurm" in out, out
    said = "stage train needs 8 GPU(s), but this machine " in out
    assert said == refused, out
    assert not list(runs.glob("*/*/stages/*/log.txt")), "a stage started"
    assert _invoke("validate", S1)[0] == 0


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_a_value_far_above_its_usual_range_is_warned(
    overrides: list[str], key: str, message: str, data: Path
) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
    (line,) = [line for line in out.splitlines() if line.startswith(f"warning {key}: ")]
    assert message in line, out


@pytest.mark.parametrize(("limit", "refused"), [(1024, True), (1030, False), (4096, False)])
def test_connections_in_flight_past_the_open_files_limit_are_refused(
    limit: int, refused: bool, data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1024 requests in flight need 1024 sockets besides the standard streams: with `ulimit -n` 1024 the
    eval fails once under way; within the margin of the interpreter's own files it is warned about."""
    monkeypatch.setattr(eval_load, "open_files_limit", lambda: limit)
    args = [S1, "eval.concurrency=1024", "eval.engine.concurrency=1024"]
    code, out = _invoke("validate", *args)
    if not refused:
        assert code == 0, out
        assert ("warning eval.engine.concurrency: up to 1024" in out) == (limit < 1024 + 64), out
        return
    (error,) = [e for e in _errors(out) if e["key"] == "eval.engine.concurrency"]
    assert "'Too many open files'" in error["message"], out
    fixed = apply_first_fix(args, error)
    assert fixed is not None and _invoke("validate", *fixed)[0] == 0, error
    assert _invoke("validate", *args, "executor=slurm")[0] == 0  # the eval runs on the cluster


def test_an_hf_engine_model_missing_here_is_refused_before_any_stage(data: Path) -> None:
    """The quickstart's HF eval engine on a model directory that is not here failed at its eval stage,
    after data, model and the reference eval ran: validate warns, run refuses before starting any."""
    args = ["+experiment=quickstart", "stages.eval_tiny.eval.engine.model_path=nosuch/model"]
    code, out = _invoke("validate", *args)
    assert code == 0 and "warning stages.eval_tiny.eval.engine.model_path: nosuch/model holds no" in out, out
    runs = Path.cwd() / "hf-runs"
    code, out = _invoke("run", *args, f"paths.runs_dir={runs}")
    assert code != 0 and "nothing was started" in out, out
    assert f"{Path.cwd() / 'nosuch' / 'model' / 'config.json'} is missing (needed by eval_tiny)" in out, out
    assert not list(runs.glob("*/*/stages/*/log.txt")), "a stage started"


@pytest.mark.parametrize(("given", "local"), [("models/user", True), ("Qwen/Qwen3-4B-Instruct-2507", False)])
def test_a_services_relative_model_dir_is_anchored_a_hub_id_kept(
    given: str, local: bool, tmp_path: Path
) -> None:
    """A service starts in its stage's directory: a local model directory given relative is anchored
    where t3rl started; a hub id (no such directory here) is passed on as it is."""
    (tmp_path / "models" / "user").mkdir(parents=True)
    service = ServiceConfig(model_path=given)
    stage = wrap(Stage("s", "eval", ("true",)), [("user", service)], sys.executable, "/run", tmp_path)
    (text,) = [t for p, t in stage.files.items() if p.endswith(".service.yaml")]
    assert yaml.safe_load(text)["model_path"] == (str(tmp_path / given) if local else given)


def test_a_relative_tracking_dir_is_where_t3rl_runs(data: Path) -> None:
    """slime runs from its checkout: a relative tracking.dir was its own directory there, while the
    launcher's tracker wrote beside the user. Both get the one directory, from where t3rl runs."""
    out = Path.cwd() / "tb-plan"
    code, text = _invoke("plan", S1, "tracking.kind=tensorboard", "tracking.dir=tb", "--out", str(out))
    assert code == 0, text
    assert f'"TENSORBOARD_DIR": "{Path.cwd() / "tb"}"' in (out / "plan.sh").read_text()


def test_gpu_stages_ray_runs_here_need_this_machines_gpus(
    data: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under Ray's other_stages: local the conversion and the eval's server run here; the train stage,
    on the cluster, is not judged by this machine."""
    monkeypatch.setattr(kinds, "visible_cuda_gpus", lambda: 0)
    runs = Path.cwd() / "ray-gpu-runs"
    args = [S1, "executor=ray", "executor.address=http://127.0.0.1:9", f"paths.runs_dir={runs}"]
    code, out = _invoke("run", *args)
    assert code != 0 and "nothing was started" in out, out
    assert "stage to_torch_dist needs 1 GPU(s), but this machine has no CUDA GPU" in out, out
    assert "stage eval needs 1 GPU(s)" in out and "stage train needs" not in out, out
