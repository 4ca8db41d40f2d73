"""A search space checked before the study starts: every value Optuna may pick is one a run accepts.

The space is `hydra.sweeper.params` of the hparams_search config, with the sweeps given on the command
line replacing entries of the same key (as the Optuna sweeper merges them) and plain overrides of a key
fixing it. Each entry is read in the sweeper's own grammar (`interval(a, b)`, `tag(log, interval(a, b))`,
`int(interval(…))`, `range(a, b[, step])`, `choice(…)`), checked for what Optuna itself refuses later (a
log-uniform interval that reaches 0 or below, low above high, an empty range), then the config is
built with the key at each bound and at each choice (the other keys at their configured values) and
validated as a run is, so a key that does not exist, a bound outside the field's domain or a choice a
cross-field rule refuses is found now, not as a failed trial hours into the study. Problems are blamed
on the search entry (its file, or the override that set it); a fix rewrites the entry as a command-line
sweep of the key, which replaces the file's entry.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

from annotated_types import Ge, Gt, Le, Lt

from launch.config.errors import Problem
from launch.config.override_fixes import shell_word, sweep_strings
from launch.config.schema_walk import model_at
from launch.config.secrets import mask_override, replayable, secrets_in
from t3rl_core.counts import counted
from t3rl_core.secret_names import is_secret_key

if TYPE_CHECKING:
    from hydra.core.override_parser.types import Override

# The problems a run built from these overrides has ([] = it validates).
Probe = Callable[[Sequence[str]], list[Problem]]
# Where a dotted config key was set (provenance), for entries of the hparams_search file.
SourceOf = Callable[[str], str]
PARAMS = "hydra.sweeper.params"


@dataclass(frozen=True)
class Param:
    """One entry of the search space."""

    # The key as the sweeper writes it into each trial's overrides (may start with '+').
    key: str
    # Its distribution in Hydra's override grammar ("tag(log, interval(1e-7, 1e-5))").
    text: str
    # The hparams_search file, or the override that set it.
    source: str

    @property
    def from_command_line(self) -> bool:
        return self.source.startswith("override `")


def search_params(sweeper: Mapping[str, Any], overrides: Sequence[str], source_of: SourceOf) -> list[Param]:
    """The search space as the Optuna sweeper builds it from its params and the command line."""
    # lazy: Hydra's override parser, only for an hparams_search sweep
    from hydra.core.override_parser.overrides_parser import OverridesParser

    params = {
        str(key): Param(str(key), str(text), source_of(f"{PARAMS}.{key}"))
        for key, text in (sweeper.get("params") or {}).items()
    }
    for text, override in zip(
        overrides, OverridesParser.create().parse_overrides(list(overrides)), strict=True
    ):
        key = override.get_key_element()
        if key.lstrip("+").startswith(f"{PARAMS}."):  # an entry of the space itself, set on the line
            if override.is_sweep_override():
                entry = key.lstrip("+").removeprefix(f"{PARAMS}.")
                params[entry] = Param(entry, text.split("=", 1)[1], f"override `{mask_override(text)}`")
            continue
        if override.is_sweep_override():
            params[key] = Param(key, text.split("=", 1)[1], f"override `{mask_override(text)}`")
        else:
            params.pop(key, None)  # a fixed value: the sweeper takes it out of the space
    return list(params.values())


def edge_values(param: Param) -> list[str]:
    """What a trial may set the entry's key to, at the edges (both bounds, every choice, a range's ends);
    [] for an entry that cannot be read or is empty (its own problems say so)."""
    check = _EntryCheck(param, [], {}, lambda _: [])
    return [] if check.unreadable or check.own_problems else check.values


def search_space_problems(
    params: Sequence[Param],
    base: Sequence[str],
    data: Mapping[str, Any],
    probe: Probe,
    n_trials: int = 1,
) -> list[Problem]:
    """Every problem of the space: its entries' own, then those of a run at each bound and choice, then
    entries that search one value. `base`: the overrides every trial has; `data`: the config they resolve
    to; `n_trials`: the study's trials."""
    checks = [_EntryCheck(param, list(base), data, probe) for param in params]
    problems = [problem for check in checks for problem in check.own_problems]
    sound = [check for check in checks if not check.own_problems]
    _probe_together(sound, list(base), probe)
    problems += [problem for check in sound for problem in check.problems()]
    # a space whose every entry is one value is judged once each entry reads (fixes come one at a time)
    return problems + _one_valued(sound, n_trials if len(sound) == len(checks) else 1)


