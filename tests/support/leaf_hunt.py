"""A broad leaf hunt: every leaf of every shipped experiment's validated config given adversarial values of
its kind, each judged against pre-flight's contract.

The leaves are the experiments' own (`launch.checks.resolve`: every scalar and every list of scalars under
a field of a config model, defaults included), so a field added later is hunted without a line here. The
values are chosen by what the leaf holds, not by its name:

- text: empty, blank, a line break, a NUL, a tab, a leading '-' (argparse reads it as a flag), '=' and a
  space, an invisible character (a zero-width space after the value), 10,000 characters, '~', '..', a
  trailing '/', a relative and an absolute path;
- whole numbers: 0, -1, 1.0 and 1.5 (a float for an int), 1e308, a boolean;
- real numbers: -inf, nan, -0.0, 1e308, the smallest subnormal, a boolean;
- booleans: 1, 0, 2, 'yes' and the text 'true';
- lists of text: an item empty, a flag, or with a line break.

A value must end one of two ways (`judge`):
- refused: exit 2's problems, one at the key (or the list holding it) with where it was set and a fix;
  the first fix, applied as the user would, validates at that key;
- accepted: the plan is built, every planned slime argv passes slime's option table, no planned argv
  token is 'nan', 'inf', 'None' or empty after a flag, the value typed is not read as a flag where it is
  planned as a flag's value, no planned shell line breaks or loses it, and the config holds the value as
  typed (nothing altered silently).

`python -m tests.support.leaf_hunt` runs every value of every leaf and lists the holes;
tests/launch/test_preflight_leaf_hunt.py runs a sample of each kind of value.
"""

from __future__ import annotations

import argparse
import math
import shlex
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from launch.checks.resolve import Resolved, resolve
from launch.config.argv_tokens import is_flag
from launch.config.errors import ConfigError, Problem
from launch.config.fixes import quoted
from launch.config.schema_walk import model_at
from launch.plan.build import Plan, PlanContext
from t3rl_core.home_paths import expand_home
from tests.support.fix_applier import apply_first_fix

CONF = Path(__file__).resolve().parents[2] / "conf"
EXPERIMENTS = sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))
# The plan's places (as `t3rl plan` gives them, absolute): no value of the hunt is judged by them.
CTX = PlanContext(Path("/runs/hunt"), Path("/work"), "/t3rl", "/venv/bin/python", "hunt", {})
LONG = "a" * 10_000
# Tokens a planned argv must never hold: a number or setting lost on its way to text.
LOST = {"nan", "NaN", "inf", "-inf", "Infinity", "-Infinity", "None", "null"}


@dataclass(frozen=True)
class Case:
    experiment: str
    kind: str  # the kind of value typed ("long", "leading dash", "huge", …)
    key: str
    # What the leaf holds, as its schema declares it: a string kind ("path", "label"), "choice", "int", …
    leaf: str
    # The value as Python holds it once Hydra read the override (what the config must hold if accepted).
    value: Any
    # The override's text after `key=`.
    text: str

    @property
    def overrides(self) -> list[str]:
        return [f"+experiment={self.experiment}", f"{self.key}={self.text}"]

    def __str__(self) -> str:
        return f"{self.experiment}: {self.key}={self.text[:60]!s} ({self.kind})"


def _text_values(value: str) -> Iterator[tuple[str, str]]:
    yield "empty", ""
    yield "blank", "   "
    yield "line break", f"{value}\nx"
    yield "NUL", f"{value}\x00"
    yield "tab", f"{value}\tx"
    yield "leading dash", f"-{value}" if value else "-x"
    yield "leading dash", "--x"
    yield "equals and space", f"{value}=a b"
    yield "invisible", f"{value}\u200b"
    yield "long", LONG
    yield "home", "~/x"
    yield "parent", "../x"
    yield "trailing slash", f"{value}/"
    yield "relative", "x"
    yield "absolute", "/x"


