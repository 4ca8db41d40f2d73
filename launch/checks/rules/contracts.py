"""Contracts between config groups: what one group declares it provides, another declares it needs.

- env ↔ reward: each env config class declares the `Env.outcome()` keys it returns (`OUTCOME_FIELDS`),
  each reward config class the keys it reads (`NEEDS_OUTCOME`). A reward on an env lacking them scores
  every episode from missing data (0, or a KeyError hours into training). Every train and eval stage
  runs the run's env with its reward, so one pair is checked per stage that uses it. A reward that
  parses one world's text (`READS_FORMAT`: ToolRL's, ReTool's) needs an env of that `ACTION_FORMAT`: the
  same keys of another world hold other things (a math answer is no list of gold calls).
- chat template ↔ family: the stop tokens, SFT loss masks and parsers follow `model.family`; a shipped
  template of another family renders a format none of them read, unless the user says it is intended.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import get_args

from launch.checks.context import Context
from launch.checks.eval_configs import eval_configs, eval_key
from launch.config.errors import Problem
from launch.config.schema import EvalStage, TrainStage
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.shipped import shipped_templates
from t3rl_core.config import RewardConfig
from t3rl_core.registries import ENVS, REWARDS


def reward_reads_what_env_provides(ctx: Context) -> Iterator[Problem]:
    """Every (env, reward) pair of the stages: the env's outcome has every field the reward reads."""
    env, reward = ctx.run.env, ctx.run.reward
    provided = type(env).OUTCOME_FIELDS
    needed = type(reward).NEEDS_OUTCOME
    reads = type(reward).READS_FORMAT
    if provided is None or (needed <= provided and reads in (None, env.ACTION_FORMAT)):
        return
    users = [n for n, s in ctx.run.stages.items() if isinstance(s, TrainStage | EvalStage)]
    where = f" (stages {', '.join(users)})" if users else ""
    missing = sorted(needed - provided)
    fitting = _rewards_for(provided, env.ACTION_FORMAT)
    key = ctx.latest("reward.name", "env.name")
    envs = _envs_for(needed, reads)
    to_env = (
        f"env={envs[0]} (envs whose outcome reward {reward.name} reads: {', '.join(envs)})" if envs else ""
    )
    to_reward = (
        f"reward={fitting[0]} (rewards that read env {env.name}'s outcome: {', '.join(fitting)})"
        if fitting
        else ""
    )
    # Undo the change the user made last: the env they picked, or the reward.
    first, second = (to_env, to_reward) if key == "env.name" else (to_reward, to_env)
    choices = [c for c in (first, second) if c]
    fix = "set " + "; or ".join(choices) if choices else "pick a reward whose NEEDS_OUTCOME the env covers"
    message = (
        f"reward {reward.name} reads outcome fields {missing} that env {env.name} does not provide"
        f"{where}: every episode would be scored from missing data"
        if missing
        else f"reward {reward.name} parses {reads} answers, but env {env.name}'s are {env.ACTION_FORMAT}"
        f"{where}: its response and ground_truth hold other things, and every episode would score as wrong"
    )
    yield Problem(key, message, fix=fix)


def _rewards_for(provided: frozenset[str], action_format: str) -> list[str]:
    fitting = []
    for name in REWARDS.names():
        try:
            config = REWARDS.config_class(name)
            needs, reads = config.NEEDS_OUTCOME, config.READS_FORMAT  # type: ignore[attr-defined]
        except (ImportError, AttributeError):
            continue
        if needs <= provided and reads in (None, action_format):
            fitting.append(name)
    return fitting


def _envs_for(needed: frozenset[str], reads: str | None) -> list[str]:
    fitting = []
    for name in ENVS.names():
        try:
            config = ENVS.config_class(name)
            provides, action_format = config.OUTCOME_FIELDS, config.ACTION_FORMAT  # type: ignore[attr-defined]
        except (ImportError, AttributeError):
            continue
        if provides is not None and needed <= provides and reads in (None, action_format):
            fitting.append(name)
    return fitting