def _one_valued(checks: Sequence[_EntryCheck], n_trials: int) -> list[Problem]:
    """Entries that search one value: a fixed value written as a search (a warning: every trial takes it,
    as with a plain override). When no entry of the space takes two values, every trial of the study is
    the same run, `n_trials` times over: refused, as a study that searches nothing."""
    fixed = [(check, value) for check in checks if (value := check.one_value()) is not None]
    if not fixed:
        return []
    if len(fixed) == len(checks) and n_trials > 1:
        check, value = fixed[0]
        message = (
            f"'{check.param.text}' takes one value, {check.name}={value}, and so does every entry of the "
            f"search space: each of its {counted(n_trials, 'trial')} would be the same run"
        )
        fix = "++hydra.sweeper.n_trials=1 (the one run, once); or give an entry a second value to search"
        return [check._problem(message, "", fallback=fix)]
    warnings = []
    for check, value in fixed:
        one = check._problem(
            f"'{check.param.text}' searches one value, {check.name}={value}: every trial takes it, as with "
            "a plain override",
            value,
            "the value as a plain override",
        )
        warnings.append(Problem(one.key, one.message, one.source, one.fix, severity="warning"))
    return warnings


def _probe_together(checks: Sequence[_EntryCheck], base: list[str], probe: Probe) -> None:
    """Probe the entries' values in as few runs as there are values in the longest entry: run r sets
    every entry to its r-th value, as a trial sets every searched key. A problem is its entry's when it
    names the entry's key; the other values of a refused run are probed one by one later."""
    rounds = max((len(check.values) for check in checks), default=0)
    for r in range(rounds):
        chosen = [(check, check.values[r % len(check.values)]) for check in checks]
        refused = [
            p for p in probe([*base, *(f"{c.param.key}={v}" for c, v in chosen)]) if p.severity == "error"
        ]
        for check, value in chosen:
            own = [p for p in refused if check.owns(p)]
            if own or not refused:  # an entry refused elsewhere may hide this one's: probed alone later
                check.probed.setdefault(value, own)


