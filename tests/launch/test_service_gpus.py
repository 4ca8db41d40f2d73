"""Pre-flight: a managed service's GPUs against those of the stages it runs with, on their node. Each
rejected case names the key, where it was set, and a fix that itself validates (applied and resolved
again here)."""

from __future__ import annotations

import re

import pytest

from launch.checks.resolve import resolve
from launch.config.errors import ConfigError

ADD_TP = ["+experiment=tau2_pipeline", "+services.user_sim.model_path=/m", "+services.user_sim.tp=2"]


def overrides(*extra: str) -> list[str]:
    return [*ADD_TP, *extra]


def rejected(*extra: str):
    with pytest.raises(ConfigError) as caught:
        resolve(overrides(*extra))
    [problem] = [p for p in caught.value.problems if p.key.startswith(("services.", "hardware."))]
    return problem


def fixes(fix: str) -> list[list[str]]:
    """Each alternative of a fix ("set a=1 b=[2,3] (why); or set …") as overrides."""
    return [re.sub(r" \(.*", "", part).split() for part in re.findall(r"set ([^;]+)", fix)]


def applied(extra: tuple[str, ...], fix: list[str]) -> list[str]:
    """`extra` with the fix's keys replaced (`+` where the key is not in the config yet)."""
    fixed = {o.split("=")[0].lstrip("+") for o in fix}
    kept = [o for o in extra if o.split("=")[0].lstrip("+") not in fixed]
    added = {"services.user_sim.gpus", "services.user_sim.stages", "hardware.rollout_gpus"}
    return [*kept, *(f"+{o}" if o.split("=")[0] in added else o for o in fix)]


def assert_fix_validates(extra: tuple[str, ...], fix: str) -> None:
    alternatives = fixes(fix)
    assert alternatives, fix
    for alternative in alternatives:
        resolve(overrides(*applied(extra, alternative)))


@pytest.mark.parametrize(
    ("extra", "key", "source", "words", "fix"),
    [
        (  # colocated training on GPUs 0-3, the service on 2-3
            ("hardware.gpus_per_node=4", "+services.user_sim.gpus=[2,3]"),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[2,3]`",
            "stages sft, rft, grpo use GPUs 0-3",
            "services.user_sim.gpus=[4,5]",
        ),
        (  # no gpus: SGLang puts its ranks on the stage's GPUs from 0
            ("hardware.gpus_per_node=4",),
            "services.user_sim.tp",
            "override `+services.user_sim.tp=2`",
            "no `gpus`",
            "services.user_sim.gpus=[4,5]",
        ),
        (  # separate rollout GPUs follow the training GPUs (RL stages only; SFT has none)
            (
                "hardware.gpus_per_node=4",
                "hardware.colocate=false",
                "+hardware.rollout_gpus=2",
                "+services.user_sim.gpus=[4,5]",
            ),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[4,5]`",
            "stages rft, grpo use GPUs 0-5 of the node (4 training GPUs + 2 rollout GPUs)",
            "services.user_sim.gpus=[6,7]",
        ),
        (  # the eval stage's own SGLang server is on GPU 0
            ("+services.user_sim.stages=[eval]", "+services.user_sim.gpus=[0,1]"),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[0,1]`",
            "stage eval uses GPU 0",
            "services.user_sim.gpus=[1,2]",
        ),
        (  # over-subscription: the whole node trains
            ("+services.user_sim.gpus=[6,7]",),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[6,7]`",
            "stage sft uses 8 of a node's 8 GPUs",
            "hardware.gpus_per_node=4 services.user_sim.gpus=[4,5]",
        ),
        (  # over-subscription with some GPUs left: a smaller server, or less training
            ("hardware.gpus_per_node=4", "services.user_sim.tp=6", "+services.user_sim.gpus=[2,3,4,5,6,7]"),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[2,3,4,5,6,7]`",
            "leaves 4 for services.user_sim (tp 6)",
            "services.user_sim.tp=4 services.user_sim.gpus=[4,5,6,7]",
        ),
        (  # a node size that only follows gpus_per_node is pinned before training shrinks
            ("hardware.node_gpus=null", "+services.user_sim.gpus=[6,7]"),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[6,7]`",
            "of a node's 8 GPUs",
            "hardware.node_gpus=8 hardware.gpus_per_node=4",
        ),
        (  # several nodes: the service shares the first node with its stage's ranks there
            ("hardware=h200x8x2nodes", "executor=slurm", "+services.user_sim.gpus=[6,7]"),
            "services.user_sim.gpus",
            "override `+services.user_sim.gpus=[6,7]`",
            "8 training GPUs",
            "services.user_sim.gpus=[4,5]",
        ),
    ],
)
def test_overlap_and_oversubscription_are_rejected_with_a_fix_that_validates(extra, key, source, words, fix):
    problem = rejected(*extra)
    assert problem.key == key and problem.source == source, problem
    assert words in problem.message and fix in problem.fix, problem
    assert_fix_validates(extra, problem.fix)


