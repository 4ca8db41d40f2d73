"""Apply the first fix a pre-flight error proposes to the overrides that produced it, as a user would:
the suite re-validates the result (tests/launch/test_preflight.py, the mutation tests)."""

from __future__ import annotations

import re
from collections.abc import Mapping

# A deletion in a fix: `~key` with no value.
_DELETION = re.compile(r"(?<![\w.+~/-])~([A-Za-z_][\w.@]*)(?![\w.=])")
# An assignment in a fix: `key=value`, `+key=value`, or a group choice `group=option`; a quoted value
# may hold spaces.
_ASSIGNMENT = re.compile(
    r"(?<![\w.+~/-])([+~]?[A-Za-z_][\w.@]*)=('(?:[^'\\]|\\.)*'|\[[^\]]*\]|\{[^}]*\}|[^\s,;?)]+)"
)
# An assignment a fix quotes for the shell: `"key='1e3'"` (the shell passes it without the outer quotes).
_SHELL_QUOTED = re.compile(r'"([+~]?[A-Za-z_][\w.@]*=[^"]*)"')


def apply_first_fix(args: list[str], error: Mapping[str, str]) -> list[str] | None:
    """The overrides with the first alternative of the error's fix applied; None when it has none.
    A deletion (`~key`) drops the override that set the key, or deletes a key a file set. `error` has
    the problem's `message`, `source` and `fix`."""
    first = re.split(r"; |, or | or | \(", error["fix"], maxsplit=1)[0]
    # "set a=1 instead of `b=2`" (or "of `b=2` and `c=3`"): the overrides typed replaced by those proposed.
    first, _, instead = first.partition(" instead of ")
    replaced = re.findall(r"`([^`]+)`", instead)
    args = [a for a in args if a not in replaced]
    unplussed = re.match(r"drop the '\+\+?': (.+)$", first)
    blamed_override = re.match(r"override `(.*)`", error["source"])
    if unplussed and blamed_override:  # "drop the '+': a.b=1": the override typed, without its '+'
        return [unplussed[1] if a == blamed_override[1] else a for a in args]
    dropped = re.match(r"drop `([^`]+)`", first)
    if dropped:  # "drop `+a.b=1`": the override typed is taken off the command line
        return [a for a in args if a != dropped[1]]
    deleted = _DELETION.findall(first)
    if deleted:
        kept = [a for a in args if a.split("=", 1)[0].lstrip("+~") not in deleted]
        return kept if len(kept) < len(args) else [*args, *(f"~{key}" for key in deleted)]
    first = _SHELL_QUOTED.sub(r"\1", first)
    assignments = _ASSIGNMENT.findall(first)
    if not assignments:
        return None
    keys = {k.lstrip("+~") for k, _ in assignments}
    renamed = (
        error["message"].startswith("unknown key")
        or "must be added" in error["message"]
        or error["message"].startswith("unknown option")
    )
    blamed = re.match(r"override `(.*)`", error["source"])
    kept, added = [], set()
    for arg in args:
        if blamed and renamed and arg == blamed.group(1):
            continue  # the misspelt override is replaced by the fix
        if arg.startswith("~") and arg[1:] in keys:
            continue  # a key the user deleted is set again by the fix
        if "=" in arg and arg.split("=", 1)[0].lstrip("+~") in keys:
            if arg.startswith("+"):
                added.add(arg.split("=", 1)[0].lstrip("+"))  # the user added it: changing it keeps the '+'
            continue
        kept.append(arg)
    return kept + [f"{'+' if key in added else ''}{key}={value}" for key, value in assignments]
