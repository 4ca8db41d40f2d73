"""Mutations of the shipped experiments, generated from the schema, and what the pre-flight makes of
each: every leaf pushed through its type's boundaries and wrong kinds, every pair of port holders
collided, every stage reference broken, every list of named choices given a repeat, every choice typed in
capitals, and valid values that change what the rest must be: every other choice of a choice field, every
boolean flipped, every other option of the model and hardware groups; and (tests/support/mutation_kinds.py)
every other option of every other group, model and hardware swapped together, every field deleted or
nulled, and values of another shape. Each mutation must end one of two ways:

- refused with an error at the mutated key (or the key it collides with), whose first fix, applied as
  the user would, validates (for a swapped option: its first error, wherever it is, whose fix removes
  it);
- accepted, which means the whole plan was built and every slime argv in it passed slime's generated
  option table (`t3rl validate` builds the plan in memory).

`python -m tests.support.preflight_mutations` runs them all (`--kind`, `--experiment`: some) and prints the
counts that the docs report (docs/explanation/preflight.md); it exits 1 when any mutation ends otherwise
(refused elsewhere, with a prose fix, with a fix that fails, or crashed: an exception out of the
pre-flight). tests/launch/test_preflight_mutations.py runs a fixed sample.
"""

from __future__ import annotations

import argparse
import atexit
import math
import shutil
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from launch.checks.declared import declared
from launch.checks.ledger import claims_of
from launch.checks.resolve import Resolved, resolve
from launch.checks.rules.kinds import names_choices
from launch.checks.validate import trial_plan
from launch.config.errors import ConfigError, Problem
from launch.config.fixes import quoted
from launch.config.schema_walk import model_at
from t3rl_core.fields import Distinct, Domain, StrKind
from tests.support.fix_applier import apply_first_fix
from tests.support.mutation_kinds import (
    DELETED,
    entry_deletions,
    group_options,
    leaf_shapes,
    list_shapes,
    lookalike,
    pairs,
    section_shapes,
)
from tests.support.schema_leaves import Leaf, leaves

EXPERIMENTS = sorted(
    p.stem for p in (Path(__file__).resolve().parents[2] / "conf" / "experiment").glob("*.yaml")
)
Outcome = Literal[
    "refused, fix validates",
    "refused, fix fails",
    "refused, prose fix",
    "refused elsewhere",
    "crashed",
    "accepted",
]


@dataclass(frozen=True)
class Mutation:
    experiment: str
    kind: str
    key: str
    value: str
    # Keys a refusal may name besides `key` (the other holder of a collided resource).
    also: tuple[str, ...] = ()

    @property
    def overrides(self) -> list[str]:
        if self.kind == YAML_TEXT:
            return [f"+experiment={_user_experiment(self)}"]
        if self.value == DELETED:
            return [f"+experiment={self.experiment}", f"~{self.key}"]
        if self.kind == "pair":  # value: "<model> hardware=<hardware>"
            model, hardware = self.value.split(" ")
            return [f"+experiment={self.experiment}", f"model={model}", hardware]
        return [f"+experiment={self.experiment}", f"{self.key}={self.value}"]

    @property
    def config_dirs(self) -> tuple[str, ...]:
        """A user's config dir (the "yaml text" kind writes its value into a file there)."""
        return (str(_user_dir()),) if self.kind == YAML_TEXT else ()

    def __str__(self) -> str:
        return f"{self.experiment}: {self.key}={self.value} ({self.kind})"


@cache
def _resolved(experiment: str) -> Resolved:
    return resolve([f"+experiment={experiment}"])


# ------------------------------------------------------------------------------------------ generation

# The kind whose value is text in a user's experiment file (built on the shipped one), not an override.
YAML_TEXT = "yaml text"
# Kinds that swap whole sections: judged by their first refusal, wherever it is, and never deduplicated.
SWAPS = ("option", "group option", "pair")


def mutations(experiments: list[str] = EXPERIMENTS) -> Iterator[Mutation]:
    """Every mutation of every experiment, each (field, kind, value) once across experiments."""
    seen: set[tuple[str, str, str]] = set()
    for experiment in experiments:
        for mutation in _of(experiment):
            model = model_at(mutation.key.rpartition(".")[0], _resolved(experiment).config)
            field = f"{getattr(model, '__qualname__', '?')}.{mutation.key.rpartition('.')[2]}"
            tag = (field, mutation.kind, mutation.value)
            if mutation.kind in ("collision", "reference", "deleted entry", *SWAPS) or tag not in seen:
                seen.add(tag)
                yield mutation


