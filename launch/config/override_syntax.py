"""Command-line overrides Hydra cannot parse, read as what the user meant: each gets the corrected override.

Hydra reports the first token its grammar rejects ("missing EQUAL at ':'"); the mistake behind it is
usually one of a few: a colon for '=', a space the shell split an override at (`key= value`, `key =value`,
`name=a b` whose quotes the shell removed, a list `[1, 2]`), an unclosed list or quote, a `--flag` given
to the command as if it were a config key, or a config option named without its group. Each is read
from the arguments as typed (the neighbours of the token Hydra rejects) and answered with one Problem
whose fix is the override to type instead, quoted for the shell where it has to be.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException

from launch.config.command_line import (
    COMMAND_OPTIONS,
    COMMANDS,
    COMMANDS_WITH,
    HELP_NEAR,
    HELP_OPTIONS,
    HELP_WORDS,
    ROOT_OPTIONS,
    RUNNING,
)
from launch.config.errors import AS_TYPED, BRACKETS, QUOTED_ONLY, VALUES_QUOTED, Problem, did_you_mean
from launch.config.fixes import quoted
from launch.config.optional_groups import OPTIONAL_GROUPS
from launch.config.override_fixes import shell_word
from launch.config.pasted_overrides import only_typographic_quotes, parses, pasted_fix
from t3rl_core.counts import agreeing, counted

# Hydra's words when a function of its grammar (choice, range, int, glob, tag, …) refused its arguments.
_CALLED = re.compile(r"\w+ while evaluating '(\w+\(.*\))'")
GENERIC_FIX = (
    "write overrides as key=value, +key=value (add), ~key (delete) or group=option; "
    "quote values with spaces or brackets for the shell"
)
# Characters besides ASCII letters and digits that an unquoted value may hold without quotes mattering.
_PLAIN_VALUE = "_-./:+@%~$|?*"
# The characters of Hydra's override grammar itself.
_GRAMMAR = "()[]{},'\"=\\ "
_PLAN = ("t3rl plan", "`t3rl plan` shows every stage and its exact commands and runs nothing")
_RESUME = "t3rl runs (lists the run dirs; then t3rl run --run-dir DIR)"
# Where other commands (and other tools) take their output directory.
_OUTPUT_FLAGS = frozenset({"--out", "--output", "--output-dir", "--output_dir", "--outdir", "-o"})
# A config file given as an argument that lies in no group's directory.
_OUTSIDE_A_GROUP = (
    "put it in a group's directory, DIR/experiment/NAME.yaml, then: --config-dir DIR +experiment=NAME"
)
# Flags other launchers take for what a t3rl command does: the command, and why.
_OTHER_COMMANDS = {
    "--dry-run": _PLAN,
    "--dryrun": _PLAN,
    "-n": _PLAN,
    "--plan": _PLAN,
    "--check": ("t3rl validate", "`t3rl validate` runs every check and writes nothing"),
    "--validate": ("t3rl validate", "`t3rl validate` runs every check and writes nothing"),
    "--resume": (_RESUME, "`t3rl run --run-dir DIR` resumes the run in DIR (what finished is kept)"),
    "--continue": (_RESUME, "`t3rl run --run-dir DIR` resumes the run in DIR (what finished is kept)"),
}


@dataclass(frozen=True)
class ConfigLookup:
    """What reading a mistake needs from the configs (`launch.config.compose` gives it; this module is
    what compose parses with, so it cannot import compose)."""

    # The composed config of some overrides, as plain data; None when they do not compose.
    composed: Callable[[Sequence[str]], Mapping[str, Any] | None]
    # The override choosing a config option of this name (`+experiment=stage1_bfcl`), if one has it.
    choice_of: Callable[[str], str | None]
    # The override choosing the group a misspelt name meant (`--experimnt x` → `+experiment=x`), when a
    # group is nearer to it than the top-level keys given.
    group_choice: Callable[[str, object, Collection[str]], str | None]
    # The command's --config-dir values, for a fix that is a whole command line.
    config_dirs: tuple[str, ...] = ()


@dataclass(frozen=True)
class _Reading:
    """What some consecutive arguments meant: the override to type instead, and why."""

    # How many arguments, from the first one read, this reading covers.
    count: int
    key: str
    message: str
    # The corrected overrides (as argv items), or () when only words can help.
    fixed: tuple[str, ...] = ()
    # Said after the corrected override, or instead of it when there is none.
    note: str = ""


def syntax_problems(overrides: Sequence[str], lookup: ConfigLookup) -> list[Problem]:
    """One Problem per mistake among `overrides` (some of which Hydra cannot parse)."""
    reader = _Reader(list(overrides), lookup)
    problems = []
    i = 0
    while i < len(reader.items):
        reading = reader.read(i)
        if reading is None:
            i += 1
            continue
        typed = " ".join(reader.items[i : i + reading.count])
        fix = " ".join(shell_word(o) for o in reading.fixed)
        if reading.note:
            fix = f"{fix} ({reading.note})" if fix else reading.note
        problems.append(Problem(reading.key, reading.message, f"override `{typed}`", fix))
        i += reading.count
    return problems or [_hydra_problem(reader.items)]


class _Reader:
    """Reads the arguments from one index on: which mistake starts there, if any."""

    def __init__(self, items: list[str], lookup: ConfigLookup) -> None:
        self.items = items
        self.lookup = lookup

    @cached_property
    def keys(self) -> set[str]:
        """Every dotted key of the config the parseable arguments compose to (what a `--flag` names)."""
        data = self.lookup.composed([o for o in self.items if parses(o)])
        return set(_dotted(data, "")) if data is not None else set()

    def read(self, i: int) -> _Reading | None:
        item, following = self.items[i], self.items[i + 1 :]
        if item.startswith("-") and not parses(item):
            return self._dash_option(item, following)
        if _unbalanced(item):
            return self._unclosed(i)
        if parses(item):
            return self._split_value(item, following)
        if "=" not in item:
            return self._no_equals(item, following)
        key, _, value = item.partition("=")
        spaced = key.strip() != key or (value.strip() != value and bool(value.strip()))
        if _is_key(key.strip()) and spaced:
            # One quoted argument with spaces around '=' ("seed = 3"): the quotes kept them for Hydra.
            message = f"spaces around '=' in `{item}`: an override is key=value, with none"
            return _Reading(1, key.strip().lstrip("+~"), message, (f"{key.strip()}={value.strip()}",))
        return self._other_brackets(key, value) or self._unquoted_characters(key, value)

    def _other_brackets(self, key: str, value: str) -> _Reading | None:
        """A list typed in Python's tuple or set notation (`categories=(a,b)`, `={a}`), where the config
        holds a list: Hydra writes a list in [ ] (was: the value quoted, `'(a,b)'`, a text no list takes)."""
        inner = value[1:-1] if len(value) > 1 and (value[0], value[-1]) in (("(", ")"), ("{", "}")) else None
        name = key.lstrip("+~")
        if inner is None or ":" in inner or not _is_key(name):
            return None
        # a stray ',' dropped (a one-item tuple's `(a,)`), its items quoted where Hydra reads them as syntax
        listed = f"{key}=[{','.join(e.strip() for e in inner.split(',') if e.strip())}]"
        fixed = listed if parses(listed) else _values_quoted(listed)
        root = self.lookup.composed([o for o in self.items if parses(o)]) if fixed else None
        data = _at(root, name)
        for _ in range(8):  # what an interpolation names (`think_tags: ${model.parsers.think_tags}`)
            found = re.fullmatch(r"\$\{([\w.]+)\}", data) if isinstance(data, str) else None
            data = _at(root, found[1]) if found else data
        if fixed is None or not isinstance(data, list):
            return None  # not a list where it lands: the brackets meant something else
        brackets = f"{value[0]}{value[-1]}"
        message = f"`{key}={value}` writes a list in {brackets}, which Hydra's grammar does not read"
        return _Reading(1, name, message, (fixed,), note="a list is written in [ ]")

    def _unquoted_characters(self, key: str, value: str) -> _Reading | None:
        """A value with characters Hydra's grammar reads only inside quotes (`name=café`, `x=a&b`): the
        same value quoted, when that parses (was: `token recognition error at: 'é'` and the generic fix)."""
        as_text = quoted(value)
        if as_text == value and "'" not in value:  # plain to Python's \w (é is a letter), not to Hydra
            as_text = f"'{value}'"
        fixed = f"{key}={as_text}"
        # Only characters outside the grammar: its own (brackets, a function's parentheses, quotes) say
        # something else was meant (a list, a sweep, a function Hydra refused), answered elsewhere.
        odd = dict.fromkeys(
            c for c in value if not (c.isascii() and (c.isalnum() or c in _PLAIN_VALUE or c in _GRAMMAR))
        )
        if not odd or not _is_key(key.lstrip("+~")) or only_typographic_quotes(fixed) or not parses(fixed):
            return None
        if _lookalikes_fix(f"{key}={value}") is not None:
            return None  # a Cyrillic `е` in `qwеn3_8b` meant the ASCII name: quoting would keep it
        shown = " ".join(f"'{c}'" for c in list(odd)[:3])
        message = f"`{key}={value}` has {shown} in its value, {QUOTED_ONLY}"
        return _Reading(1, key.lstrip("+~"), message, (fixed,))

    def _split_value(self, item: str, following: list[str]) -> _Reading | None:
        """A valid override followed by the words the shell split off its value."""
        if item.endswith("=") and following and _bare(following[0]):
            key = item[:-1]
            return _Reading(
                2,
                key.lstrip("+~"),
                f"a space after '=': the shell passed `{item}` and `{following[0]}` as two arguments "
                f"({key} would be set to '' and '{following[0]}' is not an override)",
                (item + following[0],),
            )
        words = self._words(following)
        if "=" not in item or not words:
            return None
        key, value = item.split("=", 1)
        return _Reading(
            1 + len(words),
            key.lstrip("+~"),
            f"the shell split `{' '.join([item, *words])}` at the {agreeing(len(words), 'space')}: "
            "quotes around a value with spaces do not reach t3rl unless the whole override is quoted",
            (f"{key}={quoted(' '.join([value, *words]))}",),
        )

    def _words(self, items: list[str]) -> list[str]:
        """The bare words at the start of `items` that are no mistake of their own (`name:foo`,
        `key =v`, a group's option): what the shell split off a value with spaces."""
        words = []
        for j, item in enumerate(items):
            if not _bare(item) or item.startswith("-") or _unbalanced(item) or _is_record_dir(item):
                break
            if item in OPTIONAL_GROUPS or item in _top_level(self.keys) or _command_word(item):
                # a section's or group's name alone (`t3rl show … model`), a command's word (`… help`,
                # `… plan`): a word of its own, answered as one, not the rest of the value before it
                # (`+experiment='quickstart model'`)
                break
            alone = self._no_equals(item, items[j + 1 :])
            if alone is not None and alone.fixed:
                break
            words.append(item)
        return words

    def _no_equals(self, item: str, following: list[str]) -> _Reading | None:
        """An argument with no '=': `key:value`, `key: value`, `key =value`, `key = value`, a bare word, a
        config file's path."""
        if item.endswith((".yaml", ".yml")):
            return self._config_file(item)
        if _is_record_dir(item):
            # `--run-dir runs/quickstart/*`: the shell expanded the pattern, each dir after the first an
            # argument of its own, read as a value the shell split off the override before it.
            message = (
                f"'{item}' is a run's record, not an override: t3rl run and t3rl plan take one with "
                "--run-dir, one at a time (a pattern the shell expands to several passes the others as "
                "overrides)"
            )
            word = shell_word(item)
            note = f"t3rl run --run-dir {word} resumes it; t3rl runs show {word} shows it"
            return _Reading(1, "--run-dir", message, (), note)
        if following and following[0].startswith("=") and following[0] != "=":
            return _spaced_equals(item, following[0][1:], 2)
        if following[:1] == ["="] and len(following) > 1 and _bare(following[1]):
            return _spaced_equals(item, following[1], 3)
        key, colon, value = item.partition(":")
        if colon and _is_key(key):
            if value:
                message = f"'{item}' has ':' where an override has '='"
                return _Reading(1, key.lstrip("+~"), message, (f"{key}={value}",))
            if following and _bare(following[0]):
                message = f"`{item} {following[0]}` is YAML's 'key: value'; an override is key=value"
                return _Reading(2, key.lstrip("+~"), message, (f"{key}={following[0]}",))
        return self._bare_word(item)

    def _config_file(self, word: str) -> _Reading:
        """A config file's path given as an argument: chosen by its group (its directory) and name, from
        the config dir above it unless t3rl's own config has it."""
        path = Path(word)
        group, option = path.parent.name, path.stem
        message = f"'{word}' is a config file, not an override: a config is chosen by its group and name"
        choice = self.lookup.choice_of(option)
        if choice is not None and choice.split("=", 1)[0].lstrip("+") == group:
            return _Reading(1, group, message, (choice,))
        # A group is a top-level key of the config, or one the primary config leaves unchosen.
        if group not in {*OPTIONAL_GROUPS, *_top_level(self.keys)}:
            return _Reading(1, word, message, (), _OUTSIDE_A_GROUP)
        plus = "+" if group in OPTIONAL_GROUPS else ""
        note = f"--config-dir {shell_word(str(path.parent.parent))} {plus}{group}={option}"
        return _Reading(1, group, message, (), note)

    def _bare_word(self, word: str) -> _Reading | None:
        """A word alone: a config option named without its group (`stage1_bfcl`), or a key, no value."""
        if not _is_key(word):
            return None
        choice = self.lookup.choice_of(word)
        if choice is not None:
            group = choice.split("=", 1)[0].lstrip("+")
            return _Reading(1, group, f"'{word}' is an option of config group '{group}'", (choice,))
        message = f"'{word}' is not an override: it has no '='"
        section = word in OPTIONAL_GROUPS or word in _top_level(self.keys)
        if _command_word(word) and not section:
            return self._command_named(word)
        if section:
            # a section's name alone: to set it, or (`t3rl show … model`) to see it
            dirs = [f"--config-dir {shell_word(d)}" for d in self.lookup.config_dirs]
            others = [shell_word(o) for o in self.items if o != word]
            shown = " ".join(["t3rl show", *dirs, *others, "--explain", word])
            return _Reading(1, word, message, (), f"give it a value: {word}=<value>; or, to see it: {shown}")
        return _Reading(1, word, message, (), f"give it a value: {word}=<value>")

    def _command_named(self, word: str) -> _Reading:
        """`t3rl validate … help`: that command's help; `t3rl validate … plan`: the line as that command."""
        running = RUNNING.get() or "validate"
        if word in HELP_WORDS:
            message = f"'{word}' is not an override: a command's help is its --help"
            return _Reading(1, word, message, (), f"t3rl {running} --help")
        message = f"'{word}' is a command of t3rl, not an override: a line runs one command, named first"
        if not COMMANDS.get().get(word):  # `… runs`: a command of its own, which takes no overrides
            return _Reading(1, word, message, (), f"drop '{word}' here; its own line: t3rl {word} --help")
        dirs = [f"--config-dir {shell_word(d)}" for d in self.lookup.config_dirs]
        others = [shell_word(o) for o in self.items if o != word]
        line = " ".join(["t3rl", word, *dirs, *others])
        return _Reading(1, word, message, (), f"{line} (or without '{word}': t3rl {running} …)")

    def _unclosed(self, i: int) -> _Reading:
        """A list, dict or quote left open: closed by the arguments after it (the shell split it at
        spaces), else by the closers it lacks."""
        items = self.items
        end = i + 1
        while end < len(items) and _unbalanced(" ".join(items[i:end])):
            end += 1
        joined = " ".join(items[i:end])
        key = items[i].split("=", 1)[0].lstrip("+~")
        if not _unbalanced(joined):
            message = f"the shell split `{joined}` at the {agreeing(end - i - 1, 'space')}"
            fixed = (_without_split_spaces(joined),)
            return _Reading(end - i, key, message, fixed, "quoted, so the shell keeps it whole")
        closers = _closers(items[i])
        what = "quote" if closers[:1] in ("'", '"') else "bracket"
        message = f"'{items[i]}' leaves a {what} open (missing {' '.join(repr(c) for c in closers)})"
        return _Reading(1, key, message, (items[i] + closers,))

    def _dash_option(self, item: str, following: list[str]) -> _Reading:
        """`--name=value`, `--name value` or `--flag`: a config key written as a command-line option."""
        flag, equals, value = item.partition("=")
        count = 1
        if not equals:
            if following and _bare(following[0]) and not following[0].startswith("-"):
                value, count = following[0], 2
            else:
                value = "true"
        typed = " ".join([item, *following[: count - 1]])
        elsewhere = _OTHER_COMMANDS.get(flag)
        if elsewhere is not None:
            # A launcher's usual flag (`--dry-run`, `--resume`): t3rl has a command for it instead.
            command, why = elsewhere
            dirs = [f"--config-dir {shell_word(d)}" for d in self.lookup.config_dirs]
            overrides = [shell_word(o) for o in self.items if o != item and not o.startswith("-")]
            fix = " ".join([command, *dirs, *overrides]) if command != _RESUME else command
            return _Reading(1, flag.lstrip("-"), f"'{item}' is not an option of this command: {why}", (), fix)
        if flag in ROOT_OPTIONS.get():
            # `t3rl run --version`: an option of t3rl itself, which goes before any command
            message = f"'{item}' is an option of t3rl itself, not of this command: it goes before any command"
            return _Reading(1, flag, message, (), f"t3rl {item}")
        if flag in _OUTPUT_FLAGS and equals + value not in ("", "true"):
            # `t3rl eval|data|plan --out DIR` carried over to a command that writes under paths.runs_dir
            message = f"'{typed}' is not an option of this command: a run's dir is made under paths.runs_dir"
            return _Reading(count, "paths.runs_dir", message, (f"paths.runs_dir={value}",))
        # `t3rl validate --only train`: an option of another command, naming no config key exactly (`--tp`
        # names one); a key only spelt alike is not meant (`--run-dir` read as runs_dir: "did you mean
        # --config-dir?", when it is t3rl run's option).
        owners = [] if _key_exactly(flag.lstrip("-").replace("-", "_"), self.keys) else _commands_with(flag)
        if owners:
            commands = " and ".join(f"t3rl {c}" for c in owners)
            message = f"'{typed}' is not an option of this command but of {commands}"
            return _Reading(count, flag, message, (), f"drop `{typed}` here; or t3rl {owners[0]} {typed} …")
        option = _closest_option(flag)
        if option is not None:
            note = f"did you mean the option {option}? (`t3rl <command> --help` lists them)"
            return _Reading(count, flag, f"'{typed}' is not an option of this command", (), note)
        name = flag.lstrip("-")
        key = _key_named(name.replace("-", "_"), self.keys)
        group = self.lookup.group_choice(name.replace("-", "_"), value, _top_level(self.keys))
        # Before the message quotes the value: a credential's flag (`--hf-token V`) or key masks it.
        from launch.config.misspelt_secrets import unknown_key_fix  # lazy: only to explain a mistake

        secret_fix = unknown_key_fix(flag, value, key)
        message = f"'{typed}' is not an option of this command: config settings are overrides, key=value"
        if group is not None:
            return _Reading(count, group.lstrip("+").split("=")[0], message, (group,))
        if key is None or secret_fix is not None:
            note = secret_fix or "write it as an override without dashes; `t3rl show` prints every key"
            return _Reading(count, key or name, message, (), note)
        return _Reading(count, key, message, (f"{key}={value}",))


def _at(data: Any, key: str) -> Any:
    """The value at a dotted key of plain data; None where there is none."""
    for part in key.split("."):
        data = data.get(part) if isinstance(data, Mapping) else None
    return data


def _is_record_dir(word: str) -> bool:
    """Whether `word` names a run's, plan's or sweep's record dir here (only a word holding a '/' is looked
    up: a bare word is an option's name or a key)."""
    if "/" not in word:
        return False
    path = Path(word).expanduser()
    return (path / "manifest.json").is_file() or (path / "sweep.json").is_file()


def _spaced_equals(key: str, value: str, count: int) -> _Reading:
    typed = f"{key} ={value}" if count == 2 else f"{key} = {value}"
    return _Reading(
        count,
        key.lstrip("+~"),
        f"a space around '=': the shell split `{typed}` into {counted(count, 'argument')}",
        (f"{key}={value}",),
    )


def _commands_with(flag: str) -> list[str]:
    """The other t3rl commands that have the option `flag` (none outside the CLI)."""
    listing = COMMANDS_WITH.get()
    return listing(flag) if listing is not None and flag.startswith("--") else []


def _command_word(word: str) -> bool:
    """Whether `word` is a command of t3rl's or the word for help (never an override: it has no '=')."""
    return word in HELP_WORDS or word in COMMANDS.get()


def _closest_option(flag: str) -> str | None:
    """The option of the running command closest to a misspelt one (`--run_dir` → `--run-dir`), or its
    help option misspelt (`--hlep`, `--Help`)."""
    import difflib  # lazy: asked only once something is misspelt

    found = did_you_mean(flag, COMMAND_OPTIONS.get())
    if found is not None:
        return found
    near = difflib.get_close_matches(flag.lower(), HELP_OPTIONS, n=1, cutoff=HELP_NEAR)
    return near[0] if near else None


def _key_named(name: str, keys: Collection[str]) -> str | None:
    """The config key a flag's name stands for: the key itself, else the shallowest key whose last part
    it is, else the closest such."""
    if name in keys:
        return name
    by_leaf: dict[str, list[str]] = {}
    for key in sorted(keys, key=lambda k: (k.count("."), k)):
        by_leaf.setdefault(key.rpartition(".")[2], []).append(key)
    leaf = name if name in by_leaf else did_you_mean(name, by_leaf)
    return by_leaf[leaf][0] if leaf is not None else None


def _key_exactly(name: str, keys: Collection[str]) -> bool:
    """A flag's name is a config key or the last part of one, as typed (not only spelt alike)."""
    return name in keys or any(key.rpartition(".")[2] == name for key in keys)


def _top_level(keys: Collection[str]) -> set[str]:
    return {key.partition(".")[0] for key in keys}


def _dotted(node: Any, prefix: str) -> Iterator[str]:
    if isinstance(node, Mapping):
        for key, value in node.items():
            dotted = f"{prefix}.{key}" if prefix else str(key)
            yield dotted
            yield from _dotted(value, dotted)


def _hydra_problem(items: list[str]) -> Problem:
    """What Hydra says about the first argument it cannot parse, when no reading above fits."""
    for item in items:
        try:
            OverridesParser.create().parse_override(item)
        except HydraException as error:
            reason = str(error).splitlines()[1:2] or [str(error)]
            typo = _stray_separator(item)
            repaired = _values_quoted(item)
            stray = ", a stray ',' dropped" if repaired and _empty_element(item) else ""
            quoted_fix = repaired and f"{shell_word(repaired)} ({VALUES_QUOTED}{stray})"
            called = _CALLED.search(reason[0])
            fix = (
                f"{shell_word(typo[0])} ({typo[1]})"
                if typo
                else _called_fix(item, called[1])
                if called
                else _lookalikes_fix(item) or pasted_fix(item) or (quoted_fix if repaired else GENERIC_FIX)
            )
            return Problem(
                key=item.split("=", 1)[0].lstrip("+~"),
                message=f"cannot parse override '{item}': {reason[0]}",
                source=f"override `{item}`",
                fix=fix,
            )
    return Problem("", f"cannot parse the overrides `{' '.join(items)}`", "command line", GENERIC_FIX)


def _called_fix(item: str, call: str) -> str:
    """A function of Hydra's grammar that Hydra ran and refused (`choice()`, `int(abc)`, `range(a)`): the
    value was meant as that call, so quoting it (the text 'choice()', which no number takes) is no fix."""
    return f"drop `{item}` (Hydra ran {call} and refused it; quoted, it would be the text '{call}')"


def _lookalikes_fix(item: str) -> str | None:
    """The override with the characters that only look like ASCII ones (a Cyrillic `е`, a fullwidth `Ｈ`, a
    typographic dash or quote) replaced by them, when that parses: Hydra's grammar reads ASCII, and quoting
    the value (its other fix) kept the look-alike, which no name, number or choice takes."""
    if only_typographic_quotes(item):
        return None  # pasted_fix drops or straightens them: `seed=“7”` meant 7, not the text '"7"'
    from t3rl_core.fields import ascii_lookalike  # lazy: only an override Hydra cannot parse

    meant = ascii_lookalike(item)
    if meant is None or not parses(meant):
        return None
    odd = sorted({c for c in item if not c.isascii()})
    # AS_TYPED: launch.checks.fix_closure tries it and completes it (`gpu_type=Ｈ100` on an H200 layout)
    looks = "looks" if len(odd) == 1 else "look"
    return f"set {shell_word(meant)} ({AS_TYPED}: {', '.join(odd)} only {looks} like ASCII)"


def _stray_separator(item: str) -> tuple[str, str] | None:
    """The override without a doubled '=' (`seed==1`) or a comma at an end of its value or of a list's, or
    doubled (`reward=progress,`, `[a,b,]`), when that parses, and what was dropped: quoting those kept them
    in the value (`seed='=1'`, an option named `progress,`, an item '')."""
    key, sep, value = item.partition("=")
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else None
    flat = inner is not None and not any(c in inner for c in "'\"[]{}")
    # a flat list with an empty element (`[a,b,]`: Python's and JSON's habit), which quoting made an item ''
    # that no choice takes
    if sep and _is_key(key) and flat and _empty_element(item):
        repaired = f"{key}=[{','.join(e.strip() for e in (inner or '').split(',') if e.strip())}]"
        return (repaired, "a stray ',' dropped") if parses(repaired) else None
    if not sep or not _is_key(key) or any(c in value for c in "'\"[]{}"):
        return None
    if value.startswith("="):
        repaired, dropped = f"{key}={value.lstrip('=')}", "a doubled '=' dropped"
    elif value.startswith(",") or value.endswith(",") or ",," in value:
        joined = ",".join(part for part in value.split(",") if part)
        repaired, dropped = f"{key}={joined}", "a stray ',' dropped"
    else:
        return None
    return (repaired, dropped) if repaired != f"{key}=" and parses(repaired) else None


def _empty_element(item: str) -> bool:
    """A flat list's element between two commas, or at an end, is empty (`[a,b,]`)."""
    value = item.partition("=")[2]
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else ""
    return "," in inner and any(not e.strip() for e in inner.split(","))


def _values_quoted(item: str) -> str | None:
    """The override with its value (each element of a flat list) quoted, when that parses: values such
    as `--gres=gpu:4` or `~/data` hold characters Hydra's grammar reserves."""
    key, sep, value = item.partition("=")
    if not sep or not _is_key(key):
        return None
    inner = value[1:-1] if value.startswith("[") and value.endswith("]") else None
    if inner is not None and not any(c in inner for c in "[]{}'\""):
        # an empty element is a stray ',' (`[a,b,]`), not an item '': dropped
        elements = _options_whole([e.strip() for e in inner.split(",") if e.strip()])
        repaired = f"{key}=[{','.join(quoted(e) for e in elements)}]"
    elif not any(c in value for c in "'\""):
        repaired = f"{key}={quoted(value)}"
    else:
        return None
    return repaired if repaired != item and parses(repaired) else None


def _options_whole(elements: list[str]) -> list[str]:
    """The elements of a list split at its commas, with an option's value that holds commas made whole
    again: in `[--constraint=a100,h100]` or `[--exclude=n1,n2]` the comma is the option's own (SLURM's
    lists), not Hydra's, and `h100` alone would be no option. An element that is no flag joins the
    `--name=value` before it; a flag's separate value (`[--lr,1e-6]`) follows a flag without '='."""
    whole: list[str] = []
    for element in elements:
        previous = whole[-1] if whole else ""
        if previous.startswith("-") and "=" in previous and element and not element.startswith("-"):
            whole[-1] = f"{previous},{element}"
        else:
            whole.append(element)
    return whole


def _bare(item: str) -> bool:
    """A word with no '=' that Hydra would reject alone (a value the shell split off)."""
    return "=" not in item and not parses(item)


def _is_key(text: str) -> bool:
    return re.fullmatch(r"[+~]{0,2}[A-Za-z_][\w.@/-]*", text) is not None


def _closers(text: str) -> str:
    """The closers `text` lacks, innermost first (quotes hide brackets inside them)."""
    stack: list[str] = []
    for char in text:
        if stack and stack[-1] in "'\"":
            if char == stack[-1]:
                stack.pop()
            continue
        if char in "'\"":
            stack.append(char)
        elif char in BRACKETS:
            stack.append(BRACKETS[char])
        elif stack and char == stack[-1]:
            stack.pop()
    return "".join(reversed(stack))


def _unbalanced(text: str) -> bool:
    return bool(_closers(text))


def _without_split_spaces(text: str) -> str:
    """An override the shell split at spaces, put back together: spaces inside quotes are kept."""
    out, quote = [], ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == " ":
            continue
        out.append(char)
    return "".join(out)
