"""The state shared by the stage builders: stages built so far, path helpers, runtime configs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from launch.config.errors import ConfigError, Problem
from launch.config.overlay import overlay
from launch.config.schema import CurriculumConfig, EvalStage, RunConfig, TrainStage, stage_sections
from launch.plan.anchored_paths import anchored
from launch.plan.context import PlanContext
from launch.plan.plugin_shipping import plugin_modules, pythonpath
from launch.plan.plugin_shipping import shipments as shipments_of
from launch.plan.ray_head import RayHead
from launch.plan.services import services_of, with_urls
from launch.plan.stages import ImportCheck, OutputRef, Stage
from t3rl_core.config import RolloutConfig, RuntimeConfig
from t3rl_core.credit import TurnCreditConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.plugins import used_plugins

if TYPE_CHECKING:
    from pydantic import BaseModel

    from launch.plan.plugin_shipping import Shipment
    from t3rl_core.plugins import UsedPlugin

COMPLETE_MARKER = ".t3rl-complete"


class PlanBuilder:
    """One plan being built: its stages so far and the files the stage being built reads."""

    def __init__(self, run: RunConfig, ctx: PlanContext) -> None:
        self.run = run
        self.ctx = ctx
        self.stages: dict[str, Stage] = {}
        self.files: dict[str, str] = {}
        self.specs = run.stages
        # used_plugins of each section met, by key and section (the section kept, so its id is not
        # reused): every stage of a plan names the run's env, reward and chat (~9 % of a validate).
        self._plugins: dict[tuple[str, int], tuple[BaseModel, list[UsedPlugin]]] = {}

    # paths

    def cluster_python(self) -> str:
        """The interpreter of the t3rl_core stages where they run (see paths.cluster_python): this
        machine's when they run here (the local executor, or Ray's `other_stages: local`), slime's
        `paths.python` on the cluster."""
        paths = self.run.paths
        if paths.cluster_python:
            return paths.cluster_python
        executor = self.run.executor
        ray_here = executor.kind == "ray" and executor.other_stages == "local"
        here = executor.kind in ("local", "dry") or ray_here
        return self.ctx.python if here else paths.python

    def abs(self, path: str) -> str:
        p = Path(path).expanduser()
        return str(p if p.is_absolute() else (self.ctx.base_dir / p).resolve())

    def stage_dir(self, name: str) -> str:
        return str(self.ctx.run_dir / "stages" / name)

    @staticmethod
    def runtime_file(name: str, suffix: str = "") -> str:
        return f"runtime/{name}{suffix}.yaml"

    # lookups

    def earlier(self, kind: str) -> list[Stage]:
        """Stages of `kind` built so far (i.e. before the one being built)."""
        return [s for s in self.stages.values() if s.kind == kind]

    def ref(self, stage: str, key: str) -> OutputRef:
        return OutputRef(stage, key)

    def path(self, ref: OutputRef) -> str:
        return self.stages[ref.stage].outputs[ref.key]

    def hf_source(self) -> tuple[dict[str, OutputRef], str]:
        """The base model's HF dir: the prepare_model stage's output, else model.hf_checkpoint."""
        models = self.earlier("prepare_model")
        if models:
            ref = self.ref(models[-1].name, "hf")
            return {"hf": ref}, self.path(ref)
        return {}, self.abs(self.run.model.hf_checkpoint)

    def data_ref(self, name: str, split: str) -> OutputRef:
        datas = self.earlier("prepare_data")
        if not datas:
            raise problem(
                f"stages.{name}",
                "reads prepared data but no prepare_data stage comes before it",
                "add a stage `{kind: prepare_data}` before it",
            )
        ref = self.ref(datas[-1].name, f"split:{split}")
        if ref.key not in self.stages[ref.stage].outputs:
            raise problem(f"stages.{name}", f"split '{split}' is not written by stage '{ref.stage}'")
        return ref

    # runtime config

    def runtime_config(
        self,
        tokenizer: str,
        curriculum: CurriculumConfig | None,
        for_eval: bool,
        stage: TrainStage | None = None,
    ) -> RuntimeConfig:
        model = self.run.model
        env, reward = (
            stage_sections(self.run, stage) if stage is not None else (self.run.env, self.run.reward)
        )
        rollout = RolloutConfig()
        mis = None
        kl_in_reward = turn_credit = None
        if curriculum is not None:
            max_new = curriculum.rollout_max_response_len
            if for_eval and curriculum.eval_max_response_len:
                max_new = curriculum.eval_max_response_len
            rollout = RolloutConfig(
                max_num_steps=curriculum.max_num_steps,
                max_context_len=curriculum.max_context_len,
                max_response_len=curriculum.max_response_len,
                max_new_tokens=max_new,
                temperature=curriculum.rollout_temperature,
                top_p=curriculum.rollout_top_p,
            )
            mis = curriculum.algorithm.mis
            kl_in_reward = None if for_eval else curriculum.algorithm.kl_in_reward
            if not for_eval and curriculum.algorithm.credit == "turn":
                turn_credit = TurnCreditConfig(outcome_weight=curriculum.algorithm.turn_outcome_weight)
        return RuntimeConfig(
            env=env,
            reward=reward,
            chat=model.chat.model_copy(update={"tokenizer": tokenizer}),
            parsers=model.parsers,
            rollout=rollout,
            **({"mis": mis} if mis is not None else {}),
            kl_in_reward=kl_in_reward,
            turn_credit=turn_credit,
        )

    def add_file(self, rel: str, text: str) -> str:
        """Register a file the stage being built reads; its absolute path."""
        path = str(self.ctx.run_dir / rel)
        self.files[path] = text
        return path

    def write_runtime(self, name: str, runtime: RuntimeConfig) -> str:
        runtime = anchored(runtime, self.ctx.base_dir)  # the stage runs elsewhere than the launcher
        spec = self.specs.get(name)
        services = services_of(self.run, name, spec.kind) if spec is not None else []
        if any(service.env_url_key for _, service in services):
            # The env reaches the servers the stage starts (e.g. tau2's user model) at their URLs.
            data = runtime.model_dump(mode="json")
            data["env"] = with_urls(data["env"], services)
            runtime = RuntimeConfig.model_validate(data)
        return self.add_file(self.runtime_file(name), runtime.to_yaml() if self.ctx.texts else "")

    def needed_splits(self) -> list[str]:
        splits: list[str] = []
        for name, spec in self.specs.items():
            if isinstance(spec, TrainStage):
                cur = spec.curriculum
                splits.append(cur.train_split)
                if cur.eval_split and cur.eval_interval and cur.mode == "rl":
                    splits.append(cur.eval_split)
            elif isinstance(spec, EvalStage):
                splits.append(self.eval_config(name, spec).split)
        return list(dict.fromkeys(splits))

    def eval_config(self, name: str, spec: EvalStage) -> EvalConfig:
        if not spec.eval:
            return self.run.eval
        merged = overlay(self.run.eval.model_dump(mode="json"), spec.eval)
        try:
            return EvalConfig.model_validate(merged)
        except ValueError as err:
            raise problem(f"stages.{name}.eval", f"invalid eval override: {err}") from err

    # helpers

    def require_train(self, source: str, key: str) -> None:
        spec = self.specs.get(source)
        if source not in self.stages or not isinstance(spec, TrainStage):
            raise problem(
                key,
                f"'{source}' is not an earlier train stage",
                f"name one of: {', '.join(s.name for s in self.earlier('train')) or '(none)'}",
            )
        if spec.debug == "rollout_only":
            trains = [s.name for s in self.earlier("train") if self.specs[s.name].debug != "rollout_only"]
            raise problem(
                key,
                f"stage '{source}' only generates rollouts: it saves no weights",
                f"set {key}={trains[-1]} (the last earlier stage that trains)"
                if trains
                else "name a stage that trains",
            )
        if spec.curriculum.save_interval is None:
            raise problem(
                f"stages.{source}.curriculum.save_interval",
                f"stage '{source}' never saves a checkpoint "
                f"(slime saves only with --save-interval) but {key} uses it",
                f"set stages.{source}.curriculum.save_interval={spec.curriculum.num_rollout or 100} "
                "(slime also saves after the last rollout)",
            )

    def first_curriculum(self) -> CurriculumConfig | None:
        for spec in self.specs.values():
            if isinstance(spec, TrainStage):
                return spec.curriculum
        return None

    def curriculum_of(self, train_name: str) -> CurriculumConfig | None:
        spec = self.specs.get(train_name)
        return spec.curriculum if isinstance(spec, TrainStage) else None

    def slime_requires(self, script: str) -> dict[str, str]:
        """The slime and Megatron checkouts a GPU stage runs from."""
        paths = self.run.paths
        return {
            script: f"a slime checkout (paths.slime_root / $SLIME_ROOT is {paths.slime_root})",
            paths.megatron_root: (
                f"a Megatron-LM source tree (paths.megatron_root / $MEGATRON_ROOT is {paths.megatron_root})"
            ),
        }

    def hf_requires(self, inputs: Mapping[str, OutputRef], hf: str) -> dict[str, str]:
        """The base model's HF directory, unless a prepare_model stage of this run makes it."""
        if "hf" in inputs:
            return {}
        hint = f"huggingface-cli download {self.run.model.hf_id} --local-dir {hf}"
        return {f"{hf}/config.json": f"the HF checkpoint of {self.run.model.name} ({hint})"}

    def slime_tool_env(self) -> dict[str, Any]:
        """Where slime's tools/ scripts run: from the slime checkout, with Megatron's source importable."""
        paths = self.run.paths
        return {"env": {"PYTHONPATH": f"{paths.megatron_root}:{paths.slime_root}"}, "cwd": paths.slime_root}

    def plugins_of(self, config: BaseModel, key: str) -> list[UsedPlugin]:
        """`used_plugins(config, key)`, found once per section of this plan."""
        known = self._plugins.get((key, id(config)))
        if known is None or known[0] is not config:
            known = self._plugins[key, id(config)] = (config, used_plugins(config, key))
        return known[1]

    def shipments(self, configs: Mapping[str, BaseModel]) -> list[Shipment]:
        """How the plugin packages `configs` name reach the stage's processes."""
        executor = self.run.executor
        working_dir = executor.working_dir if executor.kind == "ray" else None
        try:
            return shipments_of(configs, working_dir, self.plugins_of)
        except ValueError as err:
            raise problem("env.name", str(err), "install the plugin or put it on PYTHONPATH") from err

    def local_plugin_env(
        self, configs: Mapping[str, BaseModel]
    ) -> tuple[dict[str, str], ImportCheck | None, tuple[str, ...]]:
        """For a stage running t3rl_core here: its env (plugin source trees on PYTHONPATH), its
        pre-flight import check and plan notes; empty when `configs` name no plugin."""
        shipped = self.shipments(configs)
        if not shipped:
            return {}, None, ()
        path = pythonpath(shipped, self.ctx.environ.get("PYTHONPATH"))
        check = ImportCheck(self.cluster_python(), path, tuple(plugin_modules(configs, self.plugins_of)))
        notes = tuple(f"plugin {s.describe()}" for s in shipped)
        return ({"PYTHONPATH": path} if path else {}), check, notes

    def ray_address(self) -> str | None:
        executor = self.run.executor
        if executor.kind == "ray":
            return executor.address
        # The dry executor has no Ray ports: the head plan.sh starts is RayHead's default.
        port = getattr(executor, "dashboard_port", RayHead._field_defaults["dashboard_port"])
        return f"http://127.0.0.1:{port}"


def problem(key: str, message: str, fix: str = "") -> ConfigError:
    return ConfigError([Problem(key, message, fix=fix)])
