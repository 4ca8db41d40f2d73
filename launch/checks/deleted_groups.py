"""`~hardware`, `~paths`: a config group deleted from the defaults list while the config still needs its
section. The problems that follow name the schema's "required key is missing" blamed on "(schema
default)" with a fix of `set hardware=<value> (see t3rl show --explain )`, or another file's
interpolation (`${paths.models_dir}` in the model's file) as the thing to fix; the cause is the deletion,
and undoing it the fix.

The same holds for a key a file sets (`~model.name`, `~paths.models_dir`, `~env.name`): what it breaks
(a required key, an interpolation of it in another file, its section's validator) is blamed on the
deletion with dropping it as the fix (was `set model.name=<value>`, which no shell parses, or the other
file's key). A key that holds no value (`~eval.top_p` where it is null) cannot be deleted: Hydra refuses,
and the fix drops the deletion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from launch.config.composition_fixes import unmet_condition
from launch.config.errors import Problem
from launch.config.optional_groups import OPTIONAL_GROUPS


def deleted_group_problems(
    overrides: Sequence[str], problems: Sequence[Problem], config_dirs: Sequence[str]
) -> list[Problem]:
    """One problem per `~GROUP` or `~key` override that one of `problems` is about; [] when none is."""
    deleted = [(o, o[1:].partition("=")[0]) for o in overrides if o.startswith("~")]
    known: set[str] = set()
    if any("." not in key for _, key in deleted):
        from launch.config.compose import groups  # lazy: Hydra's config loader, only for `~name`

        known = set(groups(config_dirs))
    keys = [o for o, key in deleted if "." in key or key not in known]
    found = [p for p in (_deleted_key(o, problems) for o in keys) if p is not None]
    for override, group in deleted:
        if override in keys:
            continue
        from launch.config.compose import group_options  # lazy: as above

        options = group_options(group, config_dirs) if group not in OPTIONAL_GROUPS else []
        needed = next((p for p in problems if _reads(p, group)), None)
        if not options or needed is None or needed.source == f"override `{override}`":
            continue  # nothing it needs, or the deletion's own problem (`~group=option` not chosen)
        found.append(
            Problem(
                group,
                f"`{override}` deleted the {group} group's section, which this config needs "
                f"({needed.key or 'the config'}: {needed.message})",
                f"override `{override}`",
                f"drop `{override}`; another option instead: {group}=<one of {', '.join(options)}>",
            )
        )
    return found


def _reads(problem: Problem, group: str) -> bool:
    """Whether `problem` is about a key of `group`'s section, or an interpolation of one."""
    key = problem.key
    return key == group or key.startswith(f"{group}.") or f"'{group}." in problem.message


def _deleted_key(override: str, problems: Sequence[Problem]) -> Problem | None:
    key = override[1:].partition("=")[0]
    parent, _, leaf = key.rpartition(".")
    needed = next(
        (
            p
            for p in problems
            if _reads(p, key)
            or f"'{key}'"
            in p.message  # an interpolation of it: "Interpolation key 'paths.models_dir' not found"
            or p.source == f"deleted by override `{override}`"
            or (p.key == parent and f"'{leaf}'" in p.message)
            # a section's tag (`~stages.eval.eval.engine.name`): its other keys are no kind's now
            or (leaf in ("name", "kind") and p.key.startswith(f"{parent}."))
        ),
        None,
    )
    if needed is None or needed.message.startswith("nothing to delete"):
        return None  # a key no file has (`~tracking.projct`): its own problem names the key meant
    unmet = unmet_condition(override, key, needed.message)
    if unmet is not None:  # `~key=value` deletes the key only while it holds that value
        return unmet
    if "Could not delete from config" in needed.message:
        message = f"`{override}` deletes {key}, which holds no value here (null, or no file sets it)"
    elif needed.source == f"override `{override}`":
        return needed  # the deletion's own problem (`~group@package` names no entry): it says so already
    else:
        message = f"`{override}` deleted {key}, which this config needs ({needed.key or 'the config'}: "
        message += f"{needed.message})"
    return Problem(key, message, f"override `{override}`", f"drop `{override}`")


def deleted_entries_needed(
    overrides: Sequence[str],
    problems: Sequence[Problem],
    config_dirs: Sequence[str],
    refusals: Callable[[list[str], Sequence[str]], list[Problem]],
) -> list[Problem]:
    """A deletion that a file's key needs, however the check that refuses it words it: `~stages.train`
    was "no stage named 'train'" at `stages.to_hf.source`, `~stages.data` "no prepare_data stage runs
    before it", both blamed on the experiment's file with a stage to add as the fix. The deletion is the
    key changed last, and the cause when the command line without it has no such refusal (`refusals`:
    the errors a command line is refused with)."""
    errors = [p for p in problems if p.severity == "error" and not p.source.startswith("override `")]
    for override in (o for o in overrides if o.startswith("~")) if errors else ():
        after = refusals([o for o in overrides if o != override], config_dirs)
        gone = [p for p in errors if not any((q.key, q.message) == (p.key, p.message) for q in after)]
        if gone:
            key = override[1:].partition("=")[0]
            needed = gone[0]
            message = f"`{override}` deleted {key}, which this config needs ({needed.key}: {needed.message})"
            return [Problem(key, message, f"override `{override}`", f"drop `{override}`")]
    return []
