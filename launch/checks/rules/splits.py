"""An eval never scores tasks its checkpoint was trained on, unless the experiment says so on purpose.

Each env declares which parts of its task space every split it prepares comes from
(`EnvConfig.split_parts()`: BFCL's id split × category, tau2's domain × task set, ReTool's shuffled
train/test rows, ToolRL's parquet files). The splits the training stages behind a checkpoint read
(their `train_split`, following `init_from`) are compared with the split each eval scores — an eval
stage's `eval.split`, a train stage's in-loop `eval_split` — part by part, with no data prepared.
A fix moves the eval to a split that shares no task, or training to one that is no test split.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from launch.checks.context import Context
from launch.checks.eval_configs import eval_config_of, eval_key
from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import typed_text
from launch.config.schema import ConvertTorchDistToHfStage, EvalStage, RunConfig, TrainStage

_ON_PURPOSE = "allow_train_eval_overlap=true"
_SCORED = ("test", "unseen", "val")


def _lineage(run: RunConfig, stage: str) -> list[str]:
    """A train stage and the train stages its weights start from (`init_from`), nearest first."""
    chain: list[str] = []
    while stage in run.stages and stage not in chain:
        spec = run.stages[stage]
        if not isinstance(spec, TrainStage):
            break
        chain.append(stage)
        if spec.init_from is None:
            break
        stage = spec.init_from
    return chain


def _evaluations(run: RunConfig) -> Iterator[tuple[str, str, list[str]]]:
    """(eval split key, split, the train stages behind what it evaluates) of every eval of the run."""
    for name, spec in run.stages.items():
        if isinstance(spec, TrainStage) and spec.curriculum.eval_split is not None:
            yield f"stages.{name}.curriculum.eval_split", spec.curriculum.eval_split, _lineage(run, name)
        if isinstance(spec, EvalStage) and spec.checkpoint is not None:
            source = run.stages.get(spec.checkpoint)
            config = eval_config_of(run, spec)
            if isinstance(source, ConvertTorchDistToHfStage) and config is not None:
                key = eval_key(name, spec.eval, "split")
                yield key, config.split, _lineage(run, source.source)


def train_and_eval_disjoint(ctx: Context) -> Iterator[Problem]:
    """The tasks an eval scores are none its checkpoint trained on."""
    parts = ctx.run.env.split_parts()
    if parts is None or ctx.run.allow_train_eval_overlap:
        return
    for eval_key_, split, trained in _evaluations(ctx.run):
        if split not in parts:
            continue  # an unknown split is reported by the split rules
        for stage in trained:
            spec = ctx.run.stages[stage]
            assert isinstance(spec, TrainStage)
            train_split = spec.curriculum.train_split
            shared = parts.get(train_split, frozenset()) & parts[split]
            if not shared:
                continue
            train_key = f"stages.{stage}.curriculum.train_split"
            # the env's data settings decide each split's parts too (tau2's demonstrations_split)
            settings = {f"env.{field}": field for field in type(ctx.run.env).SIZE_FIELDS}
            # a split's own entry in a mapping of splits (ToolRL's data.splits.<split>: its file) is set
            # on its own, typed as another name for the training file
            entries = [f"{k}.{s}" for k in settings if _mapping(ctx, k) for s in (train_split, split)]
            blamed = ctx.latest(train_key, eval_key_, *settings, *entries)
            default = _default(type(ctx.run.env), settings.get(blamed, ""))
            if blamed in entries:
                fix = f"point {blamed} at data no training split reads; or set {_ON_PURPOSE} if it is meant"
            elif blamed in settings and default is not _NONE:
                fix = f"set {blamed}={typed_text(default)}; or {_ON_PURPOSE} if the overlap is intended"
            else:
                fix = _fix(ctx, blamed, eval_key_, split, train_key, train_split, parts)
            yield Problem(
                blamed,
                f"{eval_key_}={split} scores {len(shared)} part(s) of the task space that stage {stage} "
                f"trains on ({train_key}={train_split}: {', '.join(sorted(shared)[:4])}"
                f"{', …' if len(shared) > 4 else ''}): the eval would report memorised tasks",
                fix=fix,
            )
            break


_NONE = object()


def _mapping(ctx: Context, key: str) -> bool:
    node: Any = ctx.data
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict)


def _default(model: Any, field: str) -> Any:
    """The schema default of a dotted field below `model` (`_NONE` when it has none)."""
    head, _, rest = field.partition(".")
    info = model.model_fields.get(head) if head else None
    if info is None:
        return _NONE
    if rest:
        return _default(info.annotation, rest) if isinstance(info.annotation, type) else _NONE
    return _NONE if info.is_required() else info.get_default(call_default_factory=True)


def _fix(
    ctx: Context,
    blamed: str,
    eval_key_: str,
    split: str,
    train_key: str,
    train_split: str,
    parts: dict[str, frozenset[str]],
) -> str:
    """Move the key set last to a split that shares no task; else the other key; else say it is meant."""
    trained = frozenset().union(*(parts.get(s, frozenset()) for s in _trained_splits(ctx.run)))
    scored = parts[split]
    # Never a held-out split for training: none of its parts is a test or validation part.
    train_options = [
        s for s, p in parts.items() if not p & scored and not any(_held_out(x) for x in p) and "test" not in s
    ]
    eval_options = [s for s, p in parts.items() if not p & trained]
    moves = [(train_key, train_split, train_options, ("train",)), (eval_key_, split, eval_options, _SCORED)]
    if blamed == eval_key_:
        moves.reverse()
    for key, current, options, wanted in moves:
        if not options:
            continue
        # Training reads a train split, an eval scores a held-out one, when the env has such a name.
        named = [s for s in options if any(word in s for word in wanted)]
        choice = did_you_mean(current, named or options) or (named or options)[0]
        return f"set {key}={choice}; or {_ON_PURPOSE} if the overlap is intended"
    return f"set {_ON_PURPOSE} if the overlap is intended"


def _trained_splits(run: RunConfig) -> list[str]:
    return [s.curriculum.train_split for s in run.stages.values() if isinstance(s, TrainStage)]


def _held_out(part: str) -> bool:
    return any(word in part for word in ("test", "val"))


RULES = (train_and_eval_disjoint,)
