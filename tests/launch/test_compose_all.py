"""Every option of every config group, and every experiment, composes and validates.

Options are discovered from the conf/ directory, so a new YAML file is covered without editing this
test. A group the primary config selects is swapped with `group=option`; a group that is only mounted
elsewhere (curriculum under a train stage) is swapped at the mount point an experiment uses.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.compose import compose
from launch.config.errors import ConfigError

CONF = Path(__file__).resolve().parents[2] / "conf"
OPTIONAL = {"experiment", "hparams_search"}


def _options() -> list[tuple[str, str]]:
    return sorted(
        (path.parent.name, path.stem) for path in CONF.glob("*/*.yaml") if path.parent.name != "local"
    )


def _experiments() -> list[str]:
    return sorted(path.stem for path in (CONF / "experiment").glob("*.yaml"))


@cache
def _choices(experiment: str) -> dict[str, str | None]:
    return compose([f"+experiment={experiment}"]).choices


@cache
def _primary_groups() -> frozenset[str]:
    """The groups the primary config selects (composed once, not once per option)."""
    return frozenset(compose([]).choices)


def _selections(group: str, option: str) -> list[tuple[list[str], str]]:
    """Ways to select `option` of `group`, each with the key under which the composition records the
    choice: on the primary config, or on an experiment that uses the group (an option may fit only
    there, e.g. a tau2 customer needs the tau2 env) or mounts it (a curriculum under a train stage)."""
    if group == "experiment":
        return [([f"+experiment={option}"], group)]
    if group == "hparams_search":
        return [(["+experiment=stage1_bfcl", f"hparams_search={option}"], group)]
    ways = [([f"{group}={option}"], group)] if group in _primary_groups() else []
    if group == "hardware":  # a multi-node layout needs an executor that starts Ray on every node
        ways.append(([f"{group}={option}", "executor=slurm"], group))
    mounts = [
        (chosen != option, [f"+experiment={experiment}", f"{key}={option}"], key)
        for experiment in _experiments()
        for key, chosen in _choices(experiment).items()
        if key.split("@")[0] == group and (chosen is not None or "@" in key)
    ]
    # Experiments that choose the option themselves first: each failing context costs a resolve.
    return ways + [(overrides, key) for _, overrides, key in sorted(mounts, key=lambda mount: mount[0])]


def test_discovery_sees_every_group() -> None:
    groups = {group for group, _ in _options()}
    assert {"model", "hardware", "curriculum", "env", "reward", "executor", "tracking", "paths"} <= groups
    assert {"stage1_bfcl", "stage2_bfcl", "bfcl_env_tuning"} <= set(_experiments())


@pytest.mark.parametrize(("group", "option"), _options())
def test_every_option_composes_and_validates(group: str, option: str) -> None:
    """Each option validates in at least one context (the primary config first)."""
    failures = []
    for overrides, choice in _selections(group, option):
        try:
            resolved = resolve(overrides)
        except ConfigError as error:
            failures.append(f"{overrides}:\n{error}")
            continue
        assert compose(overrides).choices[choice] == option, f"{overrides} did not select {group}/{option}"
        assert resolved.run.name
        return
    pytest.fail(f"{group}/{option} validates nowhere:\n" + "\n".join(failures or ["no way to select it"]))


# Pairs that cannot run, with what says so: a 671B model does not fit the experiments' single node; slime
# has SFT loss masks for the Qwen families only (`plan` always refused these; `validate` does too); 8-9B
# models with ToolRL's 16384 tokens per GPU do not fit 2 H100s without optimizer offload.
CANNOT_RUN = {
    **{("deepseek_v3", e): "needs ~" for e in _experiments() if e != "quickstart"},
    **{
        (m, e): "SFT loss masks"
        for m in ("glm4_9b", "llama3_1_8b_instruct")
        for e in ("retool", "tau2_pipeline")
    },
    **{(m, "toolrl_grpo"): "GiB per GPU" for m in ("glm4_9b", "llama3_1_8b_instruct", "qwen3_8b")},
    # T3RL's <thinking> parsing of the 2507 option, under a prompt that asks for no reasoning tags
    **{
        ("qwen3_4b_instruct_2507", e): "asks for no reasoning tags" for e in ("hub_env_grpo", "tau2_pipeline")
    },
}
# Options of one checkpoint share its name, and so its conversions (<name>_torch_dist).
NAMED_AS = {"qwen3_4b_instruct_2507_plain": "qwen3_4b_instruct_2507"}
# The quickstart's evals run transformers on this machine's CPU in float32: a model whose weights exceed
# this machine's memory is refused there (launch/checks/rules/eval_load.py), which ones depending on
# the machine (with 24 GiB: the 7B models and larger).
HF_ON_THIS_CPU = ("quickstart", "on this machine's CPU in float32")


@pytest.mark.parametrize("experiment", _experiments())
@pytest.mark.parametrize("model", sorted(p.stem for p in (CONF / "model").glob("*.yaml")))
def test_every_model_fits_every_experiment(experiment: str, model: str) -> None:
    if (model, experiment) in CANNOT_RUN:
        with pytest.raises(ConfigError) as rejected:
            resolve([f"+experiment={experiment}", f"model={model}"])
        assert CANNOT_RUN[model, experiment] in str(rejected.value)
        assert all("fix:" in problem.as_text() for problem in rejected.value.problems)
        return
    try:
        resolved = resolve([f"+experiment={experiment}", f"model={model}"])
    except ConfigError as error:
        where, reason = HF_ON_THIS_CPU
        if experiment != where or not all(reason in problem.as_text() for problem in error.problems):
            raise
        assert all("fix:" in problem.as_text() for problem in error.problems)
        return
    assert resolved.run.model.name == NAMED_AS.get(model, model)
    assert all(p.severity == "warning" for p in resolved.warnings)


def test_experiments_build_their_pipelines() -> None:
    stage1 = resolve(["+experiment=stage1_bfcl"]).run
    assert list(stage1.stages) == ["data", "to_torch_dist", "train", "to_hf", "eval"]
    assert stage1.stages["train"].curriculum.name == "bfcl_stage1"
    stage2 = resolve(["+experiment=stage2_bfcl"]).run
    assert stage2.stages["train"].hardware == {"context_parallel": 4}
    assert stage2.stages["train"].init_from is None
    tuning = resolve(["+experiment=bfcl_env_tuning"]).run
    order = ["data", "to_torch_dist", "stage1", "stage1_hf", "stage2", "stage2_hf", "eval"]
    assert list(tuning.stages) == order
    assert tuning.stages["stage2"].init_from == "stage1"
    assert tuning.stages["stage2"].curriculum.train_split == "bfcl_train"
    assert tuning.stages["eval"].checkpoint == "stage2_hf"


def test_stage1_reproduces_t3rl_values() -> None:
    run = resolve(["+experiment=stage1_bfcl"]).run
    hw, cur = run.hardware, run.stages["train"].curriculum
    assert (hw.tensor_parallel, hw.sequence_parallel, hw.context_parallel) == (2, True, 1)
    assert hw.max_tokens_per_gpu == 2048
    assert (hw.gpus_per_engine, hw.sglang_mem_fraction, hw.sglang_attention_backend) == (1, 0.8, "fa3")
    assert (cur.rollout_batch_size, cur.n_samples_per_prompt, cur.global_batch_size, cur.num_rollout) == (
        32,
        16,
        512,
        800,
    )
    assert (cur.rollout_max_response_len, cur.eval_max_response_len, cur.eval_interval) == (10000, 20000, 5)
    assert run.model.architecture.rotary_base == 5_000_000
    assert run.model.parsers.tool_call_parser == "qwen"
    assert run.tracking.kind == "tensorboard"


def test_both_experiment_spellings_select_it() -> None:
    plain, plus = resolve(["experiment=stage2_bfcl"]), resolve(["+experiment=stage2_bfcl"])
    assert plain.run.name == plus.run.name == "stage2_bfcl"


def test_command_line_group_choice_beats_the_experiments() -> None:
    run = resolve(["+experiment=stage1_bfcl", "model=qwen3_8b", "hardware=h100x8"]).run
    assert (run.model.name, run.hardware.name) == ("qwen3_8b", "h100x8")
