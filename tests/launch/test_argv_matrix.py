"""Every experiment × model family × hardware layout the validator accepts plans slime argv that
slime's and Megatron's parsers would take as meant: no flag twice, every value accepted by the type
function and choices the option table (generated from their sources) declares for it.

The argv checker runs inside planning already; this test re-reads each planned train and conversion
command independently (argparse's own rules: nargs, type, choices, last-one-wins), so a planner that
skipped the check would still be caught.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from launch.checks.context import Scope
from launch.checks.resolve import Resolved, resolve
from launch.checks.validate import build_scopes
from launch.config.errors import ConfigError
from launch.plan.build import Plan, PlanContext, build_plan
from launch.plan.option_types import value_problem
from launch.plan.slime_options import is_flag, known_options

CONF = Path(__file__).resolve().parents[2] / "conf"
CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "matrix", {})
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
MODELS = sorted(p.stem for p in (CONF / "model").glob("*.yaml"))
HARDWARE = sorted(p.stem for p in (CONF / "hardware").glob("*.yaml"))


@pytest.fixture(autouse=True)
def _no_composition_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of the matrix's command lines is composed once here: the composition cache (its own tests:
    test_compose_cache.py) would only store entries nothing reads, its digest and secret scan a third
    of each resolve (27 of the cases: 7.1 s of CPU with it, 5.3 s without)."""
    monkeypatch.setenv("T3RL_NO_CACHE", "1")


def slime_argv_problems(argv: list[str]) -> list[str]:
    """argparse's reading of `argv` against the option table, independent of launch.plan.slime_options."""
    table = known_options()
    problems: list[str] = []
    flags = [token.partition("=")[0] for token in argv if is_flag(token)]
    problems += [f"{flag} given {n} times" for flag, n in Counter(flags).items() if n > 1]
    i = 0
    while i < len(argv):
        option = table.get(argv[i])
        if option is None:
            problems.append(f"token {i} {argv[i]!r} is no option")
            i += 1
            continue
        values = []
        j = i + 1
        limit = option.nargs if isinstance(option.nargs, int) else len(argv)
        while j < len(argv) and len(values) < limit and not is_flag(argv[j]):
            values.append(argv[j])
            j += 1
        if isinstance(option.nargs, int) and len(values) != option.nargs:
            problems.append(f"{argv[i]} takes {option.nargs} values, got {values}")
        for value in values:
            problem = value_problem(option.type, option.choices, value)
            if problem:
                problems.append(f"{argv[i]}: {problem}")
        i = j
    return problems


def _values(argv: list[str]) -> dict[str, list[str]]:
    """Each flag of `argv` → the tokens after it up to the next flag (argparse's last one wins)."""
    out: dict[str, list[str]] = {}
    flag = None
    for token in argv:
        if is_flag(token):
            flag, _, value = token.partition("=")
            out[flag] = [value] if value else []
        elif flag is not None:
            out[flag].append(token)
    return out


def planned_argv_problems(resolved: Resolved, plan: Plan) -> list[str]:
    """What each planned train command says against the config it was planned from: the layout and the
    curriculum's values as the stage runs them (root hardware with the stage's overrides), GPU counts
    that add up, the data and checkpoint each read from the stage before it that writes them, and each
    eval server's --tp fitting the model's heads and a node."""
    scopes, _ = build_scopes(resolved.run, resolved.config, resolved.provenance)
    by_stage = {scope.stage: scope for scope in scopes}
    problems: list[str] = []
    produced: dict[tuple[str, str], str] = {}  # (stage, output) → the path an earlier stage writes
    for stage in plan.stages:
        job = stage.slime_job
        # a debug stage runs its own layout and count (slime's --debug-rollout-only: TP 1, debug_num_rollout)
        debug = getattr(resolved.run.stages.get(stage.name), "debug", None)
        if job is not None and stage.name in by_stage and debug is None:
            flags = _values(list(job.argv))
            problems += [f"{stage.name}: {p}" for p in _train_problems(flags, by_stage[stage.name])]
            for flag, name in (("--prompt-data", "train_data"), ("--ref-load", "base")):
                ref = stage.inputs.get(name)
                # the stage's input is an output of a stage before it, and the flag reads that path
                path = produced.get((ref.stage, ref.key)) if ref is not None else None
                if ref is not None and (path is None or flags.get(flag) != [path]):
                    problems.append(f"{stage.name}: {flag} {flags.get(flag)}, its input {name} is {path}")
        produced |= {(stage.name, key): str(path) for key, path in stage.outputs.items()}
        problems += [f"{stage.name}: {p}" for p in _server_problems(stage, resolved)]
    return problems


