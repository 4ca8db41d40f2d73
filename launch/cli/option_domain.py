"""A value outside the domain an option or argument declares (its choices, or its numeric bounds), told in
one message: the option, the value, the domain, and the smallest fix (the nearest value inside it).

Typer refuses such a value while parsing, before the command runs, but its words name neither the value
nor a fix ("Input should be less than or equal to 16", "Value error, 'x' is not one of 'a', 'b'.").
`launch.cli.help_format` asks this module for its words when Typer has refused a value (imported then
only, so a command line that parses pays nothing for it).
"""

from __future__ import annotations

import difflib
import math
import re
import shlex
from typing import Any

from t3rl_core.counts import counted

# The longest piece of a value a message repeats (a 10,000-digit number is shown by its head).
_SHOWN = 60


def refusal(param: Any, value: Any) -> str | None:
    """Why `value` (as typed: a string, or a list of them), which Typer refused, is outside `param`'s
    declared domain, with the nearest value inside it as the fix; None for a parameter that declares no
    choices or numeric type (Typer's words stand)."""
    for item in value if isinstance(value, list | tuple) else [value]:
        if not isinstance(item, str):
            continue
        several = _several_choices(param, item)
        if several is not None:
            return several
        found = _outside(param, item)
        if found is not None:
            why, domain, fix = found
            name = param_name(param)
            spelled = f"{name} {shlex.quote(fix)}" if param.param_type_name == "option" else shlex.quote(fix)
            return f"{why}: {name} takes {domain}; fix: {spelled}"
    return None


def param_name(param: Any) -> str:
    """How a message names `param`: an option by its first long name, an argument by its metavar."""
    if param.param_type_name != "option":
        return str(param.metavar or (param.name or "").upper())
    longs = [o for o in param.opts if o.startswith("--")]
    return (longs or list(param.opts))[0]


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN else text[:_SHOWN] + "…")


def _outside(param: Any, item: str) -> tuple[str, str, str] | None:
    desc = param.type_descriptor
    if desc.choices is not None:
        return _not_a_choice(desc, item)
    if desc.annotation in (int, float):
        return _out_of_bounds(param, desc.annotation, item)
    return None


def _several_choices(param: Any, item: str) -> str | None:
    """`--status succeeded,failed`: choices listed in one value (the nearest one alone was the fix, the
    others dropped); each is given to an option that repeats, else one a command line."""
    choices = param.type_descriptor.choices
    if choices is None:
        return None
    allowed = {
        str(getattr(choice, "value", choice)).lower(): str(getattr(choice, "value", choice))
        for choice in choices
    }
    parts = [allowed.get(part.lower()) for part in re.split(r"[,\s]+", item) if part]
    if len(parts) < 2 or None in parts:
        return None
    name = param_name(param)
    option = param.param_type_name == "option"
    each = [f"{name} {shlex.quote(str(p))}" if option else shlex.quote(str(p)) for p in parts]
    why = f"{_shown(item)} is {counted(len(parts), 'choice')} in one value: {name} takes one"
    if getattr(param, "multiple", False):
        return f"{why} and repeats; fix: {' '.join(each)}"
    return f"{why} per command line; fix: {', then '.join(each)}"


def _not_a_choice(desc: Any, item: str) -> tuple[str, str, str] | None:
    allowed = [str(getattr(choice, "value", choice)) for choice in desc.choices]
    if item in allowed or (not desc.case_sensitive and item.lower() in {a.lower() for a in allowed}):
        return None
    # Letter case and stray spaces aside first (`EVAL`, `eval `), then the nearest spelling (`sucess`);
    # loose, as these words are few and short.
    same_letters = [a for a in allowed if a.lower() == item.strip().lower()]
    guess = same_letters or difflib.get_close_matches(item.strip(), allowed, n=1, cutoff=0.5)
    why = f"{_shown(item)} is not a choice" + (f" (did you mean '{guess[0]}'?)" if guess else "")
    return why, f"one of {', '.join(allowed)}", (guess or allowed)[0]


def _out_of_bounds(param: Any, kind: type, item: str) -> tuple[str, str, str] | None:
    info = param.type_descriptor.parameter_info
    low, high = info.min, info.max
    word = "an integer" if kind is int else "a number"
    domain = " ".join(
        [word, *([f"from {low}"] if low is not None else []), *([f"to {high}"] if high is not None else [])]
    )
    number = _number(item)
    fraction = kind is int and number is not None and math.isfinite(number) and number != int(number)
    if number is None or math.isnan(number) or fraction:
        why = f"{_shown(item)} is not {word}"
    elif low is not None and number < low:
        why = f"{_shown(item)} is below {low}"
    elif high is not None and number > high:
        why = f"{_shown(item)} is above {high}"
    else:  # inside the bounds, but spelt so Typer reads no number (`0x10`, `１６`, `1e3` for an integer)
        why = f"{_shown(item)} is not {word} as typed (decimal ASCII digits)"
    return why, domain, _format(_nearest(param, number, low, high), kind)


def _number(item: str) -> float | None:
    try:
        return float(item)
    except ValueError:
        try:
            return float(int(item, 0))  # 0x10: a number, though not one Typer reads
        except ValueError:
            return None
    except OverflowError:
        return math.inf


def _nearest(param: Any, number: float | None, low: float | None, high: float | None) -> float:
    """The value inside the bounds nearest `number` (its default, else its least, when it is none)."""
    if number is None or math.isnan(number):
        default = param.default
        if isinstance(default, int | float) and not isinstance(default, bool):
            number = float(default)
        else:
            number = low if low is not None else (high if high is not None else 0.0)
    if low is not None:
        number = max(number, low)
    if high is not None:
        number = min(number, high)
    return number if math.isfinite(number) else (low if low is not None else 0.0)


def _format(number: float, kind: type) -> str:
    if kind is int:
        return str(round(number))
    return repr(float(number))