class _EntryCheck:
    def __init__(self, param: Param, base: list[str], data: Mapping[str, Any], probe: Probe) -> None:
        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.core.override_parser.overrides_parser import OverridesParser

        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.errors import HydraException

        self.param = param
        self.base = base
        self.data = data
        self.probe = probe
        self.name = param.key.lstrip("+~")
        # Value (as override text) → the problems of a run with the key at it.
        self.probed: dict[str, list[Problem]] = {}
        self.unreadable = ""
        try:
            self.override = OverridesParser.create().parse_override(f"{param.key}={param.text}")
        except HydraException as error:
            self.unreadable = (str(error).splitlines()[1:2] or [str(error)])[0]

    def owns(self, problem: Problem) -> bool:
        return problem.key == self.name or problem.key.startswith(self.name + ".")

    @cached_property
    def values(self) -> list[str]:
        """What a trial may set the key to, at the edges: both bounds, every choice, a range's ends."""
        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.core.override_parser.types import IntervalSweep

        value = self.override.value()
        if isinstance(value, IntervalSweep):
            return [str(value.start), str(value.end)]
        if _zero_step(value):
            return []  # Python's and Hydra's range raise on it: no trial takes a value (own_problems)
        every = _values(self.override, self.param.text)
        ends = list(dict.fromkeys(every[:1] + every[-1:]))
        return ends if self.override.is_range_sweep() else every

    @cached_property
    def own_problems(self) -> list[Problem]:
        """What is wrong with the entry itself, whatever the config (read, bounds in order, non-empty)."""
        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.core.override_parser.types import IntervalSweep, RangeSweep

        if self.unreadable:
            return [self._problem(f"cannot read the search entry '{self.param.text}': {self.unreadable}", "")]
        value = self.override.value()
        if _zero_step(value):  # `range(0, 10, 0)`: "t3rl failed unexpectedly: ValueError" out of validate
            message = f"'{self.param.text}' steps by 0: from {value.start} it never reaches {value.stop}"
            step = 1 if value.stop >= value.start else -1
            return [self._problem(message, f"range({value.start}, {value.stop}, {step})", f"steps of {step}")]
        boolean = (
            _BOOLEAN_BOUND.search(self.param.text) if isinstance(value, IntervalSweep | RangeSweep) else None
        )
        if boolean is not None:  # `interval(0.0, true)`: Hydra reads true as 1.0, Optuna searches [0, 1]
            message = (
                f"'{self.param.text}' has the bound {boolean[0]}, a boolean, which Hydra reads as "
                f"{float(boolean[0].lower() == 'true')}: a boolean is never the number meant"
            )
            source = self.param.source.removeprefix("override ")
            fallback = (
                f"drop {source} (the search file's entry of {self.name}, if any, comes back)"
                if self.param.from_command_line
                else f"write the bound as a number in {source}"
            )
            return [self._problem(message, "", fallback=fallback)]
        if is_secret_key(self.name) or any(secrets_in({self.name: value}) for value in self.values):
            # Values t3rl writes are masked; these Optuna writes itself, where no scrub reaches.
            message = (
                "a search space holds a credential: Optuna writes every value it tries in clear (the sweep "
                "dir's optimization_results.yaml, its study storage)"
            )
            reference = shell_word(replayable(f"{self.param.key}=x"))
            fix = f"search other keys; pass the credential by reference, as a plain override: {reference}"
            return [self._problem(message, "", fallback=fix)]
        value = self.override.value()
        if isinstance(value, IntervalSweep):
            return self._interval_shape(value)
        repeated = self._repeated()
        if repeated:
            return [repeated]
        if isinstance(value, RangeSweep) and not self.values:
            start, stop, step = value.start, value.stop, value.step
            message = (
                f"'{self.param.text}' is empty: from {start} in steps of {step}, no value is before {stop}"
            )
            fixed = f"range({stop}, {start}, {step})" if (stop - start) * step < 0 else ""
            return [self._problem(message, fixed, "start and stop swapped")]
        return []

    def _repeated(self) -> Problem | None:
        """A choice that names a value twice (`choice(1, 1)`, `choice(0.01, 1e-2)`): Optuna's categorical
        distribution keeps each copy as a category of its own, so the sampler draws that value more often
        and never anything new for it; a repeat is a typo for another value, or a weight nobody asked for."""
        if not self.override.is_choice_sweep():
            return None
        kept: list[tuple[str, Any]] = []
        again = ""
        for text, value in zip(self.values, self.override.sweep_iterator(), strict=True):
            if not any(_same(value, other) for _, other in kept):
                kept.append((text, value))
            else:
                again = again or text
        if not again:
            return None
        texts = [t for t, _ in kept]
        if len(texts) == 1:
            message = f"'{self.param.text}' names {self.name}={again} more than once and nothing else"
            return self._problem(message, texts[0], "its one value, which every trial takes")
        message = (
            f"'{self.param.text}' names {self.name}={again} more than once: Optuna keeps each copy as a "
            "category of its own, so its sampler draws that value more often than the others (a weight "
            "nobody wrote down), or the repeat is a typo for another value"
        )
        return self._problem(message, _choice_text(texts), "each value once")

    def one_value(self) -> str | None:
        """The one value every trial takes (`choice(binary)`, `range(1, 2)`, `interval(0.1, 0.1)`), or None
        when the entry searches more than one (or cannot be read: its own problems say so)."""
        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.core.override_parser.types import IntervalSweep

        if self.unreadable or self.own_problems or not self.override.is_sweep_override():
            return None
        value = self.override.value()
        if isinstance(value, IntervalSweep):
            return str(value.start) if value.start == value.end else None
        return self.values[0] if len(self.values) == 1 else None

    def problems(self) -> list[Problem]:
        """What is wrong with a run at one of the entry's values (after `_probe_together`)."""
        # lazy: Hydra's override parser, only for an hparams_search sweep
        from hydra.core.override_parser.types import IntervalSweep

        missing = self._missing_key()
        if missing is not None:
            return [missing]
        value = self.override.value()
        if isinstance(value, IntervalSweep):
            return self._interval(value)
        return self._choices()

    # ------------------------------------------------------------------------------------- intervals

    def _interval_shape(self, sweep: Any) -> list[Problem]:
        low, high, log = sweep.start, sweep.end, "log" in sweep.tags
        if low > high:
            fixed = self._interval_text(sweep, high, low)
            message = f"'{self.param.text}' has its low bound above its high bound"
            return [self._problem(message, fixed, "low and high swapped")]
        if log and low <= 0:
            message = f"'{self.param.text}' is log-uniform, so its low bound must be above 0 (is {low})"
            start = self._cast(sweep, high / 1000) if high > 0 else None
            fixed = self._interval_text(sweep, start, high) if start is not None else ""
            return [self._problem(message, fixed, "three decades below the high bound")]
        return []

    def _interval(self, sweep: Any) -> list[Problem]:
        low, high, log = sweep.start, sweep.end, "log" in sweep.tags
        problems = []
        for bound, value, other in (("low", low, high), ("high", high, low)):
            refused = self._refused(value)
            if refused:
                edge = self._within(sweep, value, other, log)
                pair = (edge, high) if bound == "low" else (low, edge)
                fixed = self._interval_text(sweep, *pair) if edge is not None else ""
                what = f"its {bound} bound {self.name}={value} is refused: {_first(refused)}"
                problems.append(
                    self._problem(
                        f"'{self.param.text}' reaches a value no run accepts: {what}",
                        fixed,
                        "the nearest bound a run accepts",
                    )
                )
        return problems

    def _within(self, sweep: Any, value: float, other: float, log: bool) -> float | None:
        """A bound a run accepts instead of `value`: the field's own inclusive bound, else one a thousandth
        of the way (a log interval: three decades) from `other`, the bound that is accepted."""
        if self._refused(other):
            return None
        edge, inclusive = _declared_edge(self.name, self.data, lower=value < other)
        candidates = [edge] if edge is not None and inclusive else []
        if log and value < other:
            candidates.append(other / 1000)
        elif log:
            candidates.append(other * 1000)
        else:
            start = edge if edge is not None else value
            candidates.append(start + (other - start) / 1000)
        for candidate in candidates:
            cast = self._cast(sweep, candidate)
            if (cast - value) * (other - value) > 0 and not self._refused(cast):
                return cast
        return None

    def _cast(self, sweep: Any, value: float) -> float:
        return (
            round(value)
            if isinstance(sweep.start, int) and isinstance(sweep.end, int)
            else float(f"{value:.3g}")
        )

    def _interval_text(self, sweep: Any, low: float, high: float) -> str:
        inner = f"interval({low!r}, {high!r})"
        if isinstance(sweep.start, int) and isinstance(sweep.end, int):
            inner = f"int({inner})"
        if sweep.tags:
            inner = f"tag({', '.join(sorted(sweep.tags))}, {inner})"
        return inner

    # --------------------------------------------------------------------------------------- choices

    def _choices(self) -> list[Problem]:
        """A choice at each of its values, a range at both ends, a fixed entry at its value."""
        values = self.values
        if not self.override.is_sweep_override():
            kind = "value"
        else:
            kind = "end" if self.override.is_range_sweep() else "choice"
        refused = {v: p for v in values if (p := self._refused(v))}
        kept = [v for v in values if v not in refused]
        fixed = _choice_text(kept) if kind == "choice" and kept else ""
        return [
            self._problem(
                f"'{self.param.text}' has the {kind} {self.name}={value}, which no run accepts: "
                + _first(inner),
                fixed,
                "without the refused values",
            )
            for value, inner in refused.items()
        ]

    # ---------------------------------------------------------------------------------------- shared

    def _missing_key(self) -> Problem | None:
        """The searched key is not one a run has: one problem for the entry, with the key meant."""
        unknown = next(
            (
                p
                for p in self._refused(self.values[0])
                if p.key == self.name and p.message.startswith("unknown key")
            ),
            None,
        )
        if unknown is None:
            return None
        # the key the refusal names: a misspelt one, or where a setting typed elsewhere lives
        found = re.search(
            r"did you mean '([^']+)'|set it where it lives: \+?([\w.]+)=|did you mean ([\w.]+)\?", unknown.fix
        )
        message = f"{self.name} is searched, but it is no key of the experiment: {unknown.message}"
        if found is None:
            return self._problem(message, "", fallback=unknown.fix)
        meant = next(group for group in found.groups() if group)
        if not self.param.from_command_line:
            return self._problem(message, "", fallback=f"rename the entry to {meant}")
        renamed = f"{self.param.key[: len(self.param.key) - len(self.name)]}{meant}={self.param.text}"
        return self._problem(message, "", fallback=f"{shell_word(renamed)} (the key meant)")

    def _refused(self, value: object) -> list[Problem]:
        text = str(value)
        if text not in self.probed:
            overrides = [*self.base, f"{self.param.key}={text}"]
            self.probed[text] = [p for p in self.probe(overrides) if p.severity == "error"]
        return self.probed[text]

    def _problem(self, message: str, fixed: str, why: str = "", fallback: str = "") -> Problem:
        """A problem of the entry; `fixed`: its corrected distribution ("" = none derived, then
        `fallback` or words)."""
        if fixed:
            fix = f"{shell_word(f'{self.param.key}={fixed}')} ({why}, given after -m)"
        else:
            fix = fallback or f"change the entry in {self.param.source} (one bound or choice a run accepts)"
        key = self.name if self.param.from_command_line else f"{PARAMS}.{self.param.key}"
        return Problem(key, message, self.param.source, fix)


