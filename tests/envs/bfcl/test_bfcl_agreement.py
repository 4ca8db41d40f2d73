"""Eval mode reproduces bfcl-eval's official verdict.

The reference verdict is computed the way bfcl-eval produces it: its inference loop (a turn is
force-quit after MAXIMUM_STEP_LIMIT executed steps and the entry stops there), then the runner
(`_evaluate_single_multi_turn_entry`: fewer model turns than ground-truth turns →
multi_turn:force_terminated), then `multi_turn_checker`, which re-executes everything with bfcl-eval's
own engine. The environment is driven with the same trajectory through its public step API. Both the
verdict and the failure type must agree, on every ground-truth replay and on seeded perturbations.
"""

from __future__ import annotations

import ast
import itertools
import random
from collections import Counter
from typing import Any

import pytest

from t3rl_core.envs.bfcl.checks import FORCE_TERMINATED
from t3rl_core.envs.bfcl.config import MULTI_TURN_CATEGORIES
from t3rl_core.envs.bfcl.replay import replay_decoded

pytestmark = pytest.mark.slow

Decoded = list[list[list[str]]]
_names = (f"t3rl_agreement_{i}" for i in itertools.count())


def official_verdict(row: dict[str, Any], decoded: Decoded) -> tuple[bool, str | None]:
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    task = row["metadata"]["bfcl_task"]
    harnessed: Decoded = []
    for steps in decoded:
        steps = [step for step in steps if step]  # the runner drops steps that decode to nothing
        if len(steps) > MAXIMUM_STEP_LIMIT:  # the inference loop force-quits the whole entry
            harnessed.append(steps[: MAXIMUM_STEP_LIMIT + 1])
            break
        harnessed.append(steps)
    if len(harnessed) != len(task["ground_truth"]):
        return False, FORCE_TERMINATED
    # bfcl-eval keeps its instances in module globals keyed by model name + entry id: a fresh name per
    # check, removed afterwards.
    model_name = next(_names)
    entry = {key: task[key] for key in ("id", "initial_config", "involved_classes")}
    try:
        category = row["metadata"]["data_source"]
        result = multi_turn_checker(harnessed, task["ground_truth"], entry, category, model_name)
    finally:
        module_globals = vars(multi_turn_utils)
        for name in [name for name in module_globals if name.startswith(model_name)]:
            del module_globals[name]
    return result["valid"], result.get("error_type")


def env_verdict(row: dict[str, Any], decoded: Decoded) -> tuple[bool, str | None]:
    outcome = replay_decoded(row, decoded, mode="eval")
    return outcome["accuracy"] == 1.0, outcome["failure"]


def gold_decoded(row: dict[str, Any]) -> Decoded:
    return [[list(turn)] if turn else [] for turn in row["metadata"]["bfcl_task"]["ground_truth"]]


# ------------------------------------------------------------------------------------ perturbations


def _render(name: str, args: list[Any], kwargs: dict[str, Any]) -> str:
    parts = [repr(value) for value in args] + [f"{key}={value!r}" for key, value in kwargs.items()]
    return f"{name}({', '.join(parts)})"


def _changed(value: Any, rng: random.Random) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + rng.choice([1, 2.5])
    if isinstance(value, str):
        return rng.choice([value + "_x", value.upper(), "zzz"]) if value else "x"
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    return "x"


def _change_argument(call: str, rng: random.Random) -> str | None:
    node = ast.parse(call, mode="eval").body
    args = [ast.literal_eval(arg) for arg in node.args]
    kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    slots = [("arg", i) for i in range(len(args))] + [("kw", key) for key in kwargs]
    if not slots:
        return None
    kind, key = rng.choice(slots)
    if kind == "arg":
        args[key] = _changed(args[key], rng)
    else:
        kwargs[key] = _changed(kwargs[key], rng)
    return _render(node.func.id, args, kwargs)