def _of(experiment: str) -> Iterator[Mutation]:
    try:
        resolved = _resolved(experiment)
    except ConfigError:
        return  # an experiment that needs a value of the user's (a hub environment's id) as shipped
    for key, value in _scalars(resolved.config, ""):
        parent, _, name = key.rpartition(".")
        model = model_at(parent, resolved.config)
        if model is None or name not in model.model_fields:
            continue
        yield from _leaf_mutations(experiment, key, value, model, name)
    yield from _collisions(experiment, resolved)
    yield from _broken_references(experiment, resolved)
    yield from _repeated_choices(experiment, resolved.config, "")
    yield from _other_options(experiment, resolved)
    yield from yaml_text_mutations(experiment)
    yield from _shapes(experiment, resolved.config, "")
    for kind, key, value in [
        *group_options(experiment),
        *pairs(experiment),
        *entry_deletions(resolved.config),
    ]:
        yield Mutation(experiment, kind, key, value)


def _shapes(experiment: str, node: dict[str, Any], prefix: str) -> Iterator[Mutation]:
    """Every field of a config model deleted, nulled or typed in another shape (mutation_kinds)."""
    model = model_at(prefix, _resolved(experiment).config)
    for k, v in node.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if model is not None and k in model.model_fields:
            if isinstance(v, dict):
                shapes = section_shapes(key)
            else:
                shapes = list_shapes(key, v) if isinstance(v, list) else leaf_shapes(key, v)
            yield from (Mutation(experiment, kind, key, value) for kind, key, value in shapes)
        if isinstance(v, dict):
            yield from _shapes(experiment, v, key)


def yaml_text_mutations(experiment: str) -> Iterator[Mutation]:
    """Every integer of the experiment whose digits are octal digits, written with a leading zero into a
    user's experiment file built on it (`rollout_batch_size: 032`): YAML 1.1 reads the octal 26, so it
    must be refused at its key with the decimal as the fix (which is the shipped value: it validates)."""
    for key, value in _scalars(_resolved(experiment).config, ""):
        if type(value) is int and value >= 8 and set(str(value)) <= set("01234567"):
            yield Mutation(experiment, YAML_TEXT, key, f"0{value}")


@cache
def _user_dir() -> Path:
    """A config dir for the "yaml text" kind's files, removed when the process ends (each run left one)."""
    path = tempfile.mkdtemp(prefix="t3rl-mutations-")
    atexit.register(shutil.rmtree, path, True)
    return Path(path)


def _user_experiment(mutation: Mutation) -> str:
    """The name of a user's experiment on `mutation.experiment` that sets its key to its text."""
    name = f"m{abs(hash((mutation.experiment, mutation.key, mutation.value))):x}"
    file = _user_dir() / "experiment" / f"{name}.yaml"
    if not file.exists():
        parts = mutation.key.split(".")
        lines = [f"{'  ' * depth}{part}:" for depth, part in enumerate(parts[:-1])]
        lines.append(f"{'  ' * (len(parts) - 1)}{parts[-1]}: {mutation.value}")
        header = f"# @package _global_\ndefaults:\n  - {mutation.experiment}\n  - _self_\n"
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(header + "\n".join(lines) + "\n")
    return name


# Config groups whose every other option is a swap a researcher makes (`model=qwen3_8b`).
_SWAPPED_GROUPS = ("model", "hardware")


def _other_options(experiment: str, resolved: Resolved) -> Iterator[Mutation]:
    """Every other option of the model and hardware groups: each a whole section swapped, refused (where
    at all) wherever the swap breaks something, with a first fix that removes that refusal."""
    conf = Path(__file__).resolve().parents[2] / "conf"
    for group in _SWAPPED_GROUPS:
        chosen = resolved.config.get(group, {}).get("name")
        for option in sorted(p.stem for p in (conf / group).glob("*.yaml")):
            if option != chosen:
                yield Mutation(experiment, "option", group, option)


def _scalars(node: Any, prefix: str) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _scalars(v, f"{prefix}.{k}" if prefix else str(k))
    elif not isinstance(node, list):
        yield prefix, node


