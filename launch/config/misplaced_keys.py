"""Where a key typed at the wrong place lives: `lr=1e-6`, `train.lr=1e-6` or `optimizer.lr=…` name a
setting the composed config holds at `stages.train.curriculum.optimizer.lr`.

The composed config is the declaration of where each setting lives, so the fix is found there: every
key of it whose path ends with what was typed after the unknown part (the longest such ending first),
the ones sharing more of the typed names ranked first (`train.lr` → the stage called `train`). A
misspelt name offered instead (`train` → `tracking`) is kept only when what was typed under it is a
key there too: `+tracking.lr=…` would only be refused again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import BaseModel

from launch.config.errors import did_you_mean
from launch.config.fixes import assign, quoted, typed_text, value_at
from launch.config.gpu_totals import total_gpus_fix
from launch.config.guess_values import takes
from launch.config.misspelt_secrets import reference_fix
from launch.config.other_entries import as_read, other_entries_fix
from launch.config.schema_walk import OVERLAYS, field_names, model_at
from launch.config.secrets import is_secret_key
from launch.config.slime_flags import owner_of_name

# A key's place is listed when one of this many or fewer places holds it; more is a name every section
# has (`name`, `kind`), where listing places teaches nothing.
_MOST_PLACES = 4
# difflib's ratio from which two names are one misspelt (`seeed`/`seed` 0.89, `temprature` 0.95;
# `n_samples`/`name` 0.62 is another setting).
_NEARLY_ALIKE = 0.8


def typed_leaves(key: str, value: Any) -> list[tuple[str, Any]]:
    """The dotted keys and values an unknown `key` brought: pydantic reports `train` with the value
    `{'lr': 1e-06}` for the override `train.lr=1e-6`."""
    if isinstance(value, Mapping) and value:
        return [leaf for name, item in value.items() for leaf in typed_leaves(f"{key}.{name}", item)]
    return [(key, value)]


def places(typed: str, root: Mapping[str, Any]) -> list[str]:
    """Keys of `root` (the composed config) that `typed` most likely meant, best first; [] when none
    ends with its last name or too many do."""
    parts = typed.split(".")
    # Hydra's own node (a search's settings) holds no setting of a run.
    leaves = [*_leaf_keys(root, ""), *_default_leaves(root)]
    keys = [key for key in leaves if key != typed and not key.startswith("hydra.")]
    found: list[str] = []
    for start in range(len(parts)):
        # The longest typed ending first: `optimizer.lr` before `lr`.
        ending = parts[start:]
        found = [key for key in keys if key.split(".")[-len(ending) :] == ending]
        if found:
            break
    if not found:
        found = _free_form_places(parts, root)
    if not found or len(found) > _MOST_PLACES:
        return []
    named = set(parts[:-1])
    return sorted(found, key=lambda key: (-len(named & set(key.split("."))), len(key), key))


def _free_form_places(parts: list[str], root: Mapping[str, Any]) -> list[str]:
    """`env_vars.FOO` → `hardware.env_vars.FOO`: a new key typed under the name of a section that takes
    any key (a mapping no model declares) lives in that section, wherever the config holds it; the
    longest typed section path first."""
    sections = [key for key in _section_keys(root, "") if not key.startswith("hydra.")]
    for end in range(len(parts) - 1, 0, -1):
        typed, rest = parts[:end], parts[end:]
        found = [
            f"{key}.{'.'.join(rest)}"
            for key in sections
            if key.split(".")[-end:] == typed and key != ".".join(typed) and not field_names(key, root)
        ]
        if found:
            return found
    return []


def _leaf_keys(node: Any, prefix: str) -> Iterator[str]:
    if isinstance(node, Mapping) and node:
        for name, item in node.items():
            yield from _leaf_keys(item, f"{prefix}.{name}" if prefix else str(name))
    elif prefix:
        yield prefix


def _default_leaves(root: Mapping[str, Any]) -> Iterator[str]:
    """The keys the schema gives a default no file set (`eval.published.tolerance.margin`): a setting lives
    there too (set with '+')."""
    for section in ("", *_section_keys(root, "")):
        model, node = model_at(section, root), value_at(root, section) if section else root
        parent, _, name = section.rpartition(".")
        if model is None or not isinstance(node, Mapping) or (model_at(parent, root), name) in OVERLAYS:
            continue  # an overlay's (a stage's hardware) missing keys are the root section's, not defaults
        for name, field in model.model_fields.items():
            key = f"{section}.{name}" if section else name
            if name in node:
                continue
            default = field.get_default(call_default_factory=True)
            if isinstance(default, BaseModel):
                yield from _leaf_keys(default.model_dump(mode="json"), key)
            elif not isinstance(default, Mapping):
                yield key


def _section_keys(node: Mapping[str, Any], prefix: str) -> Iterator[str]:
    for name, item in node.items():
        if isinstance(item, Mapping):
            key = f"{prefix}.{name}" if prefix else str(name)
            yield key
            yield from _section_keys(item, key)


def key_fits(key: str, root: Mapping[str, Any]) -> bool:
    """Whether each name of the dotted `key` is a field where it stands (a free-form section takes any)."""
    parts = key.split(".")
    for depth, part in enumerate(parts):
        known = field_names(".".join(parts[:depth]), root)
        if known and part not in known:
            return False
        if not known and depth and _holds_a_value(value_at(root, ".".join(parts[:depth]))):
            return False  # `tracking.project.name`: a text, a number holds no keys below it
    return True


def _holds_a_value(node: Any) -> bool:
    return node is not None and not isinstance(node, Mapping | BaseModel)


def fits(target: str, value: Any, root: Mapping[str, Any]) -> bool:
    """Whether every key typed under an unknown name, put under `target` instead, is a field there."""
    return all(key_fits(key, root) for key, _ in typed_leaves(target, value))


def misplaced_fix(
    key: str,
    value: Any,
    root: Mapping[str, Any],
    guess: tuple[str, str] | None = None,
    parent: str = "",
    written_in: str | None = None,
) -> str | None:
    """The fix for an unknown `key` carrying `value` whose setting lives elsewhere, or None. `guess`:
    (the unknown name, the sibling name offered for it): a setting elsewhere spelt as typed comes first;
    a name elsewhere merely alike only when the sibling is not spelt nearly alike either (`n_samples`:
    `n_samples_per_prompt`, not the top-level `name`); slime's name of a flag t3rl writes from a key
    (`use_dynamic_batch_size`) comes before a guess. `parent`: the known section the unknown name was
    typed under; the same name under a section of that name elsewhere is the same unknown key
    (`+stages.train.env.nosuch=1`, judged as `env.nosuch`, is no place of its own). `written_in`: the
    config file that holds `key`, where it is moved (an override beside it would leave it there, and
    be refused again)."""
    leaves = typed_leaves(key, value)
    if len(leaves) != 1:
        return None
    typed, typed_value = leaves[0]
    total = total_gpus_fix(typed, typed_value, root)
    if total is not None:  # `hardware.num_gpus=8`: the product the section declares, split as it does
        return total
    short = _abbreviated(typed, root)
    if short is not None and not takes(short, typed_value, root):
        from launch.config.guess_domains import refused_guess_fix  # lazy: only a value the field refuses

        # `executor.time=25:00:00:00`: a text kind refusing text is the setting in another form
        refused = refused_guess_fix(short, typed_value, root) if written_in is None else None
        if refused is not None:
            return refused
        short = None  # a fix must validate when applied: the abbreviated field refuses the value
    if short is not None:  # `hardware.tp`: its own section's tensor_parallel, not eval.server's tp
        if written_in is not None:
            section, _, name = key.rpartition(".")
            at = f" (under {section})" if section else ""
            renamed = short.rpartition(".")[2]
            return f"did you mean '{short}'? in {written_in}, rename `{name}:` to `{renamed}:`{at}"
        return f"did you mean '{short}'? e.g. {assign(root, short, typed_text(typed_value))}"
    found = [
        place
        for place in places(typed, root)
        if not _same_key(place, typed, parent)
        and not _another_entry_of_the_stage(place, typed, root)
        and takes(place, typed_value, root)
    ]
    other = other_entries_fix(typed, root)
    if other is not None and not [p for p in found if p.split(".")[-2:] == typed.split(".")[-2:]]:
        return other  # another entry's field: a place of that last name in another section is another setting
    flag = owner_of_name(typed.rpartition(".")[2], root, typed)
    if found:
        lead = "set it where it lives:"
    elif flag is not None and flag != typed:  # slime's name for it: the table says which key, no guess
        found, lead = [flag], f"set the key t3rl writes --{typed.rpartition('.')[2].replace('_', '-')} from:"
    elif guess and _alike(*guess):
        return None
    else:  # `batch_size` for `global_batch_size`: the closest name a key of the config ends with
        head, _, last = typed.rpartition(".")
        near = _closest_name(last, {leaf.rpartition(".")[2] for leaf in _leaf_keys(root, "")})
        found = places(f"{head}.{near}" if head else str(near), root) if near else []
        found = [p for p in found if not _same_key(p, typed, parent) and takes(p, typed_value, root)]
        lead = f"did you mean {found[0]}?" if found else ""
    if not found:
        return None
    if is_secret_key(found[0]):  # the value may be the credential itself: the reference form instead
        return f"{lead} {reference_fix(found[0])}"
    also = f" (also at {', '.join(found[1:])})" if found[1:] else ""
    if written_in is not None:
        section, _, name = key.rpartition(".")
        at = f" under {section}" if section else " at the top level"
        return (
            f"{lead} in {written_in}, delete `{name}:`{at} and set {found[0]}: "
            f"{typed_text(typed_value)} instead{also}"
        )
    shown = typed_text(typed_value)
    if isinstance(typed_value, str):  # a text Hydra's grammar does not read unquoted (`--flag=0`) is quoted
        from launch.config.pasted_overrides import parses  # lazy: Hydra's parser, on an error's path only

        shown = shown if parses(f"{found[0]}={shown}") else quoted(shown)
    return f"{lead} {assign(root, found[0], shown)}{also}"


def _abbreviated(typed: str, root: Mapping[str, Any]) -> str | None:
    """The one field of `typed`'s own section that `typed`'s last name abbreviates, by its words' initials
    (`tp` tensor_parallel, `lpc` limit_per_category) or by some of its words (`limit` limit_per_category,
    not the nearer-spelt `split`), or None. Found first: a
    place of that name in another section (`eval.server.tp`, SGLang's word) is another setting, and
    moving the value there validated with the training's TP unchanged."""
    section, _, last = typed.rpartition(".")
    if not section or len(last) < 2 or not last.replace("_", "").isalpha():
        return None
    words = last.lower().split("_")
    # `tp_size`, `num_rollouts`: a word other frameworks add to a name says nothing of which setting
    core = [w for w in words if w not in _COUNTING_WORDS] or words
    meant = [
        f
        for f in field_names(section, root)
        if f != last
        and (
            ("_" in f and _initials(f.split("_")) in (last.lower(), "".join(core)))
            or ("_" in f and set(words) < set(f.split("_")))
            or (len(words) > 1 and f == _initials(words))  # `learning_rate` for `lr`
        )
    ]
    return f"{section}.{meant[0]}" if len(meant) == 1 else None


# Words a setting's name carries in other frameworks (Megatron's `tensor_model_parallel_size`, verl's
# `tp_size`) that name no setting of their own.
_COUNTING_WORDS = frozenset({"size", "num", "count", "n"})


def _initials(words: list[str]) -> str:
    return "".join(w[:1] for w in words)


def _another_entry_of_the_stage(place: str, key: str, root: Mapping[str, Any]) -> bool:
    """`place` is the root eval key a stage's eval overlay `key` stands for, but the stage chose another
    entry there (quickstart's eval_tiny runs the HF engine: the root SGLang engine's url is not its); or
    the same key of a sibling stage (eval_tiny's HF `device` is not eval_reference's)."""
    stage, sibling = key.split(".")[:2], place.split(".")[:2]
    if stage[0] == sibling[0] == "stages" and stage != sibling:
        return True
    section = key.rpartition(".")[0]
    ours, theirs = value_at(root, f"{section}.name"), value_at(root, f"{as_read(section)}.name")
    return place == as_read(key) != key and isinstance(ours, str) and ours != theirs


def _same_key(place: str, key: str, parent: str) -> bool:
    return bool(parent) and (place == key or place.endswith(f".{key}"))


def _alike(typed: str, name: str) -> bool:
    """`name` holds every word of `typed`, or is spelt nearly alike (a typo)."""
    import difflib  # lazy: asked only once something is misspelt

    words = set(typed.lower().split("_"))
    close = difflib.SequenceMatcher(None, typed.lower(), name.lower()).ratio() >= _NEARLY_ALIKE
    return words <= set(name.lower().split("_")) or close


def _closest_name(typed: str, names: set[str]) -> str | None:
    """The name holding every word of `typed` (`batch_size` → `global_batch_size`), else one spelt
    nearly alike: a name merely alike (`learning_rate`, `reasoning_parser`) is another setting."""
    words = set(typed.lower().split("_"))
    holding = sorted(name for name in names if words <= set(name.lower().split("_")))
    if holding:
        return did_you_mean(typed, holding) or min(holding, key=len)
    close = [name for name in sorted(names) if _alike(typed, name)]
    return did_you_mean(typed, close) if close else None
