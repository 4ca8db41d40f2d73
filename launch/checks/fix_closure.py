"""A fix that reads what was typed in the form its field takes (`eval.pass_k=4` → `eval.pass_k=[4]`) can
need more than its own key: pass@4 needs four samples per task, at a temperature that makes them differ.
The fix is tried as the user would apply it; when what it leads to is one refusal at the key it sets, whose
own fix assigns other keys, the two are proposed as one (and tried again), else the fix's other
alternatives come first. A fix the message proposes validates when applied (was: the key's old value
first, `eval.pass_k=[1]`, which drops what was typed; or `[4]`, refused in turn).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Sequence
from contextvars import ContextVar

from launch.checks.undo import DELETES, WITHOUT
from launch.config.errors import QUOTED_ONLY, VALUES_QUOTED, WITH_PLUS, Problem
from launch.config.override_fixes import shell_word
from launch.config.schema_errors import AS_TYPED

# What resolving a command line refuses (errors only): launch.checks.resolve's, handed in, as it imports
# this module.
Refusals = Callable[[list[str], Sequence[str]], list[Problem]]
# Set while a fix is tried: the trial's own refusals are not completed again.
_TRYING: ContextVar[bool] = ContextVar("trying_a_fix", default=False)
# "set <key>=<value> (…": the first alternative of a fix that assigns one key.
_SET = re.compile(r"set \+?(?P<key>[A-Za-z_][\w.]*)=(?P<value>\S+) \(")
# What a field's refusal of the value tried says was meant instead, as one override: a choice spelt in
# another case (`did you mean hardware=h100x8?`), a key that exists typed with '+' (`drop the '+': seed=3`).
_MEANT = re.compile(r"^(?:did you mean (?P<near>\S+=\S+)\?|drop the '\+': (?P<bare>\S+=\S+))$")


def completed(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    """`problems` with each fix that reads what was typed completed, or put after its alternatives;
    `refusals` tries a command line."""
    if _TRYING.get():
        return problems
    return [
        _completed(p, overrides, config_dirs, refusals) if AS_TYPED in _first(p.fix) else p for p in problems
    ]


def _first(fix: str) -> str:
    return fix.partition("; or ")[0]


def _completed(
    problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> Problem:
    first, _, rest = problem.fix.partition("; or ")
    found = _SET.match(first)
    typed = problem.source.removeprefix("override `").removesuffix("`")
    if found is None or typed not in overrides:
        return problem
    key, value = found["key"], found["value"]
    plus = "+" if typed.startswith("+") else ""
    trial = [*(o for o in overrides if o != typed), f"{plus}{key}={value}"]
    errors = _tried(refusals, trial, config_dirs)
    if not errors:
        return problem
    meant = _MEANT.match(errors[0].fix) if len(errors) == 1 and errors[0].key == key else None
    line = meant and (meant["near"] or meant["bare"])
    if line and not _tried(refusals, [*(o for o in overrides if o != typed), line], config_dirs):
        # the look-alikes read (`hardware=Н100x8`, `+sееd=3`) name the key's value in one more step: both
        fix = f"set {line} instead of `{typed}` ({AS_TYPED}, as {key} takes it: {errors[0].message})"
        return problem.replace(fix=f"{fix}; or {rest}" if rest else fix)
    if len(errors) == 1 and errors[0].key == key and errors[0].fix.startswith("set "):
        more = re.split(r", or |; or | \(", errors[0].fix.removeprefix("set "), maxsplit=1)[0].split()
        others = all("=" in m and m.partition("=")[0].lstrip("+~") != key for m in more)
        if (
            more and others and not _tried(refusals, [*trial, *more], config_dirs)
        ):  # never the key itself again
            fix = f"set {key}={value} {' '.join(more)} ({AS_TYPED}, with what it needs: {errors[0].message})"
            return problem.replace(fix=f"{fix}; or {rest}" if rest else fix)
    return problem.replace(fix=f"{rest}; or {first}") if rest else problem


def _tried(refusals: Refusals, overrides: list[str], config_dirs: Sequence[str]) -> list[Problem]:
    token = _TRYING.set(True)
    try:
        return refusals(overrides, config_dirs)
    finally:
        _TRYING.reset(token)


# "set <key>=<value>" alone: a fix that assigns one value and says nothing else (a name made safe, a URL
# without the path its client appends).
_ONE_SET = re.compile(r"set (?P<key>[A-Za-z_][\w.]*)=(?P<value>'(?:[^'\\]|\\.)*'|\S+)")


# "~<key> (deletes …": launch.checks.undo's deletion of an entry the user names.
_DELETION = re.compile(rf"~[A-Za-z_][\w.]*(?= {re.escape(DELETES)})")


def tried_trims(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    """A fix that trims what was typed comes before the key's value without the override
    (launch.checks.undo.trims_first); tried as the user would apply it, it goes after that value when the
    line it makes is refused where the line typed was not: a split or stage name made safe (`'--x'` → `x`,
    `'../x'` → `x`) names no split or stage the rest of the config knows. So does the deletion of an entry
    the user names (`~stages.train` for `stages.train=null`) that another entry needs."""
    if _TRYING.get():
        return problems
    known = {(p.key, p.message) for p in problems}
    return [_tried_trim(p, overrides, config_dirs, refusals, known) for p in problems]


def _tried_trim(
    problem: Problem,
    overrides: Sequence[str],
    config_dirs: Sequence[str],
    refusals: Refusals,
    known: set[tuple[str, str]],
) -> Problem:
    first, _, rest = problem.fix.partition("; or ")
    found = _ONE_SET.fullmatch(first)
    deleted = _DELETION.match(first)
    typed = problem.source.removeprefix("override `").removesuffix("`")
    if not rest or typed not in overrides:
        return problem
    if found is not None:
        applied = f"{'+' if typed.startswith('+') else ''}{found['key']}={found['value']}"
    elif deleted is not None:
        applied = deleted[0]
    else:
        return problem
    trial = [*(o for o in overrides if o != typed), applied]
    if any((e.key, e.message) not in known for e in _tried(refusals, trial, config_dirs)):
        return problem.replace(fix=f"{rest}; or {first}")
    return problem


def quoted_tried(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    """A value Hydra's grammar reads only quoted is answered with it quoted (launch.config.override_syntax);
    tried as the user would apply it, a quoted value the field refuses in turn (`name='café'`: a directory
    name is ASCII) is answered instead with the value the field's own refusal proposes from what was typed
    (`name=cafe`), when that validates: one step, where it took two (was: quoted, then its ASCII spelling)."""
    if _TRYING.get():
        return problems
    return [_quoted_tried(p, overrides, config_dirs, refusals) if quoted_only(p) else p for p in problems]


def quoted_only(problem: Problem) -> bool:
    """Whether `problem` is answered with its value quoted (a value Hydra's grammar reads only quoted)."""
    return QUOTED_ONLY in problem.message or f"({VALUES_QUOTED}" in problem.fix


def _quoted_tried(
    problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> Problem:
    typed = problem.source.removeprefix("override `").removesuffix("`")
    words = shlex.split(problem.fix.partition(f" ({VALUES_QUOTED}")[0]) if typed in overrides else []
    if len(words) != 1:
        return problem
    quoted_line = words[0]
    plus = "+" if typed.startswith("+") else ""
    trial = [*(o for o in overrides if o != typed), quoted_line]
    errors = _tried(refusals, trial, config_dirs)
    if len(errors) != 1 or errors[0].key != problem.key:
        return problem  # it validates, or what it leads to is not this field's refusal alone
    # The refusal's alternatives that read what was typed: not the key's old value (`its value without`).
    for alternative in errors[0].fix.split("; or "):
        found = _ONE_SET.match(alternative.strip())
        # the key's old value is no reading of what was typed, unless it is also that (`(8)` on an 8)
        if (
            found is None
            or found["key"] != problem.key
            or (WITHOUT in alternative and AS_TYPED not in alternative)
        ):
            continue
        line = f"{plus}{found['key']}={found['value']}"
        if not _tried(refusals, [*(o for o in overrides if o != typed), line], config_dirs):
            # its first clause: the rest repeats the value proposed
            why = errors[0].message.removeprefix("Value error, ").partition(" (")[0].partition("; ")[0]
            return problem.replace(
                fix=f"{shell_word(line)} (quoted, {shell_word(quoted_line)} is refused in turn: {why})"
            )
    return problem


def plus_tried(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    """A mapping typed without '+' onto a mapping a file sets is answered with the line with '+' (Hydra's
    merge); tried as the user would apply it, a line refused in turn at the mapping or a key of it
    (`+hardware.env_vars={a: 1}`: a job variable is text; `+model.chat.chat_template_kwargs={a: 1}`: the
    template reads no `a`) is answered first by dropping what was typed, with the refusal it leads to
    and that refusal's fix as the reason (was: the '+' line alone, refused when applied)."""
    if _TRYING.get():
        return problems
    return [
        _plus_tried(p, overrides, config_dirs, refusals) if p.fix.startswith(WITH_PLUS) else p
        for p in problems
    ]


def _plus_tried(
    problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> Problem:
    typed = problem.source.removeprefix("override `").removesuffix("`")
    if typed not in overrides:
        return problem
    plus_line = problem.fix.removeprefix(WITH_PLUS)
    errors = _tried(refusals, [*(o for o in overrides if o != typed), plus_line], config_dirs)
    turn = next((e for e in errors if e.key == problem.key or e.key.startswith(f"{problem.key}.")), None)
    if turn is None:
        return problem  # it validates, or what it leads to is not this mapping's
    return problem.replace(
        fix=f"drop `{typed}` (with '+', {shell_word(plus_line)} is refused in turn at {turn.key}: "
        f"{turn.message}; {turn.fix})"
    )
