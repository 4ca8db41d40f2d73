"""An option typed under the wrong group (`tracking=local`) is answered with the groups that have an
option of that name (`executor=local or sandbox=local instead of …`, launch.config.compose). Each is an
alternative the user may apply, so each is tried with the rest of the line first: one the config refuses
in turn (`sandbox=local` under BFCL, whose env has no sandbox) is not offered (was: offered, refused when
applied); when none is taken, dropping what was typed is the fix, with why each was refused."""

from __future__ import annotations

import re
from collections.abc import Sequence

from launch.checks.alternatives_tried import Trial, tried
from launch.checks.fix_closure import _TRYING, Refusals
from launch.config.errors import Problem

# compose._missing_config_problem's fix: "<g>=<o> or <g2>=<o> instead of `<typed>` ('<o>' is an option of …)"
_ELSEWHERE = re.compile(
    r"^(?P<choices>.+?) instead of `(?P<typed>[^`]+)` \('(?P<option>[^']+)' is an option of "
)


def offered_elsewhere(problem: Problem) -> bool:
    return _ELSEWHERE.match(problem.fix) is not None


def tried_elsewhere(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    if _TRYING.get():  # a choice being tried: its own refusals are not tried again
        return problems
    return [
        _tried_choices(p, overrides, config_dirs, refusals) if offered_elsewhere(p) else p for p in problems
    ]


def _tried_choices(
    problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> Problem:
    found = _ELSEWHERE.match(problem.fix)
    assert found is not None
    typed, option = found["typed"], found["option"]
    if typed not in overrides:
        return problem
    rest = [o for o in overrides if o != typed]

    def line(choice: str) -> Trial:
        return Trial(choice, [*rest, choice])

    def own(choice: str, errors: list[Problem]) -> list[Problem]:
        # an error the choice itself causes (its file, or a key it chose, named)
        return [e for e in errors if f"`{choice}`" in e.source]

    taken, refused = tried(found["choices"].split(" or "), line, own, config_dirs, refusals)
    if not refused:
        return problem
    groups = ", ".join(c.partition("=")[0].lstrip("+") for c in taken)
    if taken:
        why = f"'{option}' is an option of {groups}; {'; '.join(refused)}"
        return problem.replace(fix=f"{' or '.join(taken)} instead of `{typed}` ({why})")
    return problem.replace(
        fix=f"drop `{typed}` ('{option}' is an option of other groups: {'; '.join(refused)})"
    )