def _declared_edge(key: str, data: Mapping[str, Any], *, lower: bool) -> tuple[float | None, bool]:
    """The bound the schema declares for `key` on that side (pydantic's `ge`/`gt` or `le`/`lt`), and
    whether a value may equal it; (None, False) when it declares none."""
    parent, _, leaf = key.rpartition(".")
    model = model_at(parent, data)
    field = model.model_fields.get(leaf) if model is not None else None
    for constraint in field.metadata if field is not None else ():
        if lower and isinstance(constraint, Ge | Gt):
            bound = constraint.ge if isinstance(constraint, Ge) else constraint.gt
            return float(bound), isinstance(constraint, Ge)  # type: ignore[arg-type]
        if not lower and isinstance(constraint, Le | Lt):
            bound = constraint.le if isinstance(constraint, Le) else constraint.lt
            return float(bound), isinstance(constraint, Le)  # type: ignore[arg-type]
    return None, False


# A bound of an interval or range typed as YAML's or Hydra's boolean (outside a quoted string).
_BOOLEAN_BOUND = re.compile(r"(?i)(?<![\w.'\"])(true|false)(?![\w.'\"])")


def _zero_step(value: Any) -> bool:
    """A range sweep whose step is 0 (`range(0, 10, 0)`), which never ends."""
    # lazy: Hydra's override parser, only for an hparams_search sweep
    from hydra.core.override_parser.types import RangeSweep

    return isinstance(value, RangeSweep) and value.step == 0


def _values(override: Override, text: str) -> list[str]:
    """The values of a choice or range, or the one value of a fixed entry."""
    return sweep_strings(override) if override.is_sweep_override() else [text]


def _choice_text(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else f"choice({', '.join(values)})"


def _same(a: Any, b: Any) -> bool:
    """Two choices that are one value to the config (`0.01`, `1e-2`), a boolean never a number."""
    return (type(a) is bool) == (type(b) is bool) and a == b


def _first(problems: Sequence[Problem]) -> str:
    first = problems[0]
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{first.key}: {first.message}{more}"
