"""The smallest fix of a value the schema refuses is often to undo the override that set it: the value
the key had before, in the experiment and group files, is one the rest of the config was built around
(a domain's nearest bound or a cleaned-up spelling may break another rule, or repeat the typo)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from launch.config.errors import ConfigError, Problem
from launch.config.fixes import quoted
from launch.config.resolved import composed_plain
from launch.config.schema_errors import AS_FRACTION, AS_TYPED, SEE_THE_FIELD

# _OVERRIDE is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl validate
# +experiment=stage2_bfcl` never uses it.
_OVERRIDE = r"^override `(?P<text>[^`]*)`"


def with_undo_fixes(
    problems: list[Problem], overrides: Sequence[str], config_dirs: Sequence[str], *, prose_only: bool = False
) -> list[Problem]:
    """Each problem whose key an override set gets, as its first fix, the key's value without that
    override (when the files give it one); its own fix stays as the alternative, first when it only
    trims what was typed (a URL's appended path, white space). `prose_only`: only problems whose own fix
    is no assignment (a cross-field rule's fix is usually the smaller change), or that share their key
    with another error: each rule's fix clears its own refusal, not the other's (`n_samples_per_prompt=1`
    under GRPO: a batch that no longer divides, and groups of one), and the key's old value clears both."""
    keys = [p.key for p in problems if p.severity == "error"]
    shared = {key for key in keys if keys.count(key) > 1}
    return [
        p
        if prose_only and (p.severity != "error" or (_assigns(p.fix) and p.key not in shared))
        else _undone(p, overrides, config_dirs)
        for p in problems
    ]


def _assigns(fix: str) -> bool:
    return bool(re.search(r"(?<![\w.+~/-])[+~]?[A-Za-z_][\w.@]*=\S", fix.split("; ")[0]))


def _undone(problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str]) -> Problem:
    found = re.match(_OVERRIDE, problem.source)
    if found is None or found.group("text") not in overrides:
        return _section_undone(problem, overrides, config_dirs)
    text = found.group("text")
    key = text.split("=", 1)[0].lstrip("+~")
    if problem.key != key and not problem.key.startswith(key + "."):
        return _section_undone(problem, overrides, config_dirs)
    if _item_not_undone(problem.key, key, text, overrides, config_dirs):
        # a fixed-length list typed short (`env.data.think_tags=[x]`: its item 1 is missing), an item of a
        # list empty without the override (`env.sandbox.require=[x]`): Hydra cannot set an item the list
        # lacks, so the undo is the whole list
        item, own = problem.key.rpartition(".")[2], problem.fix
        own = "" if f"{problem.key}=" in own else own  # setting the item is what Hydra cannot do
        problem = problem.replace(key=key, message=f"item {item}: {problem.message}", fix=own)
    before = _value_without(text, overrides, config_dirs, problem.key)
    written = text.split("=", 1)[1] if "=" in text else None
    if before is _SECTION and problem.key == key and not _assigns(problem.fix):
        # `env.data=null`: a section given a value; without the override its keys come back
        fix = f"drop `{text}` ({key} is a section: set its keys, {key}.<key>=…)"
        parent, _, name = key.rpartition(".")
        if written == "null" and parent and _named_entry(parent, text, overrides, config_dirs):
            # `stages.eval_tiny=null` meant to remove the stage: an entry one names is deleted by name
            fix = f"~{key} {DELETES}{parent}' entry {name}); or {fix}"
        generic = not problem.fix or problem.fix == SEE_THE_FIELD
        return problem.replace(fix=fix if generic else f"{fix}; or {problem.fix}")
    if before in (_MISSING, _SECTION) or written is None or _text(before) == written:
        return problem
    undo = f"set {problem.key}={_text(before)} {WITHOUT}{text}`)"
    if _holds_sections(before):
        undo = f"drop `{text}` ({problem.key} holds {len(before)} section(s) without it)"
    elif problem.key != key and written.startswith("{"):
        # a key inside a mapping typed for its section (`env.data={categories: {x: 1}}`): set after the
        # mapping, a list would meet the mapping's value there, not the section's
        undo = f"drop `{text}` ({problem.key} is {_text(before)} without it)"
    same = f"set {problem.key}={_text(before)} ("
    if problem.fix.startswith(same) and problem.fix.endswith(")") and "; or " not in problem.fix:
        # the same value, said once, with both reasons for it
        return problem.replace(fix=f"{undo[:-1]}; {problem.fix.removeprefix(same)}")
    # a fix that reads what was typed (a spelling trimmed, a percentage as its fraction) comes first
    reads = AS_FRACTION in problem.fix or AS_TYPED in problem.fix
    trims = problem.fix.startswith("set ") and (_trims(problem.fix, written) or reads)
    fix = f"{problem.fix}; or {undo}" if trims else f"{undo}; or {problem.fix}" if problem.fix else undo
    return problem.replace(fix=fix)


_MISSING = object()
_SECTION = object()  # the key holds a mapping without the override


def _section_undone(problem: Problem, overrides: Sequence[str], config_dirs: Sequence[str]) -> Problem:
    """A section a file set, refused as a whole (a model's own validator: `coarse` next to `refined`, a
    service without its model) after an override changed a key below it: that override, the last one
    typed there, is where it came from, and undoing it the smallest fix (when the section's own fix
    assigns nothing)."""
    below = [o for o in overrides if o.split("=", 1)[0].lstrip("+~").startswith(f"{problem.key}.")]
    if not problem.key or not below or _assigns(problem.fix) or below[-1].startswith("~"):
        return problem
    text = below[-1]
    key = text.split("=", 1)[0].lstrip("+")
    before = _value_without(text, overrides, config_dirs, key)
    undo = (
        f"drop `{text}`" if before in (_MISSING, _SECTION) else f"set {key}={_text(before)} {WITHOUT}{text}`)"
    )
    return problem.replace(
        source=f"override `{text}`", fix=f"{undo}; or {problem.fix}" if problem.fix else undo
    )


def value_without(text: str, overrides: Sequence[str], config_dirs: Sequence[str], key: str) -> Any:
    """The key's value (plain data) in the composition without override `text`; None when it has none or
    holds a section."""
    found = _value_without(text, overrides, config_dirs, key)
    return None if found is _MISSING or found is _SECTION else found


def _named_entry(parent: str, text: str, overrides: Sequence[str], config_dirs: Sequence[str]) -> bool:
    """Whether `parent` holds sections the user names (`stages`), in the composition without `text`."""
    from launch.config.schema_walk import holds_named_sections  # lazy: only to explain a mistake

    try:
        data = composed_plain([o for o in overrides if o != text], config_dirs).data
    except ConfigError:
        return False
    return holds_named_sections(parent, data)


def _value_without(text: str, overrides: Sequence[str], config_dirs: Sequence[str], key: str) -> Any:
    """The key's value in the composition without override `text` (`_MISSING`: none; `_SECTION`: a
    mapping)."""
    rest = [o for o in overrides if o != text]
    try:
        data: Any = composed_plain(rest, config_dirs).data
    except ConfigError:
        return _MISSING
    for part in key.split("."):
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return _SECTION if isinstance(data, dict) else data


def _item_not_undone(
    problem_key: str, key: str, text: str, overrides: Sequence[str], config_dirs: Sequence[str]
) -> bool:
    """Whether `problem_key` is an item `key.<n>` of a list no override can set alone: past the end of the
    list typed (a pair typed short), or of the list without the override (an item of a list empty there)."""
    index = problem_key.removeprefix(key + ".")
    if index == problem_key or not index.isdigit():
        return False
    typed = _value_without("", overrides, config_dirs, key)  # no override is "": the line as typed
    before = _value_without(text, overrides, config_dirs, key)
    return any(isinstance(v, list) and int(index) >= len(v) for v in (typed, before))


def _holds_sections(value: Any) -> bool:
    """A list of mappings (`eval.published.results`): no override writes it back in one line that reads
    the same (`_text` would quote each mapping as text), so undoing is dropping what replaced it."""
    return isinstance(value, list) and any(isinstance(v, dict | list) for v in value)


def _text(value: Any) -> str:
    """A value as an override writes it, reading back as the same value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ",".join(_text(v) for v in value) + "]"
    return quoted(str(value))


def trims_first(problem: Problem) -> bool:
    """Whether the problem's first fix is a trim of what was typed with the key's value without the
    override after it (launch.checks.fix_closure.tried_trims tries the trim)."""
    first, _, rest = problem.fix.partition("; or ")
    return first.startswith("set ") and " (" not in first and WITHOUT in rest


# How a fix that sets the key back to its value without the override says so (launch.checks.fix_closure
# passes over it for one that reads what was typed).
WITHOUT = "(its value without `"
# "~<key> (deletes …": a fix that deletes an entry the user names, tried as applied
# (launch.checks.fix_closure.tried_trims): the rest of the config may need that entry.
DELETES = "(deletes "


def deletion_first(problem: Problem) -> bool:
    """Whether the problem's first fix deletes an entry and has alternatives."""
    first, _, rest = problem.fix.partition("; or ")
    return first.startswith("~") and DELETES in first and bool(rest)


def _trims(fix: str, written: str) -> bool:
    """Whether the fix's value is what was written with something trimmed (a corrected spelling)."""
    value = fix.removeprefix("set ").split("=", 1)[-1].split(" ")[0]
    return bool(value) and value != written and value.strip("'\"") in written and not _numeric(value)


def _numeric(text: str) -> bool:
    """A number is a bound or a default, never a trimmed spelling (1 is in 16000 by its digits alone)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
