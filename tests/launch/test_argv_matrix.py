"""Every experiment × model family × hardware layout the validator accepts plans slime argv that
slime's and Megatron's parsers would take as meant: no flag twice, every value accepted by the type
function and choices the option table (generated from their sources) declares for it.

The argv checker runs inside planning already; this test re-reads each planned train and conversion
command independently (argparse's own rules: nargs, type, choices, last-one-wins), so a planner that
skipped the check would still be caught.
"""

from __future__ import annotations

import shlex
from collections import Counter
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan
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
            run = resolve([f"+experiment={experiment}", f"model={model}", f"hardware={hardware}"]).run
            plan = build_plan(run, CTX)
        except ConfigError as error:
            # Refused with a config error (nothing planned); never for an argv slime would not take.
            assert "slime argv token" not in str(error), (hardware, str(error))
            continue
        for stage, argv in checked_commands(plan):
            assert argv, (hardware, stage)
            assert slime_argv_problems(argv) == [], (hardware, stage)


# Multi-node layouts need an executor that starts Ray on every node (the local one starts one head here).
TWO_NODES = ["hardware=h200x8x2nodes", "executor=slurm"]
# DeepSeek-V3 (671B) fits H200s from 16 nodes on (the smallest layout `t3rl validate` proposes).
FITTING = {"deepseek_v3": ["hardware.nodes=16", "hardware.tensor_parallel=4", "hardware.expert_parallel=128"]}


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
