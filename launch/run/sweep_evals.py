"""A sweep whose points' evals would measure different things: a swept training setting that the eval
inherits (the curriculum's max_num_steps, its response length when the eval sets none, the parsers)
gives each point's eval another budget, decoding or protocol. Their summaries record that (the benchmark
identity, t3rl_core.eval.identity) and are then never put side by side: sweep.md does not rank them and a
search cannot score its trials against each other, after every point has trained. Found here from each
point's planned eval files, before anything runs; the fix pins the eval's own setting where it has one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from launch.config.errors import Problem
from launch.config.fixes import assign, typed_text
from t3rl_core.config import RUNTIME_KEY, RuntimeConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.identity import budget_of, decoding_of, protocol_of
from t3rl_core.yaml_text import safe_load

if TYPE_CHECKING:
    from launch.plan.build import Plan

# The parts of the identity a point's own settings decide (data, scorer and selection are the sweep's).
_PARTS = ("budget", "decoding", "protocol")
# Part.key → the eval stage's own override that pins it for every point.
_PINNED_BY = {
    "budget.max_new_tokens": "max_new_tokens",
    "budget.max_num_steps": "max_num_steps",
    "decoding.top_p": "top_p",
    "decoding.temperature": "temperature",
    "decoding.top_k": "top_k",
}


def eval_part_problems(
    points: Sequence[tuple[str, Plan]], swept: Sequence[str], data: Mapping[str, Any], *, search: bool = False
) -> list[Problem]:
    """A problem per eval stage whose identity parts differ between points (`points`: label and plan;
    `data`: the first point's config, for the fix). A warning for a sweep (its runs still train; only
    their evals are not compared), an error for a search (its objective compares them)."""
    per_point = [(label, _eval_parts(plan)) for label, plan in points]
    stages = sorted(set.intersection(*(set(parts) for _, parts in per_point))) if per_point else []
    problems = []
    for stage in stages:
        values = {label: parts[stage] for label, parts in per_point}
        differing = sorted({key for parts in values.values() for key in parts if _differs(values, key)})
        if differing:
            problems.append(_problem(stage, differing, values, swept, data, search))
    return problems


def _eval_parts(plan: Plan) -> dict[str, dict[str, Any]]:
    """Eval stage → its identity parts a point decides, flattened (`budget.max_num_steps` → 30)."""
    from t3rl_core.eval.runner import apply_eval_limits  # lazy: the eval runner's modules, only for a sweep

    found = {}
    for stage in plan.stages:
        if stage.kind != "eval":
            continue
        documents = [safe_load(content) for content in stage.files.values()]
        runtime = next((d for d in documents if isinstance(d, dict) and RUNTIME_KEY in d), None)
        config = next((d for d in documents if isinstance(d, dict) and RUNTIME_KEY not in d), None)
        if runtime is None or config is None:
            continue
        eval_config = EvalConfig.model_validate(config)
        runtime_config = apply_eval_limits(RuntimeConfig.model_validate(runtime[RUNTIME_KEY]), eval_config)
        parts = {
            "budget": budget_of(runtime_config.rollout),
            "decoding": decoding_of(runtime_config, eval_config),
            "protocol": protocol_of(runtime_config),
        }
        found[stage.name] = {f"{part}.{key}": value for part in _PARTS for key, value in parts[part].items()}
    return found


def _differs(values: Mapping[str, Mapping[str, Any]], key: str) -> bool:
    return len({repr(parts.get(key)) for parts in values.values()}) > 1


def _problem(
    stage: str,
    differing: list[str],
    values: Mapping[str, Mapping[str, Any]],
    swept: Sequence[str],
    data: Mapping[str, Any],
    search: bool,
) -> Problem:
    shown = "; ".join(
        f"{key}: " + ", ".join(f"{label} {parts.get(key)!r}" for label, parts in values.items())
        for key in differing[:3]
    )
    first = next(iter(values.values()))
    pins = [
        assign(data, f"stages.{stage}.eval.{_PINNED_BY[key]}", typed_text(first[key]))
        for key in differing
        if key in _PINNED_BY
    ]
    unpinned = [key for key in differing if key not in _PINNED_BY]
    fix = (
        f"pin the eval's own: {' '.join(pins)} (every point's eval then measures alike)"
        if pins and not unpinned
        else f"sweep a setting the eval does not inherit ({', '.join(unpinned)} has no eval setting of its "
        "own), or eval each point's checkpoint with one t3rl eval of the same settings"
    )
    consequence = (
        "the study takes no metric from a trial whose eval measured another benchmark, after it trained"
        if search
        else "sweep.md will not rank them, and `t3rl runs` does not put them side by side"
    )
    return Problem(
        f"stages.{stage}",
        f"the {'trials' if search else 'points'}' eval '{stage}' would measure different things ({shown}): "
        f"{consequence}",
        f"the swept {', '.join(f'`{s}`' for s in swept) or 'settings'}",
        fix,
        severity="error" if search else "warning",
    )