def _int_values() -> Iterator[tuple[str, Any]]:
    yield "zero", 0
    yield "negative", -1
    yield "float for int", 1.0
    yield "float for int", 1.5
    yield "huge", 1e308
    yield "boolean for number", True


def _float_values() -> Iterator[tuple[str, Any]]:
    yield "non-finite", -math.inf
    yield "non-finite", math.nan
    yield "negative zero", -0.0
    yield "huge", 1e308
    yield "subnormal", 5e-324
    yield "boolean for number", True


def _bool_values() -> Iterator[tuple[str, Any]]:
    yield "number for boolean", 1
    yield "number for boolean", 0
    yield "number for boolean", 2
    yield "word for boolean", "yes"
    yield "text for boolean", "true"


def _list_values() -> Iterator[tuple[str, list[str]]]:
    yield "empty item", [""]
    yield "leading dash item", ["-x"]
    yield "line break item", ["a\nb"]


def _text(value: Any) -> str:
    """`value` as an override's text that Hydra reads back as exactly `value`."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_quoted(v) for v in value) + "]"
    return _quoted(value)


def _quoted(value: str) -> str:
    """Text always quoted (Hydra reads a bare `true`, `1` or `-x` as it likes)."""
    text = quoted(value)
    return text if text.startswith("'") else "'" + text + "'"


@cache
def resolved(experiment: str) -> Resolved | None:
    try:
        return resolve([f"+experiment={experiment}"])
    except ConfigError:
        return None  # an experiment that needs a value of the user's as shipped (a hub id)


def leaves(config: dict[str, Any], node: Any = None, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) of every scalar and every list of text under a field of a config model."""
    node = config if node is None else node
    if not isinstance(node, dict):
        return
    model = model_at(prefix, config)
    for k, v in node.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        if isinstance(v, dict):
            yield from leaves(config, v, key)
        elif model is not None and k in model.model_fields and _scalars(v):
            yield key, v


def cases(experiments: list[str] = EXPERIMENTS) -> Iterator[Case]:
    """Every adversarial value of every leaf; each (field, kind of value, value) once across experiments."""
    seen: set[tuple[str, str, str]] = set()
    for experiment in experiments:
        found = resolved(experiment)
        if found is None:
            continue
        for key, value in list(leaves(found.config)):
            model = model_at(key.rpartition(".")[0], found.config)
            field = f"{getattr(model, '__qualname__', '?')}.{key.rpartition('.')[2]}"
            leaf = leaf_kind(model, key.rpartition(".")[2], value)
            for kind, bad in _values_for(value):
                tag = (field, kind, repr(bad))
                if tag not in seen and bad != value:
                    seen.add(tag)
                    yield Case(experiment, kind, key, leaf, bad, _text(bad))


def _scalars(value: Any) -> bool:
    """A scalar, or a list of text (a list of sections is sections, hunted by their own leaves)."""
    return not isinstance(value, list) or all(isinstance(item, str) for item in value)


# Kinds of value alike enough that the suite's sample takes one of each class per kind of leaf, a
# different one from leaf kind to leaf kind (the full run takes every one).
CLASSES = {
    "empty": "empty",
    "blank": "empty",
    "line break": "control",
    "NUL": "control",
    "tab": "control",
    "home": "path shape",
    "parent": "path shape",
    "trailing slash": "path shape",
    "relative": "path shape",
    "absolute": "path shape",
}


def sample(experiments: list[str] = EXPERIMENTS) -> list[Case]:
    """One case of each (kind of leaf, class of value): every kind of leaf the schema declares meets every
    class of value, so a field of a new kind is hunted without a line here (the full run has all)."""
    found: dict[tuple[str, str], list[Case]] = {}
    for case in cases(experiments):
        found.setdefault((case.leaf, CLASSES.get(case.kind, case.kind)), []).append(case)
    order = list(dict.fromkeys(leaf for leaf, _ in found))
    picked: list[Case] = []
    for (leaf, _), those in found.items():
        kinds = list(dict.fromkeys(case.kind for case in those))
        kind = kinds[order.index(leaf) % len(kinds)]  # each leaf kind takes another of the class
        picked.append(next(case for case in those if case.kind == kind))
    return picked


