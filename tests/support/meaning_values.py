"""Round eleven's mutations: every leaf of every shipped experiment given a value of the right type whose
meaning is wrong (tests/launch/test_preflight_unlisted_kinds_eleven.py). The harness's own kinds
(tests/support/preflight_mutations.py) push each number just past its declared bounds; these push it far
past them, to where it stops being a setting:

- `huge`: 10**12 for a whole number, 1e12 for a real (a count no loop may enumerate, a wait no clock holds,
  a top-k no int32 tensor holds, a weight decay that flips every weight);
- `tiny`: 1e-300 for a real (0 in float32, where the stages compute);
- `zero`, `minus one`: 0 and -1 where the shipped value is neither;
- `empty`: '' for a string;
- `repeat`: a list of scalars with its first item again at its end.

Each must be refused at its key with a first fix that validates, or accepted with the whole plan built.
`python -m tests.support.meaning_values` judges them all and prints what ends otherwise.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator

from launch.config.schema_walk import model_at
from tests.support.preflight_mutations import EXPERIMENTS, Mutation, _resolved, judge

# (experiment-independent) keys whose meaning-wrong values end otherwise, each with why it is left:
# judged by the harness's main run, not by the property test that samples the rest.
# (none since round twelve: a model size set after the layout that no GPU holds is blamed on that size).
LEFT: dict[tuple[str, str], str] = {}


def meaning_mutations(experiments: list[str] = EXPERIMENTS) -> Iterator[tuple[Mutation, str]]:
    """(mutation, its kind) for every scalar leaf and list of scalars of every experiment, each
    (field, kind) once across experiments."""
    seen: set[tuple[str, str]] = set()
    for experiment in experiments:
        try:
            config = _resolved(experiment).config
        except Exception:  # an experiment that needs a value of the user's (a hub environment's id)
            continue
        for key, value in _leaves(config, ""):
            parent, _, name = key.rpartition(".")
            model = model_at(parent, config)
            if model is None or name not in model.model_fields:
                continue
            field = f"{model.__qualname__}.{name}"
            for kind, text in _values(value):
                if (field, kind) in seen:
                    continue
                seen.add((field, kind))
                yield Mutation(experiment, kind, key, text), kind


def _leaves(node: object, prefix: str) -> Iterator[tuple[str, object]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, node


def _values(value: object) -> Iterator[tuple[str, str]]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, list):
        if value and all(isinstance(v, int | float | str) and not isinstance(v, bool) for v in value):
            yield "repeat", "[" + ",".join(map(_item, [*value, value[0]])) + "]"
        return
    if type(value) is int:
        yield "huge", str(10**12)
    elif type(value) is float:
        yield "huge", "1e12"
        yield "tiny", "1e-300"
    if isinstance(value, int | float):
        if value != 0:
            yield "zero", "0"
        if value != -1:
            yield "minus one", "-1"
    elif isinstance(value, str) and value:
        yield "empty", "''"


def _item(value: object) -> str:
    text = str(value)
    return text if text.replace("_", "").replace("-", "").replace(".", "").isalnum() else f"'{text}'"


def left(mutation: Mutation, kind: str) -> str | None:
    """Why a mutation is left out of the property test, or None."""
    return LEFT.get((mutation.key, kind))


def main() -> int:
    counts: Counter[str] = Counter()
    bad = 0
    show_accepted = "--accepted" in sys.argv
    experiments = [a for a in sys.argv[1:] if not a.startswith("--")] or EXPERIMENTS
    for mutation, kind in meaning_mutations(experiments):
        verdict = judge(mutation)
        counts[verdict.outcome] += 1
        if verdict.outcome == "accepted" and show_accepted:
            print(f"[accepted] {mutation}", flush=True)
        if verdict.outcome not in ("refused, fix validates", "accepted"):
            bad += left(mutation, kind) is None
            why = left(mutation, kind) or ""
            print(f"[{verdict.outcome}] {mutation} — {verdict.detail[:200]} {why}", flush=True)
    print(dict(counts))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
