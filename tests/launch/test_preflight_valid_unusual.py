"""Valid but unusual configs near the boundary of a pre-flight rule (sbatch options that only share a
prefix with one t3rl writes, values exactly at a bound, a setting whose need is met another way, ...):
each must be accepted (exit 0, warnings allowed). A refusal of a valid config is as bad as a missed
mistake."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

S1 = "+experiment=stage1_bfcl"
SLURM = [S1, "executor=slurm"]
C = "stages.train.curriculum"
X = "model.architecture.extra_args"
A100 = ["hardware.gpu_type=A100", "hardware.gpu_memory_gib=80"]
OPENENV = ["+experiment=hub_env_grpo", "env=openenv"]
UVICORN = "python3, -m, uvicorn, 't3rl_core.envs.openenv.counter_example:app'"

CASES: list[tuple[str, list[str]]] = [
    # sbatch options t3rl does not write, though their names begin or resemble one it does
    ("sbatch-time-min", [*SLURM, "executor.extra_sbatch=['--time-min=60']"]),
    ("sbatch-nodelist", [*SLURM, "executor.extra_sbatch=['--nodelist=gpu01']"]),
    ("sbatch-exclude", [*SLURM, "executor.extra_sbatch=['--exclude=node3']"]),
    ("sbatch-gres-nvme", [*SLURM, "executor.extra_sbatch=['--gres=nvme:1']"]),
    ("sbatch-gres-flags", [*SLURM, "executor.extra_sbatch=['--gres-flags=enforce-binding']"]),
    ("sbatch-tres-per-node-nvme", [*SLURM, "executor.extra_sbatch=['--tres-per-node=gres/nvme:1']"]),
    ("sbatch-ntasks", [*SLURM, "executor.extra_sbatch=['--ntasks=1']"]),
    ("sbatch-ntasks-per-gpu", [*SLURM, "executor.extra_sbatch=['--ntasks-per-gpu=1']"]),
    ("sbatch-cpus-per-gpu", [*SLURM, "executor.extra_sbatch=['--cpus-per-gpu=8']"]),
    ("sbatch-mem-per-gpu", [*SLURM, "executor.extra_sbatch=['--mem-per-gpu=80G','--mem=0']"]),
    ("sbatch-gpu-bind", [*SLURM, "executor.extra_sbatch=['--gpu-bind=closest']"]),
    ("sbatch-open-mode", [*SLURM, "executor.extra_sbatch=['--open-mode=append','--requeue']"]),
    ("sbatch-signal", [*SLURM, "executor.extra_sbatch=['--signal=B:USR1@300','--constraint=a100']"]),
    (
        "sbatch-exclusive-mode",
        [*SLURM, "executor.exclusive=false", "executor.extra_sbatch=['--exclusive=user']"],
    ),
    # a started server's port said once ({port}), with '=', or published by docker at the URL's port
    ("openenv-port-with-equals", [*OPENENV, f"env.command=[{UVICORN}, '--port=8765']"]),
    ("openenv-url-trailing-slash", [*OPENENV, "env.url=http://localhost:8765/"]),
    ("openenv-ipv6-url", [*OPENENV, "env.url='http://[::1]:8765'"]),
    ("openenv-host-and-workers", [*OPENENV, f"env.command=[{UVICORN}, --host, 0.0.0.0, --port, '8765']"]),
    ("openenv-running-server", [*OPENENV, "env.command=null", "env.url=http://10.1.2.3:8000"]),
    (
        "openenv-docker-published",
        [
            *OPENENV,
            "env.url=http://127.0.0.1:9000",
            "env.command=[docker, run, -p, '9000:8000', img, --port, '8000']",
        ],
    ),
    (
        "openenv-docker-publish-ip-proto",
        [
            *OPENENV,
            "env.url=http://127.0.0.1:9000",
            "env.command=[docker, run, '--publish=127.0.0.1:9000:8000/tcp', img, --port, '8000']",
        ],
    ),
    (
        "service-port-placeholder",
        [
            *OPENENV,
            "env.command=null",
            f"+services.envsrv={{kind: command, command: [{UVICORN}, --port, '{{port}}'], port: 8766,"
            " env_url_key: url}",
        ],
    ),
    (
        "service-port-placeholder-equals",
        [
            *OPENENV,
            "+services.judge={kind: command, command: [python3, x.py, '--port={port}'], env_url_key: null}",
        ],
    ),
    (
        "service-docker-published",
        [
            *OPENENV,
            "env.command=null",
            "+services.envsrv={kind: command, command: [docker, run, -p, '{port}:8000', img, --port, '8000'],"
            " port: 8766, env_url_key: url}",
        ],
    ),
    # a family no value of ToolRL's model_style cuts: the episode loop hands the reward the model's text alone
    ("toolrl-on-glm4", ["+experiment=toolrl_grpo", "model=glm4_9b", "hardware.nodes=2", "executor=slurm"]),
    # think tags: the reasoning parser's own, or the parser's replaced by the same tags the prompt names
    ("think-tags-of-the-parser", [S1, "model=qwen3_8b", "env.data.think_tags=['<think>','</think>']"]),
    ("think-tags-replaced-alike", [S1, "model=qwen3_8b", "model.parsers.think_tags=['<think>','</think>']"]),
    ("think-tags-own-names", [S1, "model.parsers.think_tags=['<reasoning>','</reasoning>']"]),
    ("swap-to-llama3", [S1, "model=llama3_1_8b_instruct"]),
    ("swap-to-glm4", [S1, "model=glm4_9b"]),
    ("swap-to-qwen2_5", [S1, "model=qwen2_5_7b_instruct"]),
    # a requirement met another way: the flag slime needs for REINFORCE++ passed through by the user
    (
        "reinforce-pp-normalized-by-pass-through",
        [S1, f"{C}.algorithm.advantage_estimator=reinforce_plus_plus", f"+{X}=[--normalize-advantages]"],
    ),
    (
        "reinforce-pp-baseline-normalized",
        [
            S1,
            f"{C}.algorithm.advantage_estimator=reinforce_plus_plus_baseline",
            f"+{X}=[--normalize-advantages]",
        ],
    ),
    # values exactly at a bound
    ("batch-equals-split", [S1, f"{C}.rollout_batch_size=100", f"{C}.global_batch_size=1600"]),
    (
        "over-sampling-equals-split",
        [
            S1,
            f"{C}.rollout_batch_size=64",
            f"{C}.global_batch_size=1024",
            f"{C}.over_sampling_batch_size=100",
        ],
    ),
    ("one-rollout", [S1, f"{C}.num_rollout=1"]),
    ("one-epoch", [S1, f"{C}.num_rollout=null", f"{C}.num_epoch=1"]),
    ("intervals-equal-the-run", [S1, f"{C}.num_rollout=5", f"{C}.eval_interval=5", f"{C}.save_interval=5"]),
    ("smallest-global-batch", [S1, f"{C}.global_batch_size=8"]),
    ("steps-instead-of-global-batch", [S1, f"{C}.num_steps_per_rollout=1", f"{C}.global_batch_size=null"]),
    ("tp4-pp2", [S1, "hardware.tensor_parallel=4", "hardware.pipeline_parallel=2"]),
    ("tp8", [S1, "hardware.tensor_parallel=8"]),
    ("cp2", [S1, "hardware.context_parallel=2"]),
    ("fp16-on-ampere", [S1, *A100, f"+{X}=[--fp16]"]),
    # output directories: relative, under ~, with spaces, or the cluster's (a plan for another machine)
    ("runs-dir-relative-up", [S1, "paths.runs_dir=../elsewhere/runs"]),
    ("cache-dir-under-home-with-space", [S1, "paths.cache_dir='~/.cache/my t3rl'"]),
    ("cache-dir-deep-under-home", [S1, "paths.cache_dir='~/not_yet/a/b/c'"]),
    ("tracking-dir-with-space", [S1, "tracking.dir=./tb logs"]),
    ("slurm-cluster-paths", [*SLURM, "paths.checkpoints_dir={blocker}/ckpt", "paths.runs_dir=/lustre/runs"]),
    ("dry-plan-for-another-machine", [S1, "executor=dry", "paths.checkpoints_dir={blocker}/ckpt"]),
    (
        "dry-plan-cache-elsewhere",
        [S1, "executor=dry", "paths.cache_dir={blocker}", "paths.runs_dir={blocker}-runs/r"],
    ),
    ("ray-remote-working-dir", [S1, "executor=ray", "executor.working_dir=s3://bucket/code.zip"]),
    (
        "ray-client-cluster-paths",
        [S1, "executor=ray", "executor.address=ray://head:10001", "paths.checkpoints_dir=/lustre/ckpt"],
    ),
    # greedy policy, sampling customer: tau-bench's pass^k protocol, and a GRPO group that still varies
    (
        "tau2-greedy-pass-hat-k-with-llm-customer",
        [
            "+experiment=tau2_pipeline",
            "stages.eval.eval.temperature=0",
            "stages.eval.eval.top_p=null",
            "stages.eval.eval.top_k=-1",
        ],
    ),
    (
        "tau2-greedy-grpo-with-llm-customer",
        ["+experiment=tau2_pipeline", "stages.grpo.curriculum.rollout_temperature=0"],
    ),
]


@pytest.mark.parametrize("overrides", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_valid_unusual_config_is_accepted(overrides: list[str], sandbox: Path) -> None:  # noqa: F811
    # A file where a directory would be: a path this machine could never write (also as root).
    blocker = sandbox / "blocker"
    blocker.write_text("not a directory\n")
    code, out = _invoke("validate", *(o.replace("{blocker}", str(blocker)) for o in overrides))
    assert code == 0, out