def leaf_kind(model: Any, name: str, value: Any) -> str:
    """What the field `name` of `model` declares about the value it holds."""
    from t3rl_core.fields import StrKind
    from tests.support.preflight_mutations import _choices
    from tests.support.schema_leaves import leaves as schema_leaves

    if _choices(model.model_fields[name].annotation):
        return "choice"
    if isinstance(value, bool | int | float):
        return type(value).__name__
    where = "[]" if isinstance(value, list) else ""
    for leaf in schema_leaves(model):
        if leaf.field == name and leaf.where == where and leaf.base is str:
            kinds = [m.name for m in leaf.metadata if isinstance(m, StrKind)]
            return ("list of " if where else "") + (kinds[0] if kinds else "str")
    return "list" if where else "str"


def _values_for(value: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(value, bool):
        yield from _bool_values()
    elif isinstance(value, int):
        yield from _int_values()
    elif isinstance(value, float):
        yield from _float_values()
    elif isinstance(value, str):
        yield from _text_values(value)
    elif isinstance(value, list):
        yield from _list_values()


# --------------------------------------------------------------------------------------------- judging


@dataclass(frozen=True)
class Verdict:
    case: Case
    outcome: str  # "refused", "accepted", or what broke the contract
    detail: str = ""

    @property
    def kept(self) -> bool:
        return self.outcome in ("refused", "accepted")


def judge(case: Case) -> Verdict:
    try:
        return _judge(case)
    except Exception as error:  # an exception out of pre-flight is a hole of its own
        return Verdict(case, "crashed", f"{type(error).__name__}: {error}"[:300])


def _judge(case: Case) -> Verdict:
    try:
        found = resolve(case.overrides, plan_in=lambda run: CTX)
    except ConfigError as error:
        return _refusal(case, error.problems)
    problems = [*_kept_problems(case, found), *plan_problems(case, found.plan)]
    if problems:
        return Verdict(case, "accepted wrongly", "; ".join(problems)[:400])
    return Verdict(case, "accepted")


def _names(key: str, wanted: str) -> bool:
    """An error at the key, the list or section right above it, or an item of the list typed."""
    above = wanted.startswith(key + ".") and key.count(".") >= wanted.count(".") - 1
    return key == wanted or above or key.startswith(wanted + ".")


def _refusal(case: Case, problems: list[Problem]) -> Verdict:
    named = [p for p in problems if _names(p.key, case.key)]
    if not named:
        first = problems[0]
        return Verdict(case, "refused elsewhere", f"{first.key}: {first.message[:200]}")
    error = named[0]
    if not error.source or not error.fix:
        return Verdict(case, "refused without source or fix", f"{error.key}: {error.message[:200]}")
    fixed = apply_first_fix(
        case.overrides, {"message": error.message, "source": error.source, "fix": error.fix}
    )
    if fixed is None:
        return Verdict(case, "refused, prose fix", f"{error.key}: {error.fix[:200]}")
    try:
        resolve(fixed)
    except ConfigError as again:
        after = [p for p in again.problems if _names(p.key, case.key)]
        if after:
            return Verdict(case, "refused, fix fails", f"{error.fix[:120]} -> {after[0].message[:160]}")
    return Verdict(case, "refused")


def _kept_problems(case: Case, found: Resolved) -> list[str]:
    """The config holds the value typed: a number as that number (1.0 is the int 1), text as that text, a
    boolean as what pydantic reads as one (1, 'yes', 'true'); '~/…' is the home directory (documented)."""
    held: Any = found.run
    for part in case.key.split("."):
        held = held.get(part) if isinstance(held, dict) else getattr(held, part, None)
    typed = case.value
    if isinstance(held, bool):
        same = held is _BOOLEANS.get(str(typed).lower())
    elif isinstance(held, float) and isinstance(typed, float):
        same = held == typed and math.copysign(1, held) == math.copysign(1, typed)
    elif isinstance(held, int | float) and not isinstance(typed, bool):
        same = held == typed
    else:
        same = held == typed or (
            isinstance(typed, str) and typed.startswith("~") and held == expand_home(typed)
        )
    if same:
        return []
    return [f"the config holds {held!r} ({type(held).__name__}) for {typed!r} ({type(typed).__name__})"]


# What pydantic's lax mode reads as a boolean (the same value, typed another way).
_BOOLEANS = {
    **dict.fromkeys(("1", "true", "yes", "on", "t", "y"), True),
    **dict.fromkeys(("0", "false", "no", "off", "f", "n"), False),
}


def plan_problems(case: Case, plan: Plan | None) -> list[str]:
    """What the planned commands would run with that no parser of theirs reads as meant."""
    if plan is None:
        return []
    from tests.launch.test_argv_matrix import slime_argv_problems  # the independent reading of argv

    problems: list[str] = []
    for stage in plan.stages:
        if stage.slime_job is not None:
            argv = list(stage.slime_job.argv)
            problems += [f"{stage.name}: {p}" for p in slime_argv_problems(argv)]
            problems += [f"{stage.name}: {p}" for p in _token_problems(argv, case)]
        for command in stage.commands:
            if isinstance(command, tuple):
                problems += [f"{stage.name}: {p}" for p in _token_problems(list(command), case)]
                continue
            try:
                tokens = shlex.split(command, comments=False)
            except ValueError as error:
                problems.append(f"{stage.name}: a shell line no shell splits ({error}): {command[:120]!r}")
                continue
            typed = case.value if isinstance(case.value, str) else ""
            if typed.strip() and typed in command and not any(typed in token for token in tokens):
                problems.append(f"{stage.name}: the shell splits the value typed: {command[:120]!r}")
            problems += [f"{stage.name}: {p}" for p in _token_problems(tokens, case)]
        for name, value in stage.env.items():
            if isinstance(case.value, str) and case.value and case.value in value and "\x00" in value:
                problems.append(f"{stage.name}: env {name} holds a NUL")
    return problems


def _token_problems(tokens: list[str], case: Case) -> list[str]:
    problems: list[str] = []
    for i, token in enumerate(tokens):
        if token in LOST:
            problems.append(f"token {i} is {token!r} (after {tokens[i - 1] if i else ''!r})")
        if "\x00" in token:
            problems.append(f"token {i} holds a NUL")
        after_flag = i > 0 and tokens[i - 1].startswith("--") and "=" not in tokens[i - 1]
        if after_flag and token == "" and isinstance(case.value, str | list):
            problems.append(f"{tokens[i - 1]} given an empty value")
        typed = case.value if isinstance(case.value, str) else None
        if after_flag and typed and typed.startswith("-") and token == typed and is_flag(token):
            problems.append(f"{tokens[i - 1]} {token!r}: argparse reads the value as a flag")
        if after_flag and isinstance(case.value, list) and token in case.value and token.startswith("-"):
            problems.append(f"{tokens[i - 1]} {token!r}: argparse reads the item as a flag")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description="Run the leaf hunt and list what breaks the contract.")
    parser.add_argument("--experiment", action="append", help="only this experiment (repeatable)")
    parser.add_argument("--kind", action="append", help="only this kind of value (repeatable)")
    parser.add_argument("--show", type=int, default=1000)
    args = parser.parse_args()
    counts: Counter[tuple[str, str]] = Counter()
    holes: list[Verdict] = []
    for case in cases(args.experiment or EXPERIMENTS):
        if args.kind and case.kind not in args.kind:
            continue
        verdict = judge(case)
        counts[(case.kind, verdict.outcome)] += 1
        if not verdict.kept:
            holes.append(verdict)
            print(f"[{verdict.outcome}] {case} — {verdict.detail}", flush=True)
    for (kind, outcome), n in sorted(counts.items()):
        print(f"  {kind:20s} {outcome:28s} {n}")
    return 1 if holes else 0


if __name__ == "__main__":
    sys.exit(main())
