"""A rule's fix may offer alternatives (`set a=1; or set b=2`), each one the user may apply; the fix applier
and the suite apply the first only. So each alternative that assigns keys is tried with the rest of the
line, as the fix applier would apply it, and dropped when the line it makes is refused for a reason the
line as typed was not, or still for the same one (was: offered, refused when applied). An offer to change
what a stage is (`set stages.sft.curriculum.mode=rl` for an SFT stage of a family slime cannot mask) is
one: the stage then meets the other kind's rules, which its data may refuse (retool_sft holds
demonstrations). The message says why each dropped alternative was refused; none left, no fix is
proposed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from launch.checks.alternatives_tried import Trial, tried
from launch.checks.fix_closure import _TRYING, Refusals
from launch.config.errors import Problem

_KEY = r"\+?[A-Za-z_][\w.@]*"
# An alternative that assigns keys and says nothing else, as tests.support.fix_applier applies it:
# "[set ]<k>=<v> [<k2>=<v2> …][ instead of `<typed>`[ and `<typed2>` …]][ (why)]".
_ASSIGNS = re.compile(
    rf"^(?:set )?(?P<sets>{_KEY}=[^\s`]+(?: {_KEY}=[^\s`]+)*)"
    r"(?: instead of (?P<typed>`[^`]+`(?: and `[^`]+`)*))?(?: \(.*\))?$"
)
_OR = "; or "
_FIGURES = re.compile(r"\d+(?:\.\d+)?")


def _reading(message: str) -> str:
    """What an error says, its figures left out: an alternative moves the estimates of an error the line
    already had (`needs ~4660 GiB per GPU` → `~4658 GiB`), and may move it to another key it sets (the
    memory estimate blames the key typed last), and that error is still the line's, not the
    alternative's."""
    return _FIGURES.sub("#", message)


def offers_alternatives(problem: Problem) -> bool:
    """An error whose fix offers more than one alternative, or one that changes what a stage is."""
    if problem.severity != "error":
        return False
    alternatives = problem.fix.split(_OR)
    return len(alternatives) > 1 or any(".curriculum.mode=" in a for a in alternatives)


def tried_offers(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    if _TRYING.get():  # a fix being tried: its own refusals are not tried again
        return problems
    typed = {_reading(p.message) for p in problems if p.severity == "error"}
    return [
        _tried_offer(p, overrides, config_dirs, refusals, typed) if offers_alternatives(p) else p
        for p in problems
    ]


def _tried_offer(
    problem: Problem,
    overrides: Sequence[str],
    config_dirs: Sequence[str],
    refusals: Refusals,
    typed: set[str],
) -> Problem:
    def line(alternative: str) -> Trial | None:
        found = _ASSIGNS.match(alternative)
        replaced = re.findall(r"`([^`]+)`", found["typed"] or "") if found else []
        if found is None or any(t not in overrides for t in replaced):
            return None  # prose, or a form the applier reads otherwise: offered as written
        sets = found["sets"].split()
        keys = {s.partition("=")[0].lstrip("+") for s in sets}
        added = {o.partition("=")[0].lstrip("+") for o in overrides if o.startswith("+")}
        rest = [o for o in overrides if o not in replaced and o.partition("=")[0].lstrip("+~") not in keys]
        # a key the user added keeps its '+' (the applier's reading)
        made = [f"+{s}" if s.partition("=")[0] in added and not s.startswith("+") else s for s in sets]
        return Trial(f"`{found['sets']}`", [*rest, *made])

    def own(_: str, errors: list[Problem]) -> list[Problem]:
        # an error the line as typed did not have (its other errors are not the offer's), or this one again
        mine = _reading(problem.message)
        return [e for e in errors if _reading(e.message) not in typed or _reading(e.message) == mine]

    kept, refused = tried(problem.fix.split(_OR), line, own, config_dirs, refusals)
    if not refused:
        return problem
    return problem.replace(message=f"{problem.message} ({'; '.join(refused)})", fix=_OR.join(kept))