def _train_problems(flags: dict[str, list[str]], scope: Scope) -> list[str]:
    hw, cur = scope.hardware, scope.curriculum
    want: dict[str, object] = {
        "--tensor-model-parallel-size": hw.tensor_parallel,
        "--pipeline-model-parallel-size": hw.pipeline_parallel,
        "--actor-num-nodes": hw.nodes,
        "--actor-num-gpus-per-node": hw.gpus_per_node,
    }
    rollout = cur is None or cur.mode != "sft"  # an SFT stage starts no SGLang engines
    if rollout:
        want["--rollout-num-gpus"] = scope.rollout_gpus
    if cur is not None:
        want["--rollout-batch-size"] = cur.rollout_batch_size
        if rollout:
            want["--n-samples-per-prompt"] = cur.n_samples_per_prompt
        if cur.num_rollout is not None:
            want["--num-rollout"] = cur.num_rollout
    problems = [
        f"{flag} {flags.get(flag)} but the config says {value}"
        for flag, value in want.items()
        if flags.get(flag) != [str(value)]
    ]
    if cur is not None and [float(v) for v in flags.get("--lr", [])] != [cur.optimizer.lr]:
        problems.append(f"--lr {flags.get('--lr')} but the config says {cur.optimizer.lr}")
    if rollout and ("--colocate" in flags) != hw.colocate:
        given = "given" if "--colocate" in flags else "missing"
        problems.append(f"--colocate {given}, colocate is {hw.colocate}")
    world = hw.nodes * hw.gpus_per_node
    if world % scope.model_parallel:
        problems.append(f"{world} GPUs are no whole number of TP x PP x CP = {scope.model_parallel} groups")
    engine = int(flags.get("--rollout-num-gpus-per-engine", [str(hw.gpus_per_engine)])[0])
    if rollout and scope.rollout_gpus % engine:
        problems.append(f"{scope.rollout_gpus} rollout GPUs are no whole number of engines of {engine}")
    return problems


def _server_problems(stage: Any, resolved: Resolved) -> list[str]:
    """An eval stage's SGLang server: its --tp splits the model's attention heads and fits one node."""
    tps = [int(t) for c in stage.commands if isinstance(c, str) for t in re.findall(r"--tp (\d+)", c)]
    arch, hw = resolved.run.model.architecture, resolved.run.hardware
    node = hw.node_gpus or hw.gpus_per_node
    return [
        f"server --tp {tp}: {arch.num_attention_heads} heads or a node's {node} GPUs"
        for tp in tps
        if arch.num_attention_heads % tp or tp > node
    ]


def checked_commands(plan) -> list[tuple[str, list[str]]]:
    """(stage, argv after the script) of every train stage and HF→torch_dist conversion."""
    out = []
    for stage in plan.stages:
        if stage.slime_job is not None:
            out.append((stage.name, list(stage.slime_job.argv)))
        if stage.kind == "convert_hf_to_torch_dist":
            for command in stage.commands:
                tokens = command if isinstance(command, tuple) else shlex.split(command)
                scripts = [k for k, t in enumerate(tokens) if t.endswith("convert_hf_to_torch_dist.py")]
                if scripts:
                    out.append((stage.name, list(tokens[scripts[0] + 1 :])))
    return out


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("experiment", EXPERIMENTS)
def test_every_accepted_combination_plans_argv_slime_takes(experiment: str, model: str) -> None:
    for hardware in HARDWARE:
        try:
            resolved = resolve([f"+experiment={experiment}", f"model={model}", f"hardware={hardware}"])
            plan = build_plan(resolved.run, CTX)
        except ConfigError as error:
            # Refused with a config error (nothing planned); never for an argv slime would not take.
            assert "slime argv token" not in str(error), (hardware, str(error))
            continue
        for stage, argv in checked_commands(plan):
            assert argv, (hardware, stage)
            assert slime_argv_problems(argv) == [], (hardware, stage)
        assert planned_argv_problems(resolved, plan) == [], hardware


