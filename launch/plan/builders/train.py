"""train stages: a slime training job submitted to Ray (argv from `launch.plan.slime_args`)."""

from __future__ import annotations

from pathlib import Path

from launch.config.schema import TrainStage
from launch.plan.builders.builder import PlanBuilder, problem
from launch.plan.plugin_shipping import plugin_modules, py_modules, pythonpath
from launch.plan.slime_args import TrainPaths, build_train_job
from launch.plan.slime_debug import build_debug_job
from launch.plan.stages import LATEST_CHECKPOINT, ImportCheck, OutputRef, Stage, marked
from launch.previous_run import RunStageRef, checkpoint_dir


def _previous_checkpoint(builder: PlanBuilder, ref: RunStageRef) -> str:
    """The Megatron checkpoint dir a finished train stage of another run saved to."""
    return str(checkpoint_dir(Path(builder.abs(str(ref.run_dir))), ref.stage))


def _debug_rollouts(
    builder: PlanBuilder, name: str, spec: TrainStage, inputs: dict[str, OutputRef], stage_dir: str
) -> str:
    """Where a debug stage writes (rollout_only) or reads (train_only) its rollout .pt files."""
    if spec.debug == "rollout_only":
        return f"{stage_dir}/rollouts"
    key = f"stages.{name}.rollouts_from"
    source = spec.rollouts_from
    if source is None:
        raise problem(key, "a train_only stage needs saved rollouts", "name a rollout_only stage or a dir")
    earlier = builder.specs.get(source)
    if source in builder.stages and isinstance(earlier, TrainStage):
        if earlier.debug != "rollout_only":
            raise problem(key, f"stage '{source}' saves no debug rollouts", "name a rollout_only stage")
        inputs["rollouts"] = builder.ref(source, "rollouts")
        return builder.path(inputs["rollouts"])
    return builder.abs(source)


def train(builder: PlanBuilder, name: str, spec: TrainStage) -> Stage:
    cur = spec.curriculum
    base = ""
    inputs, hf = builder.hf_source()
    if spec.init_from is None:
        converts = builder.earlier("convert_hf_to_torch_dist")
        if not converts:
            raise problem(
                f"stages.{name}.init_from",
                "starts from the base model, but no convert_hf_to_torch_dist stage comes before it",
                "add a stage `{kind: convert_hf_to_torch_dist}` before it",
            )
        inputs["base"] = builder.ref(converts[-1].name, "torch_dist")
    elif (previous := RunStageRef.parse(spec.init_from)) is not None:
        # Another run's finished train stage (checked by the validator; planning does no I/O).
        base = _previous_checkpoint(builder, previous)
    else:
        builder.require_train(spec.init_from, f"stages.{name}.init_from")
        inputs["base"] = builder.ref(spec.init_from, "checkpoint")
    inputs["train_data"] = builder.data_ref(name, cur.train_split)
    eval_data = None
    if cur.mode == "rl" and cur.eval_split and cur.eval_interval:
        inputs["eval_data"] = builder.data_ref(name, cur.eval_split)
        eval_data = builder.path(inputs["eval_data"])
    stage_dir = builder.stage_dir(name)
    runtime = builder.write_runtime(name, builder.runtime_config(hf, cur, for_eval=False, stage=spec))
    paths = builder.run.paths
    train_paths = TrainPaths(
        hf_checkpoint=hf,
        ref_load=builder.path(inputs["base"]) if "base" in inputs else base,
        save=str(checkpoint_dir(builder.ctx.run_dir, name)),
        prompt_data=builder.path(inputs["train_data"]),
        eval_prompt_data=eval_data,
        runtime_config=runtime,
        stage_dir=stage_dir,
        slime_root=paths.slime_root,
        megatron_root=paths.megatron_root,
        t3rl_root=builder.ctx.t3rl_root,
        python=paths.python,
    )
    common = {"address": builder.ray_address(), "run_id": builder.ctx.run_id, "environ": builder.ctx.environ}
    if spec.debug is None:
        job = build_train_job(builder.run, name, spec, train_paths, **common)
    else:
        rollouts = _debug_rollouts(builder, name, spec, inputs, stage_dir)
        job = build_debug_job(builder.run, name, spec, train_paths, rollouts, **common)
    # The hooks stay t3rl's; the runtime YAML names the plugins, which the job's runtime_env carries.
    sections = {"env": builder.run.env, "reward": builder.run.reward, "model.chat": builder.run.model.chat}
    shipped = builder.shipments(sections)
    job = job._replace(py_modules=tuple(py_modules(shipped)))
    imports = None
    if shipped:
        path = pythonpath(shipped, job.env_vars.get("PYTHONPATH"))
        imports = ImportCheck(job.python, path, tuple(plugin_modules(sections, builder.plugins_of)))
    outputs = {
        "checkpoint": train_paths.save,
        "rollouts": f"{stage_dir}/rollouts",
        "runtime_config": runtime,
    }
    if spec.debug == "rollout_only":
        del outputs["checkpoint"]  # nothing trains
    return Stage(
        name,
        "train",
        (tuple(job.submit_argv()),),
        inputs=inputs,
        outputs=outputs,
        needs_ray_head=True,
        gpus=job.gpus,
        nodes=job.nodes,
        slime_job=job,
        # slime saves every save_interval rollouts (and at the end): the dir then holds a whole save.
        verify={train_paths.save: marked(LATEST_CHECKPOINT)} if cur.save_interval is not None else {},
        requires={**builder.slime_requires(job.script), **builder.hf_requires(inputs, hf)},
        summary=f"{cur.mode} {cur.name} on {cur.train_split}: {Path(job.script).name}, {job.gpus} GPUs",
        imports=imports,
        notes=tuple(f"plugin {s.describe()}" for s in shipped),
    )
