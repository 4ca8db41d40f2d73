"""An override refused for its key: one the composed config lacks (`env.max_steps=5`, a field left at its
default), or has where '+' adds (`+seed=3`).

Worded from the plain composed config and where the key meets it, so that Hydra's composition
(`launch.config.compose`, which finds that place with OmegaConf) and the direct one
(`launch.config.direct.refusals`, without Hydra: the commonest mistake composed with Hydra cost twice a
valid line) give the same Problem.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from typing import Any

from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import assign
from launch.config.override_fixes import shell_word

# (name, value, keys) -> the override choosing the config group a misspelt top-level name meant, or None
# (`launch.config.compose.group_choice`).
GroupChoice = Callable[[str, object, Collection[str]], str | None]
# group -> each option's kind: the registry name its file sets, else the option (`launch.config.compose.
# option_kinds`, with Hydra, or `launch.config.direct.search_files.option_kinds`, without)
OptionKinds = Callable[[str], dict[str, str]]


def added_again(key: str, text: str) -> Problem:
    """`+key=value` for a key the config has."""
    return Problem(
        key=key,
        message=f"'{key}' already exists, so it cannot be added with '+'",
        source=f"override `{text}`",
        fix=f"drop the '+': {text[1:]}",
    )


def unknown_key(
    key: str,
    text: str,
    value: Any,
    parent: str,
    node_keys: Iterable[str],
    composed: dict[str, Any],
    group_choice: GroupChoice,
    option_kinds: OptionKinds,
) -> Problem:
    """`text` sets `key`, whose first level missing from the config is the one under `parent` (a mapping
    holding `node_keys`); `composed`: the config as composed so far, interpolations unresolved."""
    from launch.config.group_names import group_choice_fix  # lazy: only to explain a mistake
    from launch.config.guess_values import takes  # lazy: likewise
    from launch.config.misplaced_keys import key_fits, misplaced_fix  # lazy: likewise
    from launch.config.misspelt_secrets import unknown_key_fix  # lazy: likewise
    from launch.config.schema_walk import field_names  # lazy: the schema (pydantic), likewise

    leaf, _, rest = key[len(parent) + 1 if parent else 0 :].partition(".")
    below = f".{rest}" if rest else ""  # the rest of the key, under that level
    value_text = text.split("=", 1)[1] if "=" in text else "..."
    known = set(node_keys) | set(field_names(parent, composed))
    group = None if parent or below else group_choice(leaf, value, known)
    guess = did_you_mean(leaf, known)
    if guess == leaf and below and not key_fits(key, composed):
        # `stages.eval.eval.engine.model_path`: the section is a field here, the key below is not one
        # of the section the stage reads (an HF engine's under the SGLang engine)
        from launch.config.other_entries import other_entries_fix  # lazy: only to explain a mistake

        inner = _join(parent, leaf) + below
        other = other_entries_fix(inner, composed)
        if other is not None:
            return Problem(
                key=key,
                message=f"unknown key '{inner.rpartition('.')[2]}' under '{inner.rpartition('.')[0]}'",
                source=f"override `{text}`",
                fix=f"drop `{text}` ({other.partition(' (')[2]}",
            )
    if guess and not key_fits(_join(parent, guess) + below, composed):
        guess = None  # `train.lr` → `tracking.lr` would only be refused again
    elif guess and guess != leaf and not below and not takes(_join(parent, guess), value, composed):
        from launch.config.guess_domains import refused_guess_fix  # lazy: likewise

        # `executor.time=25:00:00:00`: a text kind refusing text is the setting in another form
        refused = refused_guess_fix(_join(parent, guess), value, composed)
        if refused:
            where = f"under '{parent}'" if parent else "at the top level"
            return Problem(key, f"unknown key '{leaf}' {where}", f"override `{text}`", refused)
        guess = None  # `micro_batch_size=2` → `dynamic_batch=2`: the switch refuses the count
    where = f"under '{parent}'" if parent else "at the top level"
    # Before the Problem is made: its source quotes the value, masked if it is a credential.
    secret_fix = unknown_key_fix(key, value_text, _join(parent, guess) if guess else None)
    if group or secret_fix:
        fix = group_choice_fix(group) if group else f"did you mean '{_join(parent, guess)}'? {secret_fix}"
        return Problem(key=key, message=f"unknown key '{leaf}' {where}", source=f"override `{text}`", fix=fix)
    if not guess and parent:
        from launch.config.section_kinds import other_kinds_fix  # lazy: only to explain a mistake

        # `executor.partition` under the local executor, `env.user.…` under BFCL: a key of another
        # kind of the section is that kind's to choose, not a key of the same name elsewhere
        other = other_kinds_fix(parent, leaf, composed, f"override `{text}`", option_kinds)
        if other is not None:
            return Problem(
                key=key, message=f"unknown key '{leaf}' {where}", source=f"override `{text}`", fix=other
            )
    # Under a mapping of entries the user names (services) the key is a new entry, not a misplaced one.
    placed = (
        misplaced_fix(key, value_text, composed, (leaf, guess) if guess else None, parent) if known else None
    )
    if guess == leaf:  # a schema field this composition leaves at its default: add it
        return Problem(
            key=key,
            message=f"'{leaf}' is a field {where} that this config does not set",
            source=f"override `{text}`",
            fix=f"add it with '+': {shell_word(f'+{key}={value_text}')}",
        )
    fix = (
        placed
        if placed
        else f"did you mean '{_join(parent, guess)}{below}'? e.g. "
        + assign(composed, _join(parent, guess) + below, value_text)
        if guess
        else (
            _nearest_path_fix(key, value, composed, _join(parent, leaf))
            or f"known keys {where}: {', '.join(sorted(known))}"
        )
        if known
        # a mapping of entries the user names (services): nothing to guess from, an entry to add
        else f"'{parent}' holds entries you name, none set here: add one with '+': "
        f"+{key}={value_text} (its fields: t3rl show --explain {parent})"
    )
    return Problem(key=key, message=f"unknown key '{leaf}' {where}", source=f"override `{text}`", fix=fix)


def _nearest_path_fix(key: str, value: Any, composed: dict[str, Any], unknown: str) -> str | None:
    """`trackng.project.name=x`: the key path nearest the one typed, as a whole, that takes its value."""
    from launch.config.nearest_paths import nearest_path  # lazy: only to explain a mistake

    near = nearest_path(key, value, composed, unknown)
    return f"did you mean {near}? {assign(composed, near, shell_word(str(value)))}" if near else None


def _join(parent: str, leaf: str | None) -> str:
    return f"{parent}.{leaf}" if parent else str(leaf)
