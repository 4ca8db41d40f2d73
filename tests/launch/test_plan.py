"""Plans: stage references, runtime files, per-kind commands, and the errors a plan can raise."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from run_configs import group, make_run, t3rl_stages

from launch.config.errors import ConfigError
from launch.plan.build import PlanContext, build_plan
from launch.plan.builders.convert import conversion_gpus
from t3rl_core.config import RuntimeConfig
from t3rl_core.eval.config import EvalConfig

CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "test-run", {})


def full_stages(**eval_stage: object) -> dict:
    stages = t3rl_stages(stage2=True)
    stages["to_hf"] = {"kind": "convert_torch_dist_to_hf", "source": "train_stage2"}
    stages["eval"] = {"kind": "eval", "checkpoint": "to_hf", **eval_stage}
    return stages


def runtime_of(plan, path: str) -> RuntimeConfig:
    return RuntimeConfig.model_validate(yaml.safe_load(plan.files[path])["t3rl"])


def test_every_input_is_an_earlier_stages_output():
    plan = build_plan(make_run(stages=full_stages()), CTX)
    names = plan.names()
    for stage in plan.stages:
        for ref in stage.inputs.values():
            assert names.index(ref.stage) < names.index(stage.name)
            # Every input is named in the commands or in a config file the stage reads.
            read = stage.script() + "".join(stage.files.values())
            assert plan.resolve(ref) in read, (stage.name, ref)


def test_runtime_files_follow_the_model_the_curriculum_and_the_checkpoint():
    plan = build_plan(make_run(stages=full_stages()), CTX)
    train = runtime_of(plan, "/run/runtime/train_stage1.yaml")
    assert train.chat.tokenizer == "/models/Qwen3-4B-Instruct-2507"
    assert (train.rollout.max_new_tokens, train.rollout.max_num_steps, train.rollout.temperature) == (
        10000,
        30,
        1.0,
    )
    assert train.mis.tis_level == "token" and train.parsers.tool_call_parser == "qwen"
    evaluated = runtime_of(plan, "/run/runtime/eval.yaml")
    assert evaluated.chat.tokenizer == plan.stage("to_hf").outputs["hf"]
    assert evaluated.rollout.max_new_tokens == 20000  # the eval's per-call limit of the trained stage
    eval_config = EvalConfig.model_validate(yaml.safe_load(plan.files["/run/runtime/eval.eval.yaml"]))
    assert eval_config.split == "bfcl_test"


def test_stage_fingerprint_covers_the_files_it_reads():
    progress = build_plan(make_run(stages=full_stages()), CTX)
    binary = build_plan(make_run(stages=full_stages(), reward=group("reward/binary")), CTX)
    assert progress.stage("train_stage1").script() == binary.stage("train_stage1").script()
    assert progress.stage("train_stage1").fingerprint() != binary.stage("train_stage1").fingerprint()
    assert progress.stage("convert_base").fingerprint() == binary.stage("convert_base").fingerprint()


def test_eval_serves_the_checkpoint_only_when_the_engine_needs_a_server():
    sglang = {"eval": {"engine": {"name": "sglang"}}}
    script = build_plan(make_run(stages=full_stages(**sglang)), CTX).stage("eval").script()
    # The server's exact argv is in the script (and so in plan.sh); the eval gets its URL and pid.
    assert "-m sglang.launch_server \\\n    --model-path /run/stages/to_hf/hf \\\n    --tp 1" in script
    assert "--tool-call-parser qwen" in script and "--port 30000" in script
    assert "server_pid=$!" in script and 'trap \'kill "$server_pid"' in script
    assert '--url http://127.0.0.1:30000 \\\n    --server-pid "$server_pid"' in script
    remote = {"eval": {"engine": {"name": "sglang", "url": "http://gpu:30000"}}}
    remote_script = build_plan(make_run(stages=full_stages(**remote)), CTX).stage("eval").script()
    assert "sglang.launch_server" not in remote_script and "--server-pid" not in remote_script
    reference = {"eval": {"engine": {"name": "reference"}, "split": "bfcl_val"}}
    plan = build_plan(make_run(stages=full_stages(**reference)), CTX)
    command = plan.stage("eval").commands[0]
    assert "sglang.launch_server" not in plan.stage("eval").script()
    assert command[command.index("--data") + 1] == plan.stage("prepare_data").outputs["split:bfcl_val"]


def test_synthetic_model_is_built_from_the_prepared_data_and_marked_complete():
    stages = {"prepare_data": {"kind": "prepare_data"}, "prepare_model": {"kind": "prepare_model"}}
    plan = build_plan(make_run(stages=stages, model="model/tiny_qwen3"), CTX)
    stage = plan.stage("prepare_model")
    script = stage.script()
    hf = stage.outputs["hf"]  # keyed by its definition: tests/launch/test_tiny_model_cache.py
    assert hf.startswith("/cache/models/tiny_qwen3-")
    build = (
        "/venv/bin/python -m t3rl_core.chat.tiny --family qwen3 --corpus /run/stages/prepare_data/data "
        '--model-vocab-size 2112 --out "$tmp"'
    )
    assert build in script
    assert stage.complete_when == (f"{hf}/.t3rl-complete",)
    build_at, marked_at = script.index("t3rl_core.chat.tiny"), script.index('touch "$tmp/.t3rl-complete"')
    assert build_at < marked_at < script.index("mv -T")


def test_downloaded_model_is_checked_with_the_download_command_in_the_message(tmp_path):
    stages = {"prepare_model": {"kind": "prepare_model"}}
    ctx = PlanContext(tmp_path / "run", tmp_path, "/t3rl", "/venv/bin/python", "x", {})
    plan = build_plan(make_run(stages=stages), ctx)
    import subprocess

    done = subprocess.run(
        ["bash", "-c", plan.stage("prepare_model").script()], capture_output=True, text=True
    )
    assert done.returncode == 1
    assert (
        "huggingface-cli download Qwen/Qwen3-4B-Instruct-2507 --local-dir /models/Qwen3-4B-Instruct-2507"
        in done.stderr
    )


def test_torch_dist_cache_is_keyed_by_model_and_its_hf_source():
    plan = build_plan(make_run(stages=t3rl_stages()), CTX)
    stage = plan.stage("convert_base")
    out = stage.outputs["torch_dist"]
    assert out.startswith("/ckpt/qwen3_4b_instruct_2507-") and out.endswith("_torch_dist")
    assert stage.complete_when[0] == f"{out}/latest_checkpointed_iteration.txt"
    assert build_plan(make_run(stages=t3rl_stages()), CTX).stage("convert_base").outputs["torch_dist"] == out
    other = make_run(stages=t3rl_stages())
    other = other.model_copy(
        update={"model": other.model.model_copy(update={"hf_checkpoint": "/elsewhere/hf"})}
    )
    moved = build_plan(other, CTX).stage("convert_base")
    # Another HF source (e.g. stage 1's exported weights) converts into its own directory.
    assert moved.outputs["torch_dist"] != out and not moved.complete_when[1].startswith(out)
    assert stage.env["PYTHONPATH"] == "/root/Megatron-LM:/root/slime" and stage.cwd == "/root/slime"
    # Other architecture flags (a Megatron setting of the same weights) convert into their own directory.
    arch = other.model.architecture.model_copy(update={"extra_args": ["--rotary-percent", "0.5"]})
    reflagged = other.model_copy(update={"model": other.model.model_copy(update={"architecture": arch})})
    reconverted = build_plan(reflagged, CTX).stage("convert_base")
    assert reconverted.outputs["torch_dist"] != moved.outputs["torch_dist"]


def test_large_models_convert_over_a_whole_node():
    small = make_run(stages=t3rl_stages())
    large = make_run(stages=t3rl_stages(), model="model/deepseek_v3")
    assert conversion_gpus(small) == 1
    assert conversion_gpus(large) == 8
    command = build_plan(large, CTX).stage("convert_base").commands[1]
    assert command[:3] == ("torchrun", "--nproc-per-node", "8")


@pytest.mark.parametrize(
    ("change", "key"),
    [
        (lambda s: s.pop("convert_base"), "stages.train_stage1.init_from"),
        (lambda s: s.pop("prepare_data"), "stages.train_stage1"),
        (
            lambda s: s.update(to_hf={"kind": "convert_torch_dist_to_hf", "source": "prepare_data"}),
            "stages.to_hf.source",
        ),
        (lambda s: s.update(ev={"kind": "eval", "checkpoint": "train_stage1"}), "stages.ev.checkpoint"),
        (
            lambda s: (
                s["train_stage1"]["curriculum"].update(save_interval=None)
                or s.update(to_hf={"kind": "convert_torch_dist_to_hf", "source": "train_stage1"})
            ),
            "stages.train_stage1.curriculum.save_interval",
        ),
    ],
    ids=["no-conversion", "no-data", "source-not-train", "checkpoint-not-conversion", "never-saves"],
)
def test_a_stage_that_cannot_be_built_is_a_config_error_naming_its_key(change, key):
    stages = t3rl_stages()
    change(stages)
    with pytest.raises(ConfigError) as err:
        build_plan(make_run(stages=stages), CTX)
    assert err.value.problems[0].key == key


def test_plan_script_holds_every_stage_and_is_valid_bash(tmp_path):
    import subprocess

    plan = build_plan(make_run(stages=full_stages()), CTX)
    script = plan.render_script()
    for stage in plan.stages:
        assert f"# ---- stage {stage.name} ({stage.kind})" in script
    assert (
        script.count("ray start --head") == 2 and script.count("ray stop") == 4
    )  # trap + explicit, per stage
    (tmp_path / "plan.sh").write_text(script)
    assert subprocess.run(["bash", "-n", str(tmp_path / "plan.sh")]).returncode == 0


def test_plan_script_runs_by_hand_with_its_own_ray_head(tmp_path):
    import os
    import subprocess

    from launch.plan.build import Plan
    from launch.plan.stages import Stage

    marks = tmp_path / "marks"
    marks.mkdir()
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "ray").write_text(f'#!/usr/bin/env bash\necho "ray $*" >> {marks}/order\n')
    (fake_bin / "ray").chmod(0o755)
    stages = (
        Stage("prep", "prepare_data", (f"echo prep >> {marks}/order",), env={"X": "from env"}),
        Stage(
            "train",
            "train",
            (("bash", "-c", f'echo "train $X" >> {marks}/order'),),
            needs_ray_head=True,
            gpus=8,
        ),
        Stage("after", "eval", (f"echo after >> {marks}/order",), cwd=str(tmp_path)),
    )
    script = tmp_path / "plan.sh"
    script.write_text(Plan("t", tmp_path, stages).render_script())
    env = {**os.environ, "PATH": f"{fake_bin}:{os.environ['PATH']}"}
    assert subprocess.run(["bash", str(script)], env=env).returncode == 0
    assert (marks / "order").read_text().splitlines() == [
        "prep",
        "ray start --head --port 6379 --dashboard-port 8265 --num-gpus 8 --disable-usage-stats",
        "train ",  # stages run in subshells: prep's env does not leak into train
        "ray stop",
        "after",
    ]


def test_every_stage_kind_declares_the_outputs_a_resume_verifies():
    plan = build_plan(make_run(stages={**full_stages(), "prepare_model": {"kind": "prepare_model"}}), CTX)
    declared = {stage.kind: stage.verify for stage in plan.stages}
    assert set(declared) == {
        "prepare_data",
        "prepare_model",
        "convert_hf_to_torch_dist",
        "train",
        "convert_torch_dist_to_hf",
        "eval",
    }
    assert all(declared.values())
    data = plan.stage("prepare_data")
    # Every split the env writes (not only the ones this plan reads) and the data manifest.
    written = make_run().env.split_names()
    assert set(data.verify) == {
        *(f"{data.outputs['dir']}/{split}.jsonl" for split in written),
        f"{data.outputs['dir']}/manifest.json",
    }
    assert {v for k, v in data.outputs.items() if k.startswith("split:")} <= set(data.verify)
    assert tuple(plan.stage("train_stage1").verify) == (plan.stage("train_stage1").outputs["checkpoint"],)
    assert tuple(plan.stage("to_hf").verify) == (plan.stage("to_hf").outputs["hf"],)
    assert tuple(plan.stage("convert_base").verify) == (plan.stage("convert_base").outputs["torch_dist"],)
    assert tuple(plan.stage("eval").verify) == (
        "/run/stages/eval/summary.json",
        "/run/stages/eval/trajectories.jsonl",
        "/run/stages/eval/report.md",
    )


@pytest.mark.parametrize(
    ("executor", "port"), [({"kind": "dry"}, 8265), ({"kind": "local", "dashboard_port": 8300}, 8300)]
)
def test_a_train_stage_submits_to_the_dashboard_of_the_head_it_starts(executor, port):
    # The dry executor declares no Ray ports: the head plan.sh starts listens on RayHead's default.
    plan = build_plan(make_run(stages=t3rl_stages(), executor=executor), CTX)
    (train,) = [stage for stage in plan.stages if stage.kind == "train"]
    assert f"--address=http://127.0.0.1:{port}" in " ".join(str(part) for part in train.commands[-1])
