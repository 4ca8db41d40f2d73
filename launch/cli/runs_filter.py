"""What `t3rl runs --name/--status/--where/--metric` keep and show, and why a bad one is refused.

A filter or metric that can match nothing is a mistake, not an empty answer: `--status sucess`,
`--where nonsense` (no `=`), `--where nosuch.key=3` (no listed run's config has the key) and
`--metric overall.acuracy` (no eval summary has that number) exit 2 naming the argument, with the
closest known value. A key that lives elsewhere (`--where lr=1e-6`) gets the place the configs hold it
at, found as an override's is (`launch.config.misplaced_keys`). A value matches a recorded one it
denotes as typed on a command line (`1e-6` the float 1e-06, `on` the text on), not as YAML 1.1 reads it
(the string '1e-6', the boolean true). Light: PyYAML and the standard library (and the eval metrics'
block shape).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal, Protocol, get_args

import yaml

from t3rl_core.counts import counted
from t3rl_core.eval.metrics import EpisodeScore, summarize
from t3rl_core.yaml_text import safe_load


class Viewed(Protocol):
    """What a filter reads of a listed run (`launch.cli.runs.RunView`, which imports this module)."""

    @property
    def status(self) -> str: ...


# What RunView.status can be (a sweep point's `interrupted (launcher gone)` matches `interrupted`).
# Declared on `--status` (launch.cli.runs): `--help` lists them and Typer refuses another before any
# run dir is read.
RunStatus = Literal["succeeded", "running", "interrupted", "failed", "stopped", "damaged", "planned"]
RUN_STATUSES: tuple[str, ...] = get_args(RunStatus)
# A block's pass@k / pass^k, for any k.
_PASS_K = re.compile(r"^pass[@^]\d+$")


class BadFilter(Exception):
    """A `t3rl runs` argument that can match nothing; str() says why, `argument` names it."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(message)
        self.argument = argument


@dataclass(frozen=True)
class RunFilter:
    """Which runs `t3rl runs` lists."""

    # fnmatch glob on the run's path below the runs dir.
    name: str | None = None
    status: str | None = None
    # (dotted key, operator, value's text) the run's config.yaml must meet (see `meets`).
    where: tuple[tuple[str, str, str], ...] = ()

    @classmethod
    def parse(cls, name: str | None, status: str | None, where: Iterable[str]) -> RunFilter:
        """The filter of these arguments; BadFilter for a status no run has or a condition without KEY=."""
        if status is not None and status not in RUN_STATUSES:
            raise BadFilter("--status", f"no run is '{status}'{_guess(status, RUN_STATUSES)}")
        return cls(name, status, tuple(_condition(condition) for condition in where))

    def check_keys(self, configs: Iterable[Mapping[str, Any]]) -> None:
        """BadFilter for a --where key that no run's config has (nothing could ever match it)."""
        if not self.where:
            return
        configs = list(configs)
        known: set[str] = set()
        for config in configs:
            known |= set(dotted_keys(config))
        for key, op, wanted in self.where:
            if known and key not in known:
                lives = _lives_at(key, f"{op}{wanted}", configs) or _guess(key, known)
                raise BadFilter("--where", f"no run's config has the key '{key}'{lives}")

    def keeps(self, relative: str, view: Viewed, config: Mapping[str, Any]) -> bool:
        if (
            self.name
            and not fnmatch.fnmatch(relative, self.name)
            and not fnmatch.fnmatch(relative, f"{self.name}/*")
        ):
            return False
        # `--status interrupted` also keeps `interrupted (launcher gone)`.
        if self.status and self.status not in (view.status, view.status.split(" ")[0]):
            return False
        return all(meets(lookup(config, key), op, wanted) for key, op, wanted in self.where)

    def why_none(self, runs: Sequence[tuple[str, Viewed, Mapping[str, Any]]]) -> str | None:
        """Why these filters keep none of `runs` (relative path, view, config), when there are runs: the
        first condition that alone keeps none, with what the runs have there instead (was: `0 runs`,
        not a word of which condition, nor that `--where seed=abc` can match no run whose seed is 42)."""
        if not runs:
            return None
        if self.name and not any(RunFilter(name=self.name).keeps(rel, v, c) for rel, v, c in runs):
            return f"--name {self.name!r} matches no run's path here (e.g. {runs[0][0]})"
        if self.status and not any(RunFilter(status=self.status).keeps(rel, v, c) for rel, v, c in runs):
            statuses = _tally(view.status for _, view, _ in runs)
            return f"--status {self.status}: no run is {self.status} (they are {statuses})"
        for key, op, wanted in self.where:
            values = [lookup(config, key) for _, _, config in runs]
            if not any(meets(value, op, wanted) for value in values):
                shown = _tally(json.dumps(value) if not isinstance(value, str) else value for value in values)
                return f"--where {key}{op}{wanted}: no run has it ({key} is {shown})"
        return "each condition keeps some runs, but no run meets them all"


def _tally(values: Iterable[str]) -> str:
    """`42 in 3 runs, 7 in 1 run`: each value and how many runs have it, the commonest first (five)."""
    counts = Counter(values)
    shown = [f"{value} in {counted(n, 'run')}" for value, n in counts.most_common(5)]
    return ", ".join(shown) + (", …" if len(counts) > 5 else "")


# The comparisons --where reads, longest first (`>=` before `>`, `==` and `!=` before `=`): one
# grammar, so that `seed!=42` is not the key `seed!` and `seed==42` not the value `=42`.
OPERATORS = ("==", "!=", ">=", "<=", "=", ">", "<")
_ORDERED = (">=", "<=", ">", "<")


