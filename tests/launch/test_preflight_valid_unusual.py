"""Valid but unusual configs near the boundary of a pre-flight rule (sbatch options that only share a
prefix with one t3rl writes, values exactly at a bound, a setting whose need is met another way, ...):
each must be accepted (exit 0, warnings allowed). A refusal of a valid config is as bad as a missed
mistake."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix
from tests.support.plugin_example import EXAMPLE, EXAMPLE_CONF

S1 = "+experiment=stage1_bfcl"
SLURM = [S1, "executor=slurm"]
C = "stages.train.curriculum"
X = "model.architecture.extra_args"
SRV = "eval.server.extra_args"
TAU2_SERVED = ["+experiment=tau2_pipeline", "+services.user_sim.model_path=/m"]
# The customer's server on GPUs the training leaves free.
TAU2_SIM = [
    *TAU2_SERVED,
    "+services.user_sim.tp=2",
    "hardware.gpus_per_node=4",
    "+services.user_sim.gpus=[4,5]",
]
# Pipeline stages over 36 layers (Qwen3-4B) that 8 does not divide; TP 1 leaves the 8 GPUs to them.
PP8 = ["hardware.tensor_parallel=1", "hardware.sequence_parallel=false", "hardware.pipeline_parallel=8"]
# A uniform recompute's chunk divides every pipeline block's layers (launch/checks/rules/megatron.py).
ONE_LAYER_CHUNKS = "hardware.recompute.num_layers=1"
PP8 += [ONE_LAYER_CHUNKS]
A100 = ["hardware.gpu_type=A100", "hardware.gpu_memory_gib=80"]
RETOOL = "+experiment=retool"
RL = "stages.rl.curriculum"
RETOOL_DATA = ["env.data.source='{data}/problems.jsonl'", "env.data.sft_source='{data}/sft.jsonl'"]
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
    # slime's own eval datasets and interval passed through in place of the curriculum's eval split
    (
        "slime-eval-config-passed-through",
        [
            S1,
            f"{C}.eval_split=null",
            f"{C}.eval_interval=null",
            f"+{X}=['--eval-config=/data/e.yaml','--eval-interval=5']",
        ],
    ),
    # Megatron's other learning-rate schedules (WSD with its anneal length passed through)
    (
        "wsd-schedule",
        [
            S1,
            f"{C}.optimizer.lr_decay_style=WSD",
            f"+{X}=['--lr-wsd-decay-style=linear','--lr-wsd-decay-iters=100']",
        ],
    ),
    ("wsd-schedule-apart", [S1, f"{C}.optimizer.lr_decay_style=WSD", f"+{X}=[--lr-wsd-decay-iters,'100']"]),
    (
        "inverse-square-root-schedule",
        [S1, f"{C}.optimizer.lr_decay_style=inverse-square-root", f"{C}.optimizer.lr_warmup_fraction=0.05"],
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
    # GPUs: a board's other memory size, a cautious usable size, a type t3rl does not know (a warning)
    ("h20-141gb", [S1, "hardware.gpu_type=H20", "hardware.gpu_memory_gib=141"]),
    ("h100-usable-gib", [S1, "hardware.gpu_type=H100", "hardware.gpu_memory_gib=79"]),
    ("a100-40gb", [S1, "hardware.gpu_type=A100", "hardware.gpu_memory_gib=40"]),
    ("unknown-gpu-a40", [S1, "hardware.gpu_type=A40", "hardware.gpu_memory_gib=48"]),
    (
        "ampere-fa3-and-fp8-weights",
        [S1, *A100, "hardware.sglang_attention_backend=fa3", f"{SRV}=['--quantization=fp8']"],
    ),
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
    # local datasets with blank lines, in a folder whose name has a space and an accent
    ("retool-own-data", [RETOOL, *RETOOL_DATA]),
    (
        "retool-batch-equals-train-rows",
        [
            RETOOL,
            *RETOOL_DATA,
            "env.data.test_size=224",
            f"{RL}.rollout_batch_size=4",
            f"{RL}.global_batch_size=20",
        ],
    ),
    (
        "retool-small-split-many-rollouts",
        [
            RETOOL,
            *RETOOL_DATA,
            "env.data.test_size=224",
            f"{RL}.rollout_batch_size=4",
            f"{RL}.global_batch_size=20",
            f"{RL}.num_epoch=null",
            f"{RL}.num_rollout=50",
        ],
    ),
    (
        "retool-over-sampling-equals-train-rows",
        [RETOOL, *RETOOL_DATA, f"{RL}.over_sampling_batch_size=128"],
    ),
    (
        "retool-sft-one-epoch-of-the-whole-file",
        [RETOOL, *RETOOL_DATA, "stages.sft.curriculum.num_epoch=1"],
    ),
    ("retool-cluster-data-under-home", [RETOOL, "env.data.source='~/data/x.parquet'", "executor=slurm"]),
    ("retool-cluster-relative-data", [RETOOL, "env.data.source=data/x.parquet", "executor=slurm"]),
    # a chat template file of the family's own, at a path with a space and an accent, or relative
    ("template-file-with-space", [S1, "model.chat.chat_template='{tmpl}'"]),
    ("template-file-relative", [S1, "model.chat.chat_template='../my data ü/my qwen3.jinja'"]),
    (
        "template-file-with-thinking-off",
        [
            S1,
            "model=qwen3_8b",
            "model.chat.chat_template='{tmpl}'",
            "+model.chat.chat_template_kwargs={enable_thinking: false}",
        ],
    ),
    ("quickstart-template-file", ["+experiment=quickstart", "model.chat.chat_template='{tmpl}'"]),
    # an uneven pipeline split, its sizes spelt with '=' or apart
    ("pp8-last-stage-given-equals", [S1, *PP8, f"+{X}=['--decoder-last-pipeline-num-layers=1']"]),
    ("pp8-last-stage-given-apart", [S1, *PP8, f"+{X}=[--decoder-last-pipeline-num-layers,'1']"]),
    (
        "pp8-first-and-last-given",
        [S1, *PP8, f"+{X}=['--decoder-first-pipeline-num-layers=1','--decoder-last-pipeline-num-layers=5']"],
    ),
    ("pp8-first-stage-given", [S1, *PP8, f"+{X}=['--decoder-first-pipeline-num-layers=8']"]),
    (
        "pp2-virtual-stages",
        [
            S1,
            "hardware.pipeline_parallel=2",
            f"+{X}=['--num-virtual-stages-per-pipeline-rank=2']",
            ONE_LAYER_CHUNKS,
        ],
    ),
    (
        "pp2-virtual-layers",
        [
            S1,
            "hardware.pipeline_parallel=2",
            f"+{X}=['--num-layers-per-virtual-pipeline-stage=9']",
            ONE_LAYER_CHUNKS,
        ],
    ),
    ("static-micro-batch", [S1, "hardware.dynamic_batch=false", f"+{X}=['--micro-batch-size=2']"]),
    # an LLM customer served beside the stages, with flags of its own
    ("customer-beside-training", [*TAU2_SIM, "+services.user_sim.extra_args=['--mem-fraction-static=0.5']"]),
    (
        "customer-on-all-interfaces",
        [*TAU2_SIM, "+services.user_sim.host=0.0.0.0", "+services.user_sim.port=30005"],
    ),
    (
        "customer-for-the-eval-only",
        [
            *TAU2_SERVED,
            "+services.user_sim.tp=2",
            "+services.user_sim.stages=[eval]",
            "+services.user_sim.gpus=[1,2]",
        ],
    ),
    (
        "customer-on-the-last-gpu",
        [*TAU2_SERVED, "+services.user_sim.stages=[eval]", "+services.user_sim.gpus=[7]"],
    ),
    # SGLang flags spelt with '=' or apart, and a short context whose requests SGLang truncates
    ("server-mem-fraction-equals", [S1, f"{SRV}=['--mem-fraction-static=0.8']"]),
    ("server-two-flags-apart", [S1, f"{SRV}=[--chunked-prefill-size,'4096',--max-running-requests,'64']"]),
    ("server-torch-compile-bs", [S1, f"{SRV}=[--enable-torch-compile,'--torch-compile-max-bs=16']"]),
    ("server-kv-cache-fp8", [S1, f"{SRV}=['--kv-cache-dtype=fp8_e5m2','--schedule-policy=lpm']"]),
    ("server-context-length-equals", [S1, f"{SRV}=['--context-length=40960']"]),
    (
        "server-json-override",
        [S1, f'{SRV}=[\'--json-model-override-args={{"rope_scaling":{{"factor":4.0}}}}\']'],
    ),
    (
        "server-short-context-auto-truncate",
        [S1, f"{SRV}=['--context-length=8192',--allow-auto-truncate]", "eval.max_new_tokens=10000"],
    ),
    (
        "slime-short-context-auto-truncate",
        [S1, f"+{X}=['--sglang-context-length=8192',--sglang-allow-auto-truncate]"],
    ),
    ("slime-sglang-context-equals", [S1, f"+{X}=['--sglang-context-length=32768']"]),
    ("slime-sglang-switches", [S1, f"+{X}=[--sglang-enable-metrics,'--sglang-max-running-requests=128']"]),
    # sweeps whose every point is valid
    ("sweep-rewards", ["-m", S1, "reward=progress,binary"]),
    ("sweep-tp", ["-m", S1, "hardware.tensor_parallel=2,4"]),
    ("sweep-models", ["-m", S1, "model=qwen3_8b,qwen3_4b_instruct_2507"]),
    ("sweep-lr-kl", ["-m", S1, f"{C}.optimizer.lr=1e-6,2e-6", f"{C}.algorithm.kl_loss_coef=0.0,0.001"]),
    ("sweep-eval-samples", ["-m", S1, "eval.samples=1,4", "eval.pass_k=[1]", "eval.temperature=0.7"]),
    # prompts and hub ids near what the model options declare
    (
        "retool-short-prompts-under-slime-prompt-limit",
        [RETOOL, *RETOOL_DATA, f"{X}=[--rollout-max-prompt-len,'16']"],
    ),
    ("retool-short-prompts-tight-episode-cap", [RETOOL, *RETOOL_DATA, f"{RL}.max_context_len=8200"]),
    ("tokenizer-hub-id-of-the-model", [S1, "model.chat.tokenizer=Qwen/Qwen3-4B-Instruct-2507"]),
    (
        "tokenizer-hub-id-of-a-sibling-family",
        [S1, "model=qwen2_5_7b_instruct", "model.chat.tokenizer=Qwen/Qwen3-8B"],
    ),
    ("hf-id-of-a-quantized-variant", [S1, "model.hf_id=Qwen/Qwen3-4B-Instruct-2507-FP8"]),
    ("context-shorter-than-declared", [S1, "model.context_length=65536"]),
    ("group-of-1024", [S1, f"{C}.n_samples_per_prompt=1024"]),
    ("sweep-seeds", ["-m", S1, "seed=1,2,3"]),
    ("sweep-slurm-points-at-once", ["-m", S1, "executor=slurm", "executor.max_parallel=2", "seed=1,2"]),
    ("sweep-ray-all-on-the-cluster", ["-m", S1, "executor=ray", "executor.other_stages=ray", "seed=1,2"]),
    ("sweep-ray-one-point-at-a-time", ["-m", S1, "executor=ray", "executor.max_parallel=1", "seed=1,2"]),
    ("sweep-tau2-seeds", ["-m", "+experiment=tau2_pipeline", "seed=1,2"]),
]

# The example plugin (examples/plugin), importable as its installed package would be.
PLUGIN_CASES: list[tuple[str, list[str]]] = [
    ("plugin-counter", ["+experiment=counter"]),
    ("plugin-counter-grpo", ["+experiment=counter_grpo"]),
    ("plugin-counter-grpo-bigger-model", ["+experiment=counter_grpo", "model=qwen3_8b", "hardware=h100x2"]),
    ("plugin-counter-grpo-slurm", ["+experiment=counter_grpo", "executor=slurm"]),
    ("plugin-own-family", ["+experiment=counter_grpo", "model=counter_chatml"]),
]


def _files(root: Path) -> dict[str, Path]:
    """The files the cases name: a path no directory can be made at, 228 problems and 64 conversations
    with blank lines among them, a copy of the Qwen3 chat template; the last two under a folder whose
    name has a space and an accent."""
    blocker = root / "blocker"
    blocker.write_text("not a directory\n")
    data = root / "my data ü"
    data.mkdir()
    problems = [json.dumps({"prompt": f"What is {i}+1?", "target": str(i + 1)}) for i in range(228)]
    (data / "problems.jsonl").write_text("\n\n".join(problems) + "\n\n")
    turns = [{"role": "user", "content": "1+0?"}, {"role": "assistant", "content": "\\boxed{1}"}]
    (data / "sft.jsonl").write_text("\n".join([json.dumps({"messages": turns})] * 64) + "\n\n")
    template = data / "my qwen3.jinja"
    template.write_text((resources.files("t3rl_core.chat") / "templates" / "qwen3.jinja").read_text())
    return {"blocker": blocker, "data": data, "tmpl": template}


def _filled(overrides: list[str], files: dict[str, Path]) -> list[str]:
    for name, path in files.items():
        overrides = [o.replace(f"{{{name}}}", str(path)) for o in overrides]
    return overrides


@pytest.mark.parametrize("overrides", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_valid_unusual_config_is_accepted(overrides: list[str], sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", *_filled(overrides, _files(sandbox)))
    assert code == 0, out


@pytest.mark.parametrize("overrides", [c[1] for c in PLUGIN_CASES], ids=[c[0] for c in PLUGIN_CASES])
def test_valid_unusual_plugin_config_is_accepted(
    overrides: list[str],
    sandbox: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLE))
    code, out = _invoke("validate", "--config-dir", str(EXAMPLE_CONF), *overrides)
    assert code == 0, out


def test_wsd_without_its_anneal_length_is_refused_with_a_fix_that_validates(sandbox: Path) -> None:  # noqa: F811
    """The schedule the domain now admits needs --lr-wsd-decay-iters (Megatron's scheduler reads it)."""
    overrides = [S1, f"{C}.optimizer.lr_decay_style=WSD"]
    code, out = _invoke("validate", *overrides)
    assert code == 2 and "--lr-wsd-decay-iters" in out, out
    (error,) = _errors(out)
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None, error
    code, after = _invoke("validate", *fixed)
    assert code == 0, after