def _leaf_mutations(experiment: str, key: str, value: Any, model: Any, name: str) -> Iterator[Mutation]:
    annotation = model.model_fields[name].annotation
    choices = _choices(annotation)
    if choices:
        yield Mutation(experiment, "choice", key, "not_a_choice")
        yield from (Mutation(experiment, *shape) for shape in lookalike(key, value))
        if isinstance(value, str) and value.upper() != value:  # the choice in capitals: its fix is the choice
            yield Mutation(experiment, "wrong case", key, value.upper())
        # every other choice: valid alone, so refused only by what it does to the rest, blamed on it
        for other in (c for c in choices if c != value and isinstance(c, str)):
            yield Mutation(experiment, "other choice", key, other)
        return
    if isinstance(value, bool):
        yield Mutation(experiment, "wrong kind", key, "maybe")
        yield Mutation(experiment, "flipped", key, str(not value).lower())
        return
    leaf = next((lf for lf in leaves(model) if lf.field == name and lf.where == ""), None)
    if leaf is None:
        return
    if leaf.base in (int, float):
        for bad in _outside(leaf):
            yield Mutation(experiment, "domain", key, _text(bad))
        yield Mutation(experiment, "wrong kind", key, "abc")
    elif leaf.base is str and any(isinstance(m, StrKind) for m in leaf.metadata):
        kind = next(m for m in leaf.metadata if isinstance(m, StrKind)).name
        if kind not in ("text", "free text"):
            yield Mutation(experiment, "wrong kind", key, quoted("not a valid value/../ x"))
            yield from (Mutation(experiment, *shape) for shape in lookalike(key, value))
        yield Mutation(experiment, "wrong kind", key, "''")


def _choices(annotation: Any) -> tuple[Any, ...]:
    """The choices of a Literal field (or an optional Literal)."""
    if get_origin(annotation) is Literal:
        return get_args(annotation)
    for arm in get_args(annotation):
        if get_origin(arm) is Literal:
            return get_args(arm)
    return ()


def _outside(leaf: Leaf) -> list[Any]:
    """inf, nan, and each bound's nearest value outside it, and the values a domain excludes."""
    from annotated_types import Ge, Gt, Interval, Le, Lt

    values: list[Any] = [math.inf, math.nan]
    for bound in leaf.bounds():
        for part in bound if isinstance(bound, Interval) else [bound]:
            limit = getattr(part, type(part).__name__.lower())
            if limit is None:
                continue
            step = 1 if leaf.base is int else max(abs(limit), 1) * 1e-3
            values.append({Ge: limit - step, Gt: limit, Le: limit + step, Lt: limit}[type(part)])
    for domain in (m for m in leaf.metadata if isinstance(m, Domain)):
        values.extend(domain.excluded)
    return values


def _text(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value) if isinstance(value, float) else str(value)


def _collisions(experiment: str, resolved: Resolved) -> Iterator[Mutation]:
    """Every ordered pair of port holders with keys, the second moved onto the first's port."""
    plan, _ = trial_plan(resolved.run)
    if plan is None:
        return
    ports = [c for c in claims_of(resolved.run, plan) if c.kind == "port" and c.key]
    for a in ports:
        for b in ports:
            if a.key != b.key and a.item != b.item and _settable(b.key, resolved.config):
                yield Mutation(experiment, "collision", b.key, str(a.item), (a.key,))


def _repeated_choices(experiment: str, node: Any, prefix: str) -> Iterator[Mutation]:
    """Every list of named choices, or declared a set, with its first item named again at its end."""
    for k, v in node.items() if isinstance(node, dict) else ():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, list) and v and all(isinstance(item, str) for item in v):
            parent, _, name = key.rpartition(".")
            model = model_at(parent, _resolved(experiment).config)
            field = model.model_fields.get(name) if model is not None else None
            if field is not None and (
                names_choices(field.annotation) or declared(field.metadata, field.annotation, Distinct)
            ):
                yield Mutation(experiment, "repeat", key, f"[{','.join([*v, v[0]])}]")
        else:
            yield from _repeated_choices(experiment, v, key)


def _settable(key: str, config: dict[str, Any]) -> bool:
    node: Any = config
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _broken_references(experiment: str, resolved: Resolved) -> Iterator[Mutation]:
    for name, spec in resolved.config.get("stages", {}).items():
        for field in ("init_from", "source", "checkpoint", "rollouts_from"):
            if isinstance(spec.get(field), str):
                yield Mutation(experiment, "reference", f"stages.{name}.{field}", "nosuch_stage")