@pytest.mark.parametrize(
    "extra",
    [
        ("hardware.gpus_per_node=4", "+services.user_sim.gpus=[4,5]"),
        # exact fit: every GPU of the node is used
        ("hardware.gpus_per_node=4", "services.user_sim.tp=4", "+services.user_sim.gpus=[4,5,6,7]"),
        ("hardware.gpus_per_node=4", "services.user_sim.tp=4", "+services.user_sim.gpus=[7,6,5,4]"),
        # only the eval stage runs with it, beside the eval server's GPU 0
        ("+services.user_sim.stages=[eval]", "+services.user_sim.gpus=[6,7]"),
        (
            "hardware=h200x8x2nodes",
            "executor=slurm",
            "hardware.gpus_per_node=4",
            "+services.user_sim.gpus=[4,5]",
        ),
    ],
)
def test_services_beside_their_stages_validate(extra):
    resolve(overrides(*extra))


def test_two_services_on_the_same_gpus_are_rejected():
    extra = (
        "hardware.gpus_per_node=4",
        "+services.user_sim.gpus=[4,5]",
        "+services.judge.model_path=/j",
        "+services.judge.gpus=[5]",
        "+services.judge.port=30002",
        "+services.judge.env_url_key=null",
    )
    with pytest.raises(ConfigError) as caught:
        resolve(overrides(*extra))
    [problem] = caught.value.problems
    assert (
        problem.key == "services.judge.gpus" and "services.user_sim both run on GPUs [5]" in problem.message
    )
    assert problem.fix == "set services.judge.gpus=[6]"
    resolve(overrides(*extra[:-3], "+services.judge.gpus=[6]", *extra[-2:]))


DEBUG = (
    "+experiment=bfcl_debug",
    "+services.judge.model_path=/m",
    "+services.judge.env_url_key=null",
    "hardware.gpus_per_node=4",
    "hardware.colocate=false",
    "+hardware.rollout_gpus=2",
)


def test_debug_stages_count_only_the_gpus_they_run_on():
    # rollout_only runs the 2 rollout engines alone (GPUs 0-1); train_only the 4 training GPUs alone
    resolve([*DEBUG, "+services.judge.gpus=[2]", "+services.judge.stages=[rollouts]"])
    resolve([*DEBUG, "+services.judge.gpus=[4]", "+services.judge.stages=[train]"])
    with pytest.raises(ConfigError) as caught:
        resolve([*DEBUG, "+services.judge.gpus=[1]", "+services.judge.stages=[rollouts]"])
    [problem] = caught.value.problems
    assert "stage rollouts uses GPUs 0-1" in problem.message and problem.fix.startswith(
        "set services.judge.gpus=[2]"
    )
    with pytest.raises(ConfigError, match="stage train uses GPUs 0-3"):
        resolve([*DEBUG, "+services.judge.gpus=[2]", "+services.judge.stages=[train]"])