def perturb(row: dict[str, Any], kind: str, rng: random.Random) -> Decoded | None:
    """One perturbation of the gold trajectory; None when the entry cannot take this kind."""
    gold = [list(turn) for turn in row["metadata"]["bfcl_task"]["ground_truth"]]
    filled = [i for i, turn in enumerate(gold) if turn]
    turns: list[list[list[str]]] = [[turn] if turn else [] for turn in gold]
    if kind == "drop_call":
        i = rng.choice(filled)
        calls = list(gold[i])
        calls.pop(rng.randrange(len(calls)))
        turns[i] = [calls] if calls else []
    elif kind == "change_argument":
        i = rng.choice(filled)
        j = rng.randrange(len(gold[i]))
        changed = _change_argument(gold[i][j], rng)
        if changed is None:
            return None
        turns[i] = [[*gold[i][:j], changed, *gold[i][j + 1 :]]]
    elif kind == "add_call":
        i = rng.randrange(len(gold))
        extra = rng.choice([call for turn in gold for call in turn])
        calls = list(gold[i])
        calls.insert(rng.randrange(len(calls) + 1), extra)
        turns[i] = [calls]
    elif kind == "swap_order":
        candidates = [i for i in filled if len(gold[i]) >= 2]
        if not candidates:
            return None
        i = rng.choice(candidates)
        calls = list(gold[i])
        a, b = rng.sample(range(len(calls)), 2)
        calls[a], calls[b] = calls[b], calls[a]
        turns[i] = [calls]
    elif kind == "skip_turn":
        turns[rng.choice(filled)] = []
    elif kind == "truncate":
        turns = turns[: rng.randrange(1, len(turns))]
    elif kind == "split_steps":
        i = rng.choice(filled)
        turns[i] = [[call] for call in gold[i]]
    elif kind == "flood_steps":
        # More than MAXIMUM_STEP_LIMIT steps: fatal before the last turn, checked normally on it.
        i = rng.choice([len(gold) - 1, rng.randrange(len(gold))])
        turns[i] = [*turns[i], *[["no_such_function()"]] * (21 + rng.randrange(3))]
    elif kind == "bad_arguments":
        i = rng.choice(filled)
        call = rng.choice(gold[i])
        turns[i] = [[*gold[i], call[:-1] + (", " if "=" in call or "'" in call else "") + "bogus=1)"]]
    elif kind == "call_in_empty_turn":
        empty = [i for i, turn in enumerate(gold) if not turn]
        if not empty:
            return None
        i = rng.choice(empty)
        later = [call for turn in gold[i + 1 :] for call in turn] or ["pwd()"]
        turns[i] = [[rng.choice(later)]]
    else:
        raise ValueError(kind)
    return turns


KINDS = (
    "drop_call",
    "change_argument",
    "add_call",
    "swap_order",
    "skip_turn",
    "truncate",
    "split_steps",
    "flood_steps",
    "bad_arguments",
    "call_in_empty_turn",
)


# ---------------------------------------------------------------------------------------------- tests


def test_gold_replays_agree_with_the_official_checker(bfcl_rows):
    disagreements = []
    for row in bfcl_rows:
        decoded = gold_decoded(row)
        official, ours = official_verdict(row, decoded), env_verdict(row, decoded)
        if official != ours:
            disagreements.append((row["metadata"]["index"], official, ours))
    assert disagreements == []
    assert len(bfcl_rows) == 800


def test_perturbed_trajectories_agree_with_the_official_checker(bfcl_rows):
    rng = random.Random(20260323)
    by_category = {
        category: [row for row in bfcl_rows if row["metadata"]["data_source"] == category]
        for category in MULTI_TURN_CATEGORIES
    }
    cases = []
    for category, rows in by_category.items():
        kinds = itertools.cycle(KINDS)
        for row in rng.sample(rows, 70):
            for _ in range(len(KINDS)):  # the next kind this entry can take
                kind = next(kinds)
                decoded = perturb(row, kind, rng)
                if decoded is not None:
                    cases.append((category, kind, row, decoded))
                    break
    disagreements, verdicts = [], Counter()
    for _, kind, row, decoded in cases:
        official, ours = official_verdict(row, decoded), env_verdict(row, decoded)
        verdicts[official[1] or "valid"] += 1
        if official != ours:
            disagreements.append((row["metadata"]["index"], kind, decoded, official, ours))
    assert disagreements == []
    assert len(cases) >= 200
    assert Counter(category for category, *_ in cases) == {c: 70 for c in MULTI_TURN_CATEGORIES}
    assert set(KINDS) == {kind for _, kind, *_ in cases}
    # The perturbations reach every verdict the runner can give on multi-turn entries.
    assert {
        "valid",
        FORCE_TERMINATED,
        "multi_turn:empty_turn_model_response",
        "multi_turn:instance_state_mismatch",
        "multi_turn:execution_response_mismatch",
    } <= set(verdicts), verdicts
    assert verdicts["valid"] >= 40 and sum(verdicts.values()) - verdicts["valid"] >= 80, verdicts