# --------------------------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Verdict:
    mutation: Mutation
    outcome: Outcome
    detail: str = ""


def judge(mutation: Mutation) -> Verdict:
    """What the pre-flight makes of a mutation (see the module docstring)."""
    try:
        return _judge(mutation)
    except Exception as error:  # a crash of the pre-flight is an outcome of its own
        return Verdict(mutation, "crashed", f"{type(error).__name__}: {error}")


def _judge(mutation: Mutation) -> Verdict:
    args, dirs = mutation.overrides, mutation.config_dirs
    errors = _errors(args, dirs)
    if not errors:
        return Verdict(mutation, "accepted")
    # a swapped option may break anything: each refusal is its consequence, judged by its own key
    named = errors if mutation.kind in SWAPS else [e for e in errors if _names(e.key, mutation)]
    if not named:
        return Verdict(mutation, "refused elsewhere", f"{errors[0].key}: {errors[0].message}")
    error = named[0]
    fixed = apply_first_fix(args, {"message": error.message, "source": error.source, "fix": error.fix})
    if fixed is None:
        return Verdict(mutation, "refused, prose fix", f"{error.key}: {error.fix}")
    after = [
        e
        for e in _errors(fixed, dirs)
        if (
            e.key == error.key and e.message == error.message
            if mutation.kind in SWAPS
            else _names(e.key, mutation) or _below(e.key, mutation)
        )
    ]
    if after:
        return Verdict(mutation, "refused, fix fails", f"{error.fix} → {after[0].key}: {after[0].message}")
    return Verdict(mutation, "refused, fix validates")


def _errors(args: list[str], config_dirs: tuple[str, ...] = ()) -> list[Problem]:
    try:
        resolve(args, config_dirs)
    except ConfigError as error:
        return error.problems
    return []


def _names(key: str, mutation: Mutation) -> bool:
    """An error at the mutated key, one of its parents (a list item's list), or a collision partner."""
    for wanted in (mutation.key, *mutation.also):
        if key == wanted or (wanted.startswith(key + ".") and key.count(".") >= wanted.count(".") - 1):
            return True
    return False


def _below(key: str, mutation: Mutation) -> bool:
    """(round nine) After a fix of a mapping typed for a section, an error at a key of that mapping: the
    fix did not take it away (`+env.data={a: 1}`, Hydra's advice, was refused at `env.data.a`)."""
    return mutation.kind in MAPPING_KINDS and key.startswith(mutation.key + ".")


# The kinds whose value is a mapping of keys typed under the mutated key.
MAPPING_KINDS = ("mapping for section", "mapping for list", "mapping for scalar")


def main() -> int:
    parser = argparse.ArgumentParser(description="Run every pre-flight mutation and print the counts.")
    parser.add_argument("--show", type=int, default=10, help="examples printed per outcome but the good ones")
    parser.add_argument("--accepted", action="store_true", help="also list the accepted mutations")
    parser.add_argument("--kind", action="append", help="only mutations of this kind (repeatable)")
    parser.add_argument(
        "--experiment", action="append", help="only mutations of this experiment (repeatable)"
    )
    args = parser.parse_args()
    counts: Counter[str] = Counter()
    kinds: Counter[tuple[str, str]] = Counter()
    examples: dict[str, list[Verdict]] = {}
    experiments = args.experiment or EXPERIMENTS
    for mutation in mutations(experiments):
        if args.kind and mutation.kind not in args.kind:
            continue
        verdict = judge(mutation)
        counts[verdict.outcome] += 1
        kinds[(mutation.kind, verdict.outcome)] += 1
        examples.setdefault(verdict.outcome, []).append(verdict)
    total = sum(counts.values())
    print(f"{total} mutations of {len(experiments)} experiments")
    for outcome, n in counts.most_common():
        print(f"  {n:5d}  {outcome}")
    for (kind, outcome), n in sorted(kinds.items()):
        print(f"    {kind:10s} {outcome:24s} {n}")
    for outcome, verdicts in examples.items():
        if outcome == "refused, fix validates" or (outcome == "accepted" and not args.accepted):
            continue
        for verdict in verdicts[: args.show]:
            print(f"  [{outcome}] {verdict.mutation} — {verdict.detail}")
    return 0 if set(counts) <= {"refused, fix validates", "accepted"} else 1


if __name__ == "__main__":
    sys.exit(main())