def _condition(condition: str) -> tuple[str, str, str]:
    """(key, operator, value) of one --where condition; BadFilter for one without an operator or key,
    or an order comparison of a value that is no number."""
    found = min(((condition.find(op), -len(op), op) for op in OPERATORS if op in condition), default=None)
    if found is None:
        raise BadFilter(
            "--where",
            f"'{condition}' is not KEY=VALUE (e.g. --where reward.name=binary; also KEY!=VALUE, and "
            f"KEY>N, KEY<=N for numbers). Typed {condition}>N unquoted? The shell reads '>N' as writing "
            f"to a file named N: quote the condition, e.g. --where '{condition}>3'",
        )
    at, _, op = found
    key, wanted = condition[:at].strip(), condition[at + len(op) :]
    if not key:
        raise BadFilter("--where", f"'{condition}' names no key before {op} (e.g. --where seed{op}3)")
    if op in _ORDERED:
        try:
            float(wanted)
        except ValueError:
            raise BadFilter(
                "--where", f"'{condition}': {op} compares numbers, and '{wanted.strip()}' is none"
            ) from None
    return key, "=" if op == "==" else op, wanted


def meets(value: Any, op: str, wanted: str) -> bool:
    """Whether the recorded `value` meets `op wanted`: = and != as `denotes` reads the text, the order
    comparisons on numbers only (a value that is no number, or a flag, never meets one)."""
    if op == "=":
        return denotes(wanted, value)
    if op == "!=":
        return not denotes(wanted, value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    bound = float(wanted)
    return {">": value > bound, "<": value < bound, ">=": value >= bound, "<=": value <= bound}[op]


def denotes(text: str, value: Any) -> bool:
    """Whether `text`, typed after `KEY=`, names the recorded `value` as an override would set it: a
    number by its value in any notation (`1e-6`, `0.000001`), a boolean by true/false, null by null, a
    string by its text (`on`, `1.10`: Hydra reads neither as anything else for a string field)."""
    text = text.strip()
    if isinstance(value, bool):
        return text.lower() == str(value).lower()
    if isinstance(value, int | float):
        try:
            return float(text) == value
        except ValueError:
            return False
    if value is None:
        return text.lower() == "null"
    if isinstance(value, str):
        return text in (value, f"'{value}'", f'"{value}"')
    try:  # a list or a mapping, written in flow style
        return safe_load(text) == value
    except yaml.YAMLError:
        return False


def _lives_at(key: str, condition: str, configs: Iterable[Mapping[str, Any]]) -> str:
    """'; it is at <key>: --where <key><condition>' (`condition` the operator and value as typed, `=1e-6`)
    for the places the configs hold a key typed by its last names (`lr`, `optimizer.lr`, `train.lr`), as an
    override's misplaced key is answered; '' for none."""
    # lazy: the composed config's key finder, only once a --where key is missing
    from launch.config.misplaced_keys import places

    found: list[str] = []
    for config in configs:
        found += [place for place in places(key, config) if place not in found]
    if not found:
        return ""
    also = f" (also at {', '.join(found[1:])})" if found[1:] else ""
    return f"; it is at {found[0]}: --where {found[0]}{condition}{also}"


def check_metric(metric: str, summaries: Iterable[Mapping[str, Any]]) -> None:
    """BadFilter unless some eval summary has the number `metric`; with no summary to look in, unless it
    has a summary block's shape (overall.<number> or categories.<name>.<number>)."""
    found: set[str] = set()
    unmeasured: set[str] = set()  # an eval stopped or failed before any episode: accuracy null
    for summary in summaries:
        if _is_number(lookup(summary, metric)):
            return  # found: the other summaries' keys are read only to name what it may have meant
        keys = dotted_keys(summary).items()
        found |= {key for key, value in keys if _is_number(value)}
        unmeasured |= {key for key, value in keys if value is None}
    if metric in found or (_block_shaped(metric) and (not found or metric in unmeasured)):
        return
    known = (found | {f"overall.{name}" for name in block_numbers()}) - {metric}
    where = "in any listed run's eval summary" if found else "in an eval summary"
    raise BadFilter("--metric", f"there is no number '{metric}' {where}{_guess(metric, known)}")


def lookup(node: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


def dotted_keys(node: Any, prefix: str = "") -> dict[str, Any]:
    """Every key of a nested mapping, dotted, with its value (inner mappings included)."""
    keys: dict[str, Any] = {}
    if isinstance(node, Mapping):
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            keys[dotted] = value
            keys |= dotted_keys(value, dotted)
    return keys


@cache
def block_numbers() -> tuple[str, ...]:
    """The numbers of a summary block (overall and each category), as the eval computes them."""
    block = summarize([EpisodeScore("t", "c", True, 0.0, 0.0)], ks=[1])["overall"]
    return tuple(name for name, value in block.items() if _is_number(value))


def _block_shaped(metric: str) -> bool:
    parts = metric.split(".")
    leaf = parts[-1]
    shaped = (len(parts) == 2 and parts[0] == "overall") or (len(parts) == 3 and parts[0] == "categories")
    return shaped and (leaf in block_numbers() or bool(_PASS_K.match(leaf)))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _guess(value: str, known: Iterable[str]) -> str:
    # Looser than the config's did-you-mean: these words are few, and a typo of a short one ('sucess')
    # differs from it by a larger share.
    guess = difflib.get_close_matches(value, sorted(known), n=1, cutoff=0.5)
    return f"; did you mean '{guess[0]}'?" if guess else ""
