"""A rule's fix may offer to change what a stage is (`set stages.sft.curriculum.mode=rl` for an SFT stage
of a family slime cannot mask): the stage then meets the other kind's rules, which its data or its
settings may refuse (retool_sft holds demonstrations: an RL stage of it is refused). Such an alternative
is tried with the rest of the line, as the fix applier would apply it, and dropped when the line it makes
is refused for a reason the line as typed was not (was: offered, refused when applied); none left: the
message says why each was refused and no fix is proposed."""

from __future__ import annotations

import re
from collections.abc import Sequence

from launch.checks.alternatives_tried import Trial, tried
from launch.checks.fix_closure import _TRYING, Refusals
from launch.config.errors import Problem

# An alternative that sets a stage's mode, alone or with other keys: "set stages.<s>.curriculum.mode=<m> …"
_STAGE_KIND = re.compile(
    r"^set (?P<sets>(?:\+?[A-Za-z_][\w.]*=\S+ )*\+?stages\.\w+\.curriculum\.mode=\S+"
    r"(?: \+?[A-Za-z_][\w.]*=\S+)*)(?: \(.*)?$"
)
_OR = "; or "


def offers_a_stage_kind(problem: Problem) -> bool:
    return problem.severity == "error" and any(_STAGE_KIND.match(a) for a in problem.fix.split(_OR))


def tried_offers(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], refusals: Refusals
) -> list[Problem]:
    if _TRYING.get():  # a fix being tried: its own refusals are not tried again
        return problems
    typed = {(p.key, p.message) for p in problems if p.severity == "error"}
    return [
        _tried_offer(p, overrides, config_dirs, refusals, typed) if offers_a_stage_kind(p) else p
        for p in problems
    ]


def _tried_offer(
    problem: Problem,
    overrides: Sequence[str],
    config_dirs: Sequence[str],
    refusals: Refusals,
    typed: set[tuple[str, str]],
) -> Problem:
    def line(alternative: str) -> Trial | None:
        found = _STAGE_KIND.match(alternative)
        if found is None:
            return None
        sets = found["sets"].split()
        keys = {s.partition("=")[0].lstrip("+") for s in sets}
        rest = [o for o in overrides if o.partition("=")[0].lstrip("+~") not in keys]
        return Trial(f"`{found['sets']}`", [*rest, *sets])

    def own(_: str, errors: list[Problem]) -> list[Problem]:
        # an error the line as typed did not have (its other errors are not the offer's)
        return [e for e in errors if (e.key, e.message) not in typed]

    kept, refused = tried(problem.fix.split(_OR), line, own, config_dirs, refusals)
    if not refused:
        return problem
    return problem.replace(message=f"{problem.message} ({'; '.join(refused)})", fix=_OR.join(kept))
