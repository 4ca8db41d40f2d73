"""pydantic validation errors as Problems: dotted config keys, where they were set, and a fix."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from launch.config.errors import AS_TYPED, BRACKETS, Problem, did_you_mean
from launch.config.fixes import assign, quoted, value_at
from launch.config.provenance import Provenance
from launch.config.schema_walk import OVERLAYS, field_names, model_at
from launch.config.secrets import is_secret_key
from t3rl_core.fields import FLOAT32_TINY, HOLDS, Corrected, NamesNothing, OutOfOrder, Reread
from t3rl_core.registry import PluginError, UnknownNameError
from t3rl_core.secret import SECRET_REFERENCE_ERROR

# The fix of a refused value no rule knows better; `launch.checks.undo` replaces it where it can.
SEE_THE_FIELD = "see the field's comment"
# How a fix that reads a number typed as a percentage says so; `launch.checks.undo` puts it first.
AS_FRACTION = "a fraction: "
# AS_TYPED (launch.config.errors): how a fix that is the value typed, in the form the field takes (`2h` as
# 02:00:00), says so; likewise first.


def problems_from_validation(
    error: ValidationError,
    data: Mapping[str, Any],
    provenance: Provenance,
    *,
    prefix: str = "",
    root: Mapping[str, Any] | None = None,
) -> list[Problem]:
    """One Problem per pydantic error of validating `data`, which sits at `prefix` of the run config
    `root` (the whole run config when validating RunConfig itself)."""
    problems = []
    for item in error.errors(include_url=False):
        # a key YAML or Hydra read as no text: of a mapping field (`env_vars: {on: "1"}`), of a section
        loc = item["loc"]
        if (item["type"] == "string_type" and loc[-1:] == ("[key]",)) or item["type"] == "invalid_key":
            at = loc[:-2] if loc[-1] == "[key]" else loc[:-1]
            mapping = _join(prefix, _config_key(at, data))
            raw = _raw_key(data if root is None else root, mapping, loc[len(at)])
            problems.append(_key_not_text(mapping, raw, provenance))
            continue
        key = _join(prefix, _config_key(item["loc"], data))
        problems.append(_problem(item, key, provenance, data if root is None else root))
    return problems


# How YAML 1.1 (Hydra's loader) spells a key it reads as no text, by what it reads.
_UNQUOTED = {
    "bool": "`on`, `off`, `yes`, `no`, `true` or `false` unquoted",
    "NoneType": "`~` or `null` unquoted",
}


def _raw_key(root: Mapping[str, Any], mapping: str, key: Any) -> Any:
    """The key of the mapping as the config holds it (pydantic's location says 1 for True)."""
    node = value_at(root, mapping)
    return (
        next((k for k in node if k == key and not isinstance(k, str)), key)
        if isinstance(node, Mapping)
        else key
    )


def _key_not_text(mapping: str, raw: Any, provenance: Provenance) -> Problem:
    """A key of the mapping at `mapping` that YAML or Hydra read as a number, a boolean or null
    (`env_vars: {on: "1"}`): pydantic said "Input should be a valid string (got True)" at the mapping,
    and the fix set an item of a list (`+hardware.env_vars.1='True'`). A mapping's keys are text."""
    kind = type(raw).__name__
    spelled = _UNQUOTED.get(kind, f"`{raw}` unquoted")
    source = provenance.source(mapping)
    message = (
        f"{mapping} has a key read as the {kind} {raw!r} ({spelled}), not as text: every key of {mapping} "
        "is text"
    )
    quoted_key = "'<the key as written>'" if isinstance(raw, bool) else f"'{raw}'"
    if source.startswith("override `"):
        typed = source.removeprefix("override ")
        fix = f"drop {typed} (and quote the key where it is typed: {{{quoted_key}: …}})"
    else:
        fix = f"in {source.split(' (')[0] or 'the file that sets it'}, quote the key: {quoted_key}: …"
    return Problem(mapping, message, source, fix)


def _written_in_a_file(provenance: Provenance, key: str) -> bool:
    """Whether `key` itself was written in a config file (not by an override, nor a section above it)."""
    return _file_of(provenance, key) is not None


def _anchor_holder(file: str | None, leaf: str) -> str | None:
    """The fix of an unknown key that a config file wrote only to hold a YAML anchor (`x_common: &common`,
    merged elsewhere with `<<: *common`): deleting it, or moving its values as any other misplaced key's,
    left each alias undefined. None when `leaf:` in `file` holds no anchor."""
    if file is None:
        return None
    try:
        text = Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(rf"^\s*{re.escape(leaf)}\s*:\s*&([^\s{{}}\[\],]+)", text, re.M)
    if found is None:
        return None
    name = found[1]
    return (
        f"in {file}, `{leaf}:` only holds the YAML anchor &{name}, and every key of the file is one of the "
        f"config: put &{name} on the first place that uses it (the section written in full there), alias "
        f"it in the others (`<<: *{name}`), and delete `{leaf}:`"
    )


def _file_of(provenance: Provenance, key: str) -> str | None:
    """The config file that wrote `key` itself; None when an override or a section above it set it."""
    origin = provenance.origin(key)
    written = provenance.sets(key) and origin is not None and not origin.source.startswith("override")
    return origin.source if written and origin is not None else None


def _problem(item: Any, key: str, provenance: Provenance, root: Mapping[str, Any]) -> Problem:
    from launch.config.group_names import group_choice_fix  # lazy: only to explain a mistake
    from launch.config.guess_values import takes  # lazy: likewise
    from launch.config.misplaced_keys import fits, misplaced_fix  # lazy: likewise
    from launch.config.misspelt_secrets import reference_fix, unknown_key_fix  # lazy: likewise

    kind = item["type"]
    parent, _, leaf = key.rpartition(".")
    source = provenance.source(key)
    if kind == SECRET_REFERENCE_ERROR or (is_secret_key(key) and kind != "extra_forbidden"):
        # The value may be the credential itself: never repeated, and the fix is the reference.
        return Problem(key, item["msg"], source, reference_fix(key))
    if kind == "extra_forbidden":
        known = field_names(parent, root)
        group = None if parent else _group_choice(leaf, item.get("input"), known)
        guess = None if group else did_you_mean(leaf, known)
        where = f"under '{parent}'" if parent else "at the top level"
        target = (
            _join(parent, guess)
            if guess
            and fits(_join(parent, guess), item.get("input"), root)
            and takes(_join(parent, guess), item.get("input"), root)  # a guess is a fix when it validates
            else None
        )
        # Before the Problem is made: its source quotes the value, masked if it is a credential.
        secret_fix = unknown_key_fix(key, item.get("input"), target)
        placed = (
            misplaced_fix(
                key,
                _typed_value(key, item.get("input"), source),
                root,
                (leaf, guess) if target else None,
                parent,
                _file_of(provenance, key),
            )
            if known
            else None
        )
        swap = _swapped_after(key, provenance)
        anchor = _anchor_holder(_file_of(provenance, key), leaf)
        if anchor:
            fix = anchor
        elif group:
            fix = group_choice_fix(group)
        elif secret_fix:
            fix = f"did you mean '{target}'? {secret_fix}"
        elif swap:  # the key belongs to the option the swap replaced: undoing it is the smallest fix
            other = other_kinds_fix(parent, leaf, root, f"override {swap}")
            fix = other or f"drop {swap} ('{leaf}' was set for the option it replaced)"
        elif placed:
            fix = placed
        elif target and _written_in_a_file(provenance, key):
            # An override beside it leaves the misspelt key in the file, refused again: the file is fixed.
            file, at = provenance.origin(key).source, f" (under {parent})" if parent else ""
            fix = f"did you mean '{target}'? in {file}, rename `{leaf}:` to `{guess}:`{at}"
        elif target:
            value = "<the value>" if secret_fix == "" else _override_text(item.get("input"))
            fix = f"did you mean '{target}'? e.g. {assign(root, target, value)}"
        else:
            from launch.config.guess_domains import refused_guess_fix  # lazy: an error's path

            # `executor.time=25:00:00:00`: a text kind refusing text is the setting in another form
            refused = refused_guess_fix(_join(parent, guess), item.get("input"), root) if guess else None
            fix = (
                refused
                or other_kinds_fix(parent, leaf, root, source)
                or _nearest_path_fix(key, _typed_value(key, item.get("input"), source), root)
                or f"known keys {where}: {', '.join(known)}"
            )
        return Problem(key, f"unknown key '{leaf}' {where}", source, fix)
    if kind == "missing":
        return Problem(
            key, "required key is missing", source, f"set {key}=<value> (see `t3rl show --explain {parent}`)"
        )
    if kind in ("literal_error", "enum"):
        expected = item.get("ctx", {}).get("expected", "")
        guess = did_you_mean(
            str(item.get("input")), [e.strip(" '") for e in expected.replace(" or ", ",").split(",")]
        )
        fix = f"did you mean {_assignment(root, key, guess)}?" if guess else f"use one of {expected}"
        words = _words_as_items(item.get("input"), key, root)
        if words:  # `[a b]`: a list's items separated by spaces, read as one item
            fix = (
                f"set {assign(root, _list_of(key), words)} ({AS_TYPED}: a list's items are separated by ',')"
            )
        return Problem(key, f"invalid value {item.get('input')!r}", source, fix)
    if kind == "union_tag_invalid":
        ctx = item.get("ctx", {})
        tags = [t.strip(" '") for t in str(ctx.get("expected_tags", "")).split(",")]
        tag_key = _join(key, str(ctx.get("discriminator", "kind")).strip("'"))
        guess = did_you_mean(str(ctx.get("tag", "")), tags)
        fix = f"did you mean {tag_key}={guess}?" if guess else f"use one of {', '.join(tags)}"
        return Problem(tag_key, f"unknown kind {ctx.get('tag')!r}", provenance.source(tag_key), fix)
    cause = item.get("ctx", {}).get("error")
    if isinstance(cause, UnknownNameError):
        name_key = _join(key, "name")
        fix = (
            f"did you mean {name_key}={cause.suggestion}?"
            if cause.suggestion
            else f"use one of {', '.join(cause.known)}, or a plugin's import path (pkg.module:Class)"
        )
        return Problem(name_key, f"unknown {cause.kind} '{cause.name}'", provenance.source(name_key), fix)
    if isinstance(cause, PluginError):
        name_key = _join(key, "name")
        fix = (
            f"set {name_key}={cause.nearest} (the nearest import path that exists)"
            if cause.nearest
            else cause.fix
        )
        return Problem(name_key, str(cause), provenance.source(name_key), fix)
    if isinstance(cause, Corrected):
        message = f"{item['msg']} (got {item.get('input')!r})"
        if item["loc"][-1:] == ("[key]",):
            return Problem(key, message, source, f"rename the key to {cause.value}")
        reread = f" ({AS_TYPED})" if isinstance(cause, Reread) else ""
        return Problem(_list_of(key), message, source, f"set {_assignment(root, key, cause.value)}{reread}")
    if isinstance(cause, OutOfOrder):
        return _out_of_order(cause, key, item.get("input"), provenance, root)
    if isinstance(cause, NamesNothing):
        from launch.config.item_references import names_nothing  # lazy: an error's path

        return names_nothing(cause, key, item.get("input"), provenance, root)
    one = _one_item_list(item, key, root) if kind == "list_type" else None
    if one:
        return Problem(key, f"{item['msg']} (got {item.get('input')!r})", source, one)
    inside = _one_item_inside(item, key, root) if source.startswith("override `") else None
    if inside:
        return Problem(key, f"{item['msg']} (got {item.get('input')!r})", source, inside)
    fraction = _as_fraction(item, key) or _percent_text(item, key, root)
    if fraction:
        return Problem(key, f"{item['msg']} (got {item.get('input')!r})", source, fraction)
    if kind in ("float_parsing", "int_parsing"):
        from launch.config.unit_values import in_field_unit  # lazy: an error's path

        # `gpu_memory_gib=80GiB`: the number in the unit the key's name says (was: the old value proposed)
        read = in_field_unit(key, item.get("input"), whole=kind == "int_parsing")
        if read is not None:
            number, unit = read
            fix = f"set {assign(root, key, str(number))} ({AS_TYPED}: a number of {unit}, as its name says)"
            return Problem(key, f"{item['msg']} (got {item.get('input')!r})", source, fix)
    fix = _bounds_fix(item, key)
    if kind == "string_type":
        from launch.config.override_fixes import typed_as_scalar  # lazy: an error's path

        typed = typed_as_scalar(key, source, item.get("input"))
        if typed is not None:
            return typed
    if item["type"] == "string_type":  # a list is no text that lost its quotes: its item, or undo, is meant
        typed_list = isinstance(item.get("input"), list | dict)
        fix = (
            ""
            if typed_list
            else f"quote it so it stays a string: {assign(root, key, repr(str(item.get('input'))))}"
        )
    list_item = key.rpartition(".")[2].isdigit()
    if list_item:
        key = key.rpartition(".")[0]
    default, why = default_of(key, root), "its default"
    kept = _without_refused_items(key, root) if list_item and default is None else None
    if default is not None:
        fix = f"set {key}={default} ({fix.removeprefix('set ') if fix else why})"
    elif kept is not None:  # a list whose default is refused here too (a venv under a hidden ~/.cache)
        fix = f"set {assign(root, key, kept)} (without the items it refuses)"
    message = f"{item['msg']} (got {item.get('input')!r})"
    values = item.get("input")
    # a list of the wrong length for a fixed-length one (`think_tags=[a,b,c]`) is no value typed as a list
    sized = item["type"] in ("too_long", "too_short")
    if (
        isinstance(values, list)
        and values
        and source.startswith("override `")
        and not list_item
        and not sized
    ):
        # a list typed for one value: maybe a sweep, one run per value (`-m seed=1,2`)
        sweep = f"{key}={','.join(_override_text(v) for v in values)}"
        message += f": {key} takes one value; a run per value is a sweep (`t3rl run -m … {sweep}`)"
    return Problem(key, message, source, fix or SEE_THE_FIELD)


def _field_at(key: str, root: Mapping[str, Any]) -> Any:
    parent, _, leaf = key.rpartition(".")
    model = model_at(parent, root)
    return model.model_fields.get(leaf) if model is not None else None


def _validates(field: Any, value: Any) -> bool:
    """Whether `value` passes `field`'s type and validators here and now: a validator may read this
    machine (the interpreter's prefix under a hidden path), so a default is no fix until it is tried. A
    field that cannot be tried alone (a validator reading its model's other fields) counts as passing."""
    from pydantic import TypeAdapter  # lazy: an error's path

    annotation = Annotated[field.annotation, *field.metadata] if field.metadata else field.annotation
    try:
        TypeAdapter(annotation).validate_python(value)
    except ValidationError:
        return False
    except Exception:  # not triable outside its model (info.data): as before, the default is proposed
        return True
    return True


def _words_as_items(typed: Any, key: str, root: Mapping[str, Any]) -> str | None:
    """The list at the item's key with the item's words as items of their own, as override text, when the
    item holds several words and that list validates; None otherwise."""
    listed = _list_of(key)
    field, items = _field_at(listed, root), value_at(root, listed)
    words = typed.split() if isinstance(typed, str) else []
    if listed == key or field is None or not isinstance(items, list) or len(words) < 2:
        return None
    index = int(key.rpartition(".")[2])
    if index >= len(items) or not all(isinstance(v, str) for v in items):
        return None
    split = [*items[:index], *words, *items[index + 1 :]]
    return "[" + ",".join(quoted(v) for v in split) + "]" if _validates(field, split) else None


def _without_refused_items(key: str, root: Mapping[str, Any]) -> str | None:
    """The list at `key` without the items its field refuses, as override text, when that validates."""
    field, items = _field_at(key, root), value_at(root, key)
    if field is None or not isinstance(items, list):
        return None
    if not all(isinstance(v, str | int | float) for v in items):
        return None
    kept = [v for v in items if _validates(field, [v])]
    if len(kept) == len(items) or not _validates(field, kept):
        return None
    return "[" + ",".join(quoted(_as_written(v)) if isinstance(v, str) else str(v) for v in kept) + "]"


def _as_written(text: str) -> str:
    """A path below the home as a config writes it (`~/.ssh`): the config holds it expanded (expand_home),
    and the same list in its expanded form reads differently to the credential scan of lists."""
    home = os.path.expanduser("~")
    return "~" + text[len(home) :] if home != "/" and text.startswith(home + "/") else text


def default_of(key: str, root: Mapping[str, Any]) -> str | None:
    """The schema default of `key` as override text, when it has one that validates here."""
    # lazy: the docs reader, only when a fix names a field's default
    from launch.config.field_docs import schema_default

    parent, _, leaf = key.rpartition(".")
    grandparent, _, section = parent.rpartition(".")
    if (model_at(grandparent, root), section) in OVERLAYS:
        return None  # a stage's overlay (`stages.sft.hardware`) left unset takes the root's value, not this
    model = model_at(parent, root)
    field = model.model_fields.get(leaf) if model is not None else None
    found, value = schema_default(field) if field is not None else (False, None)
    if not found or not _validates(field, value):
        return None
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return quoted(value)  # `<|im_end|>` unquoted is no override Hydra parses
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        return "[" + ",".join(map(str, value)) + "]"
    return json.dumps(value) if isinstance(value, dict) and not value else None


_TYPE_FIXES = {
    "string_type": "quote it so it stays a string: {key}='{value}'",
    "int_parsing": "give a whole number",
    "int_type": "give a whole number",
    "int_from_float": "give a whole number",
    "float_parsing": "give a number",
    "finite_number": "give a finite number",
    "bool_parsing": "give true or false",
    "list_type": "give a list, e.g. {key}=[a,b]",
    "dict_type": "give a mapping: its keys one by one, {key}.<key>=…",
    # a section given a value by a config file (`data: 5`): no override gives a file's section its keys back
    "model_type": "give a mapping: its keys one by one, {key}.<key>=…",
}


def _as_fraction(item: Any, key: str) -> str | None:
    """A value over a fraction's bound of 1 that reads as a percentage (`top_p=95`, `eps_clip=20`): the
    fraction it says, as the fix."""
    bound = next((item.get("ctx", {}).get(b) for b in ("le", "lt") if b in item.get("ctx", {})), None)
    value = item.get("input")
    # from 2: a value just over 1 (top_p=1.5) is no percentage anyone types
    if bound != 1 or isinstance(value, bool) or not isinstance(value, int | float) or not 2 <= value <= 100:
        return None
    return f"set {key}={value / 100:g} ({AS_FRACTION}{value:g} % is {value / 100:g})"


def _percent_text(item: Any, key: str, root: Mapping[str, Any]) -> str | None:
    """A fraction typed as a percentage with its sign (`sglang_mem_fraction=85%`): the fraction it says, as
    the fix (was: the key's old value), for a field whose domain ends at 1."""
    typed = (
        re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", str(item.get("input")))
        if item["type"] == "float_parsing"
        else None
    )
    parent, _, leaf = key.rpartition(".")
    model = model_at(parent, root) if typed else None
    field = model.model_fields.get(leaf) if model is not None else None
    bounds = [getattr(m, b, None) for m in (field.metadata if field else ()) for b in ("le", "lt")]
    if typed is None or 1 not in bounds:
        return None
    value = float(typed[1])
    return (
        f"set {key}={value / 100:g} ({AS_FRACTION}{value:g} % is {value / 100:g})" if value <= 100 else None
    )


def _one_item_inside(item: Any, key: str, root: Mapping[str, Any]) -> str | None:
    """One value typed in brackets for a field that holds one (`seed=[3]`; `seed=(3)`, `(3,)`, `{3}`, which
    Hydra's grammar reads only quoted, `'(3)'`): the item inside, when the field takes it (was: the key's
    old value, what was typed dropped). The field's declared type decides, not the brackets."""
    typed = item.get("input")
    if isinstance(typed, list) and len(typed) == 1:
        inside, brackets = typed[0], "[ ]"
    elif isinstance(typed, str) and typed[:1] in BRACKETS and typed[-1:] == BRACKETS[typed[0]]:
        items = [e.strip() for e in typed[1:-1].split(",") if e.strip()]  # a stray ',' dropped: `(3,)`
        inside, brackets = (items[0] if len(items) == 1 else None), f"{typed[0]} {typed[-1]}"
    else:
        return None
    field = _field_at(key, root)
    if inside is None or isinstance(inside, list | dict) or field is None or not _validates(field, inside):
        return None
    text = _override_text(inside)
    return f"set {assign(root, key, text)} ({AS_TYPED}: the one item in {brackets}; {key} holds one value)"


def _one_item_list(item: Any, key: str, root: Mapping[str, Any]) -> str | None:
    """A list given one of its items alone (`eval.categories=multi_turn_base`, `env.domains=retail`,
    `eval.pass_k=4`): a list of it alone, when the list's items take it (text, a choice it is, a number)."""

    def arms(tp: Any) -> list[Any]:  # the types a field may hold, Optional and Annotated unwrapped
        if get_origin(tp) is Annotated:
            return arms(get_args(tp)[0])
        if get_origin(tp) is Union or type(tp).__name__ == "UnionType":
            return [a for arg in get_args(tp) for a in arms(arg)]
        return [tp]

    value, (parent, _, leaf) = item.get("input"), key.rpartition(".")
    model = model_at(parent, root)
    field = model.model_fields.get(leaf) if model is not None else None
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if field is None or not (isinstance(value, str) or number):
        return None
    items = [i for arm in arms(field.annotation) if get_origin(arm) is list for i in arms(get_args(arm)[0])]
    if number and not any(i in (int, float) and isinstance(value, i) for i in items):
        return None  # `eval.pass_k=4`: a list of it, [4] (a float is no item of a list of ints)
    if not number and not any(i is str or (get_origin(i) is Literal and value in get_args(i)) for i in items):
        return None
    item = str(value) if number else quoted(value)
    return f"set {assign(root, key, '[' + item + ']')} ({AS_TYPED}: a list of it alone)"


def _bounds_fix(item: Any, key: str) -> str:
    ctx = item.get("ctx", {})
    for bound, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if bound in ctx:
            return f"set {key} {word} {ctx[bound]}"
    template = _TYPE_FIXES.get(item["type"])
    return template.format(key=key, value=item.get("input")) if template else ""


_INVERSE = {">=": "<=", ">": "<", "<=": ">=", "<": ">", "!=": "!="}


def _out_of_order(
    cause: OutOfOrder, key: str, value: Any, provenance: Provenance, root: Mapping[str, Any]
) -> Problem:
    """Two fields out of their declared order: blame the one set last (the later-named on a tie) and
    move it back into order, to its default when that fits."""
    other = _join(key.rpartition(".")[0], cause.other)
    values = {key: value, other: cause.other_value}
    blamed = max((key, other), key=provenance.order)
    partner = other if blamed == key else key
    relation = cause.relation if blamed == key else _INVERSE[cause.relation]
    default = default_of(blamed, root)
    if _number(default) is not None and HOLDS[relation](_number(default), values[partner]):
        fix = f"set {assign(root, blamed, default)} (its default)"
    elif relation == "!=":  # two names of one thing: the default when it is another, else the other's
        fix = (
            f"set {assign(root, blamed, default)} (its default)"
            if default is not None and default != str(values[partner])
            else f"set {blamed} to another value than {partner}'s"
        )
    elif "=" in relation:
        fix = f"set {assign(root, blamed, values[partner])}"
    else:
        fix = f"set {blamed} {relation} {values[partner]}"
    name, partner_name = blamed.rpartition(".")[2], partner.rpartition(".")[2]
    verb = "differ from" if relation == "!=" else f"be {relation}"
    message = f"{name} {values[blamed]} must {verb} {partner_name} {values[partner]}"
    return Problem(blamed, message, provenance.source(blamed), fix)


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None


def _assignment(root: Mapping[str, Any], key: str, value: Any) -> str:
    """`key=value` as an override; for a list item, the whole list with the item replaced."""
    parent, _, index = key.rpartition(".")
    items = value_at(root, parent) if index.isdigit() else None
    if isinstance(items, list) and int(index) < len(items):
        return assign(root, parent, _override_text([*items[: int(index)], value, *items[int(index) + 1 :]]))
    return assign(root, key, _override_text(value))


def _list_of(key: str) -> str:
    """The key of the list a list item's key names (the key itself otherwise)."""
    parent, _, index = key.rpartition(".")
    return parent if index.isdigit() else key


def _nearest_path_fix(key: str, value: Any, root: Mapping[str, Any]) -> str | None:
    """`++trackng.project.name=x`: the key path nearest the one typed, as a whole, that takes its value."""
    from launch.config.misplaced_keys import typed_leaves  # lazy: an error's path
    from launch.config.nearest_paths import nearest_path  # lazy: likewise

    leaves = typed_leaves(key, value)
    if len(leaves) != 1:
        return None
    typed, typed_value = leaves[0]
    near = nearest_path(typed, typed_value, root, key)
    return f"did you mean {near}? {assign(root, near, _override_text(typed_value))}" if near else None


def _typed_value(key: str, value: Any, source: str) -> Any:
    """`value` as its override typed it (`+lr=2e-6`, which pydantic holds as 2e-06), else `value`."""
    from launch.config.override_fixes import typed_override  # lazy: an error's path

    typed = typed_override(key, source)
    return typed[1] if typed else value


def _override_text(value: Any) -> str:
    """A value as it would be written in an override."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list):  # an item Hydra's grammar would read otherwise (`--qos=high`) quoted
        return "[" + ",".join(quoted(v) if isinstance(v, str) else _override_text(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_override_text(v)}" for k, v in value.items()) + "}"
    return str(value)


def _config_key(loc: tuple[Any, ...], data: Mapping[str, Any]) -> str:
    """pydantic's location without the union tags it inserts (e.g. stages.train.<train>.curriculum)."""
    parts: list[str] = []
    node: Any = data
    at_value = False  # the location reached a value the config holds (not a section)
    for index, element in enumerate(loc):
        after = loc[index + 1] if index + 1 < len(loc) else None
        if at_value and isinstance(element, str):
            continue  # past the value: a union arm's label (`function-after[check(), str]`, `literal['']`)
        # A tag that is also a key of its node (an eval stage's `eval` overrides): a tag when the next
        # element is the node's own key, also when that key's holds one of that name too (pydantic puts
        # the tag first, so an error inside the key comes as `eval, eval, …`): `limit_per_category`
        # typed on the stage beside its `eval` was read as the eval's own, blamed on the experiment.
        if _has(node, element) and not (
            isinstance(node, Mapping)
            and element in (node.get("kind"), node.get("name"))
            and after is not None
            and _has(node, after)
        ):
            node = node[element]
            at_value = not isinstance(node, Mapping)
        elif isinstance(node, Mapping) and not isinstance(element, int) and _is_tag(element, node):
            continue
        else:
            node = None
        parts.append(str(element))
    return ".".join(parts)


def _has(node: Any, element: Any) -> bool:
    if isinstance(node, Mapping):
        return element in node
    return isinstance(node, list) and isinstance(element, int) and element < len(node)


def _is_tag(element: Any, node: Mapping[str, Any]) -> bool:
    text = str(element)
    return (
        element in (node.get("kind"), node.get("name"))
        or text.startswith(("function-", "constrained-"))
        or "[" in text
    )


def _join(parent: str, leaf: str | None) -> str:
    return f"{parent}.{leaf}" if parent and leaf else (leaf or parent)


def _group_choice(name: str, value: object, keys: list[str]) -> str | None:
    # lazy: Hydra's config loader, only to explain an unknown top-level key
    from launch.config.compose import group_choice

    return group_choice(name, value, keys)


def _swapped_after(key: str, provenance: Provenance) -> str | None:
    """The group option typed on the command line (`env=bfcl_multi_turn`) that chose the kind of a section
    holding `key` after `key` was set (tau2_pipeline's `env.user`, retool's `env.data.source`)."""
    parts = key.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        named = ".".join([*parts[:depth], "name"])
        origin = provenance.origin(named) if provenance.sets(named) else None
        if origin and origin.chosen_on_line and origin.order > provenance.order(key):
            return origin.chosen_on_line
    return None


def other_kinds_fix(parent: str, leaf: str, root: Mapping[str, Any], source: str) -> str | None:
    """`env.user` set for an env kind that has no such field while another kind has it."""
    from launch.config.section_kinds import other_kinds_fix as fix  # lazy: only to explain a mistake

    return fix(parent, leaf, root, source, _option_kinds)


def _option_kinds(group: str) -> dict[str, str]:
    # lazy: Hydra, only where another kind has the key (a key refused without Hydra asks this first)
    from launch.config.compose import option_kinds

    return option_kinds(group)


# The machine's integers (numpy's, torch's, a C extension's int64): a whole number past them overflows.
INT64 = range(-(2**63), 2**63)


def numbers_misread(
    raw: Any, validated: Any, prefix: str = "", *, free: bool = False
) -> Iterator[tuple[str, Any, Any]]:
    """(key, the value as written, the number validated) of each number the validated config holds
    that is no machine number as written: a boolean pydantic's lax mode took as 1 or 0 (`seed=true`,
    `temperature: off`), a whole number past int64 in any spelling (`2**63`, quoted, an interpolation's
    text), a nonzero float that float32 holds as 0 or a subnormal (`1e-300`: fields.FLOAT32_TINY). The
    schema judges values, not their spelling; the number's domain includes both. A key whose validated
    value is still raw (a stage's overlay) is judged where the overlay is validated (`free`: below a
    field typed Any, whose floats are not yet a field's)."""
    if isinstance(raw, dict):
        fields = type(validated).model_fields if isinstance(validated, BaseModel) else None
        for k, v in raw.items():
            child = validated.get(k) if isinstance(validated, dict) else getattr(validated, str(k), None)
            below = free or (fields is not None and k in fields and _holds_any(fields[k].annotation))
            yield from numbers_misread(v, child, f"{prefix}.{k}" if prefix else str(k), free=below)
    elif isinstance(raw, list):
        items = validated if isinstance(validated, list | tuple) else ()
        for i, v in enumerate(raw):
            yield from numbers_misread(v, items[i] if i < len(items) else None, f"{prefix}.{i}", free=free)
    elif (
        (type(validated) in (int, float) and type(raw) is bool)
        or (type(validated) is int and validated not in INT64)
        or (not free and type(validated) is float and 0 < abs(validated) < FLOAT32_TINY)
    ):
        yield prefix, raw, validated


def _holds_any(annotation: Any) -> bool:
    """A field whose values are left as written (Any, or a mapping to Any: a stage's overlay)."""
    return annotation is Any or (get_origin(annotation) is dict and get_args(annotation)[1:] == (Any,))