# Multi-node layouts need an executor that starts Ray on every node (the local one starts one head here).
TWO_NODES = ["hardware=h200x8x2nodes", "executor=slurm"]
# DeepSeek-V3 (671B) fits H200s from 16 nodes on (the smallest layout `t3rl validate` proposes).
# DeepSeek-V3's 61 layers take a uniform recompute of single layers (launch/checks/rules/megatron.py).
FITTING = {
    "deepseek_v3": [
        "hardware.nodes=16",
        "hardware.tensor_parallel=4",
        "hardware.expert_parallel=128",
        "hardware.recompute.num_layers=1",
    ]
}


def test_the_matrix_covers_every_family_with_a_train_argv() -> None:
    """Each family is planned into a checked train argv by at least one experiment and layout."""
    for model in MODELS:
        run = resolve(["+experiment=stage1_bfcl", f"model={model}", *TWO_NODES, *FITTING.get(model, [])]).run
        assert any(stage.slime_job for stage in build_plan(run, CTX).stages), model


def test_deepseek_v3_layer_pattern_is_one_token_megatron_accepts() -> None:
    run = resolve(["+experiment=stage1_bfcl", "model=deepseek_v3", *TWO_NODES, *FITTING["deepseek_v3"]]).run
    argv = list(build_plan(run, CTX).stage("train").slime_job.argv)
    freq = argv[argv.index("--moe-layer-freq") + 1]
    assert " " not in freq and freq.startswith("[0,0,0,1,")
    assert argv.count("--position-embedding-type") == 1


def test_the_matrix_check_catches_what_megatron_rejects() -> None:
    assert slime_argv_problems(["--moe-layer-freq", "[0, 1]"])
    assert slime_argv_problems(["--position-embedding-type", "rope", "--position-embedding-type", "rope"])
    assert slime_argv_problems(["--rotary-base", "1e6"])
    assert slime_argv_problems(["--attention-backend", "flash2"])
    assert slime_argv_problems(["--moe-router-load-balancing-type", "aux_loss", "bogus"])
    assert slime_argv_problems(["--moe-layer-freq", "[0,1]", "--rotary-base", "10000"]) == []


def _with_argv(plan: Plan, stage_name: str, edit: Any) -> Plan:
    """The plan with one train stage's argv edited (a planner's mistake)."""
    stages = tuple(
        s._replace(slime_job=s.slime_job._replace(argv=tuple(edit(list(s.slime_job.argv)))))
        if s.name == stage_name
        else s
        for s in plan.stages
    )
    return plan._replace(stages=stages)


def _set(flag: str, value: str) -> Any:
    def edit(argv: list[str]) -> list[str]:
        at = argv.index(flag)
        return [*argv[: at + 1], value, *argv[at + 2 :]]

    return edit


@pytest.mark.parametrize(
    ("stage", "edit"),
    [
        ("rl", _set("--tensor-model-parallel-size", "4")),  # a layout other than the config's
        ("rl", _set("--actor-num-gpus-per-node", "4")),  # GPU counts that do not add up
        ("rl", _set("--rollout-num-gpus", "6")),
        ("rl", _set("--lr", "1e-05")),  # the SFT stage's learning rate
        ("rl", _set("--rollout-batch-size", "64")),
        ("rl", lambda argv: [t for t in argv if t != "--colocate"]),
        ("rl", _set("--ref-load", "/run/stages/rl/checkpoint")),  # a checkpoint no earlier stage writes
        ("sft", _set("--prompt-data", "/run/stages/data/data/retool_train.jsonl")),
        ("rl", _set("--rollout-num-gpus-per-engine", "3")),  # engines that do not divide the GPUs
    ],
)
def test_the_planned_argv_audit_finds_a_planner_mistake(stage: str, edit: Any) -> None:
    resolved = resolve(["+experiment=retool"])
    plan = build_plan(resolved.run, CTX)
    assert planned_argv_problems(resolved, plan) == []
    assert planned_argv_problems(resolved, _with_argv(plan, stage, edit)) != []


def test_the_planned_argv_audit_finds_an_eval_server_tp_that_does_not_fit() -> None:
    resolved = resolve(["+experiment=retool"])
    plan = build_plan(resolved.run, CTX)
    stages = tuple(
        s._replace(
            commands=tuple(c.replace("--tp 1", "--tp 3") if isinstance(c, str) else c for c in s.commands)
        )
        for s in plan.stages
    )
    assert planned_argv_problems(resolved, plan._replace(stages=stages)) != []