def chat_template_of_family(ctx: Context) -> Iterator[Problem]:
    """A shipped chat template belongs to model.family unless chat.allow_foreign_template is true."""
    chat, family = ctx.run.model.chat, ctx.run.model.family
    template = chat.chat_template
    if template is None or template == family or chat.allow_foreign_template:
        return
    if template not in shipped_templates():
        return  # a user's .jinja file: its family is not known (chat_template_shipped checks it exists)
    key = ctx.latest("model.chat.chat_template", "model.family")
    fix = (
        f"set model.chat.chat_template={family}"
        if key.endswith("chat_template") and family in shipped_templates()
        else f"set model.family={template}"
        if key == "model.family"
        else f"set model.chat.chat_template={family}"
    )
    yield Problem(
        key,
        f"chat template '{template}' is of another family than model.family '{family}' "
        "(stop tokens, loss masks and parsers follow the family)",
        fix=f"{fix}; or, if intended, model.chat.allow_foreign_template=true",
    )


def reward_cuts_at_the_family_tokens(ctx: Context) -> Iterator[Problem]:
    """A reward that cuts the answer out of decoded text at chat-format tokens (`cuts_at()`) cuts at
    tokens of model.family's format. A warning: the cut that finds nothing keeps the text whole, which
    is right for the episode loop's answers (the model's own text, its stop token dropped) and wrong
    only for a decoded sample that holds its prompt."""
    reward, family = ctx.run.reward, ctx.run.model.family
    cut = reward.cuts_at()
    if cut is None or family not in FAMILIES:
        return  # a user's family (model.chat.family) is checked against its own template elsewhere
    field, tokens = cut
    special = set(FAMILIES[family].special_tokens)
    if set(tokens) <= special:
        return
    choices = get_args(type(reward).model_fields[field].annotation)
    fitting = [c for c in choices if set(_cut_tokens(reward, field, c)) <= special]
    yield Problem(
        ctx.latest(f"reward.{field}", "model.family"),
        f"reward {reward.name} cuts a decoded answer at {', '.join(tokens)} (reward.{field}="
        f"{getattr(reward, field)}), which the {family} chat format never writes: answers are scored "
        "whole (right for the episode loop's answers, not for a sample decoded with its prompt)",
        fix=f"set reward.{field}={fitting[0]}"
        if fitting
        else f"score {family} samples through t3rl's episode loop, not with their prompt decoded",
        severity="warning",
    )


def _cut_tokens(reward: RewardConfig, field: str, value: object) -> tuple[str, ...]:
    cut = reward.model_copy(update={field: value}).cuts_at()
    return cut[1] if cut else ()


def reference_engine_has_gold(ctx: Context) -> Iterator[Problem]:
    """An eval of the reference engine (the scripted gold policy) on an env that keeps no gold actions
    (`EnvConfig.gold_missing(None)`: OpenEnv) fails its first episode, after the data and the world were
    built: refused here, blamed on the engine or the env, whichever was set last."""
    reason = ctx.run.env.gold_missing(None)
    if reason is None:
        return
    for stage, config, overrides in eval_configs(ctx.run):
        if config.engine.name != "reference":
            continue
        engine = eval_key(stage, overrides, "engine")
        key = ctx.latest(f"{engine}.name", "env.name")
        where = f"eval stage {stage}" if stage else "the eval"
        origin = ctx.provenance.origin("env.name")
        swap = origin.chosen_on_line if key == "env.name" and origin is not None else None
        served = f"set {engine}={{name: sglang}} (a model served for the eval)"
        yield Problem(
            key,
            f"{where} plays the reference engine (each task's gold action), but env {ctx.run.env.name}: "
            f"{reason}; its first episode would fail",
            fix=f"drop {swap} (an env with gold actions); or {served}" if swap else served,
        )


RULES = (
    reward_reads_what_env_provides,
    chat_template_of_family,
    reward_cuts_at_the_family_tokens,
    reference_engine_has_gold,
)
