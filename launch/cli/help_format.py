"""Help and usage lines in the usual Unix spelling: `t3rl runs diff [OPTIONS] A B`, `--out DIR`,
`--k INTEGER`, and nothing after a flag; and the checks every path parameter shares: an empty path
(`--out ""`, `--out "$UNSET"`) is refused, where Python read it as `.` and wrote into the working dir,
a path longer than the system takes (`too_long`: ENAMETOOLONG came out of the first
`Path.exists()` as a traceback or an exit 1), and a path t3rl records (--out, --run-dir, --config-dir)
that is not UTF-8 text.

Typer writes required arguments as `{a} {b}` and gives every option a type placeholder (`<bool>` after
`--trust`, `<list[Path]>` after `--config-dir`). `plain_metavars(app)` gives every command and group of
the app the classes below: an argument is its metavar (its name in capitals by default), bracketed when
optional and followed by `...` when repeatable; an option shows its metavar (click's TEXT / INTEGER /
PATH by default) and a flag shows none.
"""

from __future__ import annotations

import inspect
import itertools
import os
import shlex
import textwrap
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

# Click's names for the values (`--k INTEGER`), by Typer's type label.
_CLICK_NAMES = {"str": "TEXT", "int": "INTEGER", "float": "FLOAT", "path": "PATH", "Path": "PATH"}


# Where the group keeps the command line as typed (`click.Context.meta`, shared by its subcommands): the
# group's parse_args (launch.cli.lazy) writes it, a stopped eval's resume line and a misplaced option's
# fix read it.
ARGV_KEY = "t3rl.argv"
# Metavars of the parameters that name a file or a directory.
PATH_METAVARS = frozenset({"DIR", "FILE", "PATH", "FILE|DIR", "RUN_DIR", "A", "B"})
# Options whose path t3rl writes into its records (plan.sh, config.yaml, manifest.json: UTF-8 text).
RECORDED_PATHS = frozenset({"--out", "--run-dir", "--config-dir"})


def _refuse_unusable_path(param: Any, ctx: Any, value: Any) -> None:
    if param.metavar not in PATH_METAVARS:
        return
    values = [v for v in (value if isinstance(value, list | tuple) else [value]) if isinstance(v, str)]
    if any(not v.strip() for v in values):
        raise typer.BadParameter(
            "an empty path (an unset shell variable?): give a file or directory, `.` for this one",
            ctx=ctx,
            param=param,
        )
    # Longer than the system takes: every call on it fails (ENAMETOOLONG), Path.exists() too.
    long = next((why for why in map(too_long, values) if why is not None), None)
    if long is not None:
        raise typer.BadParameter(f"{long}: give a shorter path", ctx=ctx, param=param)
    # A name in another encoding reaches Python as lone surrogates, which no UTF-8 record can hold.
    if RECORDED_PATHS & set(param.opts) and any(not v.isascii() and not _utf8(v) for v in values):
        raise typer.BadParameter(
            "the path is not UTF-8 text (a name in another encoding), and t3rl records it in UTF-8 files: "
            "rename it, or choose another",
            ctx=ctx,
            param=param,
        )


# POSIX's smallest allowed values stand in where the system does not say (or for a dir that is gone).
_PATH_MAX = 4096
_NAME_MAX = 255


def _limit(name: str, fallback: int) -> int:
    try:
        return int(os.pathconf("/", name))
    except (OSError, ValueError):
        return fallback


def too_long(path: str) -> str | None:
    """Why the system cannot take `path` (absolute, `~` expanded) for its length, or None: a path of more
    than PATH_MAX bytes, or a name in it of more than NAME_MAX, fails every call on it (ENAMETOOLONG),
    which `Path.exists()` raises instead of answering False."""
    try:
        full = os.path.abspath(os.path.expanduser(path)).encode("utf-8", "surrogateescape")
    except OSError:  # a working dir that is gone: the path as given is all there is to measure
        full = path.encode("utf-8", "surrogateescape")
    # lazy: only for a path too long (`t3rl --help` loads no module of t3rl_core)
    from t3rl_core.counts import counted

    path_max = _limit("PC_PATH_MAX", _PATH_MAX)
    if len(full) >= path_max:
        return f"the path is {counted(len(full), 'byte')} long and this system takes at most {path_max - 1}"
    name_max = _limit("PC_NAME_MAX", _NAME_MAX)
    longest = max(full.split(b"/"), key=len)
    if len(longest) > name_max:
        return (
            f"a name in the path is {counted(len(longest), 'byte')} long "
            f"({longest[:20].decode(errors='replace')}…) "
            f"and this system takes at most {name_max}"
        )
    return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _refuse_empty_word(param: Any, ctx: Any, value: Any) -> None:
    """A word given empty or blank (a name, a key, a glob, a URL: `--stage "$STAGE"` with STAGE unset): no
    free-text parameter means anything by it, and refused only later it cost a composition (`--from ''`
    exited 1) or matched nothing (`runs --name ''`). Numbers and choices name their domain instead."""
    desc = param.type_descriptor
    words = desc.annotation in (str, list[str])  # a repeatable option's too (--where, --explain)
    if param.metavar in PATH_METAVARS or param.nargs != 1 or not words or desc.choices:
        return
    values = [v for v in (value if isinstance(value, list | tuple) else [value]) if isinstance(v, str)]
    if any(not v.strip() for v in values):
        from launch.cli.option_domain import param_name  # lazy: only for a value refused

        word = param.metavar or (param.name or "").upper()
        name = param_name(param)
        unset = "" if param.required else f", or leave out {name}"
        raise typer.BadParameter(
            f"an empty {word} (an unset shell variable?): give a {word}{unset}", ctx=ctx, param=param
        )


def _in_domain(param: Any, ctx: Any, value: Any, parse: Any) -> Any:
    """`parse(ctx, value)`; a value outside the parameter's declared domain (its choices or bounds) is
    refused naming the value, the domain and the nearest value inside it (launch.cli.option_domain)."""
    try:
        return parse(ctx, value)
    except typer.BadParameter as error:
        from launch.cli.option_domain import refusal  # lazy: only for a value Typer refused

        why = refusal(param, value)
        if why is None:
            raise
        raise typer.BadParameter(why, ctx=ctx, param=param) from error


def _home_expanded(param: Any, value: Any) -> Any:
    """A path parameter's `~` read as the shell reads it at a word's start: `--out=~/x` (and a quoted
    '~/x') reached t3rl with the `~` as a directory name, since a shell expands it only at a word's
    start, and each command read it as a folder named `~` here (`--runs-dir=~/runs`: no runs dir there;
    `plan --run-dir=~/…`: a new plan into ./~/…)."""
    if param.metavar not in PATH_METAVARS:
        return value
    if isinstance(value, list | tuple):
        return type(value)(os.path.expanduser(v) if isinstance(v, str) else v for v in value)
    return os.path.expanduser(value) if isinstance(value, str) else value


class _Argument(TyperArgument):
    def process_value(self, ctx: Any, value: Any) -> Any:
        value = _home_expanded(self, value)
        _refuse_unusable_path(self, ctx, value)
        _refuse_empty_word(self, ctx, value)
        return _in_domain(self, ctx, value, super().process_value)

    @property
    def display_name_raw(self) -> str:  # also the name errors give: "Missing argument 'RUN_DIR'"
        return self.metavar or (self.name or "").upper()

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name column already shows the metavar

    def _usage_display_name(self) -> str:
        name = self.display_name_raw
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


class _Option(TyperOption):
    def process_value(self, ctx: Any, value: Any) -> Any:
        value = _home_expanded(self, value)
        _refuse_unusable_path(self, ctx, value)
        _refuse_empty_word(self, ctx, value)
        return _in_domain(self, ctx, value, super().process_value)

    def display_type_rich(self, ctx: Any) -> str | None:
        if self.is_flag or self.count:
            return None
        if self.metavar is not None:
            return self.metavar
        label = self.display_type(ctx).strip("<>")
        if self.type_descriptor.is_choice:  # its words as typed: `eval|train`
            return label
        label = label.removeprefix("list[").removesuffix("]")  # repeatable: the help text says so
        return _CLICK_NAMES.get(label, label.upper())


def _plain(param: Any) -> Any:
    """The same parameter object, given the class above that matches it (only its display differs)."""
    if type(param) is TyperArgument:
        param.__class__ = _Argument
    elif type(param) is TyperOption:
        param.__class__ = _Option
    return param


def reflowed(help_text: str | None, width: int = 80) -> str | None:
    """A docstring's paragraphs as one line each, for the terminal to wrap: Typer's rich help keeps every
    line break of the source, so at 80 columns (a pipe, a narrow terminal) a line wrapped at 110 in the
    source became one full line and one of a few words. Examples, lists and tables (indented lines, or
    lines starting with `- `, `* ` or `|`) keep their lines, each example laid out for help printed
    `width` columns wide."""
    if not help_text:
        return help_text
    # The first one too: a command's own help joined its lines, but a group's list of its commands
    # (`t3rl runs --help`) kept them, a line of 'then' between two full ones.
    paragraphs = inspect.cleandoc(help_text).split("\n\n")
    limit = max(width - _MARGIN, _NARROWEST)
    return "\n\n".join(_pasteable(p, limit) if _laid_out(p) else " ".join(p.split("\n")) for p in paragraphs)


# Columns of help an example line (with its indent) may not take: rich keeps a margin each side, and one
# more is spare (77 of 80). A longer one was wrapped by the terminal: a comment's tail (`finish`) or a
# command's last option (`--k 4`) came out as a line of its own, which a pasted block ran as a command.
_MARGIN = 3
# Below this an example is left to wrap: a continuation line would hold a word or two.
_NARROWEST = 24


def _pasteable(paragraph: str, limit: int) -> str:
    """Each example command longer than `limit` columns with its comment moved to the line above it, and
    broken with a shell continuation (` \\`) where it is still too long."""
    lines: list[str] = []
    for line in paragraph.split("\n"):
        indent = line[: len(line) - len(line.lstrip())]
        if line.lstrip().startswith("#") and len(line) > limit:
            lines += _comment(line.strip().lstrip("#").strip(), indent, limit)
            continue
        if not line.lstrip().startswith("t3rl ") or len(line) <= limit:
            lines.append(line)
            continue
        command, _, comment = line.strip().partition("  #")
        if comment:
            lines += _comment(comment.strip(), indent, limit)
        lines += _continued(command.rstrip(), indent, limit)
    return "\n".join(lines)


def _comment(text: str, indent: str, limit: int) -> list[str]:
    """A comment as lines of `limit` columns, each a comment (a wrapped tail was pasted as a command)."""
    return [f"{indent}# {part}" for part in textwrap.wrap(text, max(limit - len(indent) - 2, 1))]


def _continued(command: str, indent: str, limit: int) -> list[str]:
    out, rest, lead = [], command, indent
    while len(lead) + len(rest) > limit and " " in rest:
        room = limit - len(lead) - 2
        # a word longer than the room goes on a line of its own: a break before it, and one after
        cut = rest.rindex(" ", 0, room) if " " in rest[:room] else rest.index(" ")
        out.append(f"{lead}{rest[:cut]} \\")
        rest, lead = rest[cut + 1 :], indent + "    "
    return [*out, f"{lead}{rest}"]


def _laid_out(paragraph: str) -> bool:
    return any(line.startswith((" ", "\t", "- ", "* ", "|", "\b")) for line in paragraph.split("\n"))


def _path_options(params: list[Any]) -> list[str]:
    """The options among `params` that take a path."""
    return [p.opts[0] for p in params if p.param_type_name == "option" and p.metavar in PATH_METAVARS]


def _with_path(params: list[Any], word: str) -> str | None:
    """A command's arguments with `word` as its first path (the others by their metavar), or its first
    path option given `word`; None when it takes no path."""
    arguments = [p for p in params if p.param_type_name == "argument"]
    first = next((p for p in arguments if p.metavar in PATH_METAVARS), None)
    if first is not None:
        return " ".join(word if p is first else str(p.metavar) for p in arguments if p.required or p is first)
    options = _path_options(params)
    return f"{options[0]} {word}" if options else None


def _help_names(command: Any, ctx: Any) -> list[str]:
    """The context's help option names in its order (-h, --help): Click takes them through a set, so
    their order in `--help` and in docs/reference/cli.md changed with the hash seed from run to run."""
    own = {name for param in command.params for name in (*param.opts, *param.secondary_opts)}
    return [name for name in ctx.help_option_names if name not in own]


class _HelpOptionPerNames:
    """Click keeps a command's help option once made, with the names of the first context that asked
    (`-h, --help` under t3rl's root, `--help` alone under a bare context): a command built once a process
    (launch.cli.lazy) showed whichever came first. It is made again when the names differ, and kept
    while they do not (Click orders callbacks by the option's identity)."""

    _help_option: Any

    def get_help_option(self, ctx: Any) -> Any:
        names = tuple(self.get_help_option_names(ctx))  # type: ignore[attr-defined]
        if getattr(self, "_help_option_names", None) != names:
            self._help_option = None
            self._help_option_names = names
        return super().get_help_option(ctx)  # type: ignore[misc]


class _ExitCodesEpilog:
    """The command's exit codes at the end of its help, from their one declaration (launch.cli.exit_help)."""

    epilog: str | None

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # `t3rl --help` alone (no subcommand in the path) has no exit codes: its cold start imports none
        if self.epilog is None and " " in ctx.command_path:
            from launch.cli.exit_help import exit_epilog  # lazy: only for a command's --help

            self.epilog = exit_epilog(ctx.command_path)
        super().format_help(ctx, formatter)  # type: ignore[misc]


class _ExamplesAtItsWidth:
    """The help's examples laid out for the width it is printed at (`help` stays laid out for 80, what
    docs/reference/cli.md is generated from): laid out for 80 alone, a terminal of 60 columns wrapped
    `t3rl run -m +experiment=stage1_bfcl reward=progress,binary` after the experiment, and the block
    pasted started that run without its sweep, then set a shell variable `reward`."""

    help: str | None
    _docstring: str | None

    def format_help(self, ctx: Any, formatter: Any) -> None:
        from rich.console import Console  # lazy: only for --help, which rich prints
        from typer import rich_utils

        shown = self.help
        self.help = reflowed(self._docstring, Console(width=rich_utils.MAX_WIDTH).width)
        try:
            super().format_help(ctx, formatter)  # type: ignore[misc]
        finally:
            self.help = shown


class PlainCommand(_ExamplesAtItsWidth, _ExitCodesEpilog, _HelpOptionPerNames, TyperCommand):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._docstring = self.help
        self.help = reflowed(self.help)

    def get_help_option_names(self, ctx: Any) -> list[str]:
        return _help_names(self, ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        # Every parameter, also those Typer adds late (--help, --install-completion).
        return [_plain(param) for param in super().get_params(ctx)]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _refuse_given_twice(self.params, args, ctx)
            _glob_expanded_by_the_shell(self.params, args, ctx)
        return _value_missing_named(self.params, ctx, lambda: self._extra_arguments_split(ctx, args))

    def _extra_arguments_split(self, ctx: Any, args: list[str]) -> list[str]:
        """Click's parse, with words past the last argument that takes one value read as more values of it
        (`t3rl ls experiment stage1_bfcl quickstart`): one command line per value, where Click said only
        "Got unexpected extra argument(s) (quickstart)"."""
        typed = list(args)  # Click's parser consumes the list it is given
        allowed, ctx.allow_extra_args = ctx.allow_extra_args, True
        try:
            rest = super().parse_args(ctx, args)
        finally:
            ctx.allow_extra_args = allowed
        if rest and not allowed and not ctx.resilient_parsing:
            ctx.fail(_one_line_per_value(self.params, ctx, typed, rest))
        return rest  # type: ignore[no-any-return]


def _one_line_per_value(params: list[Any], ctx: Any, args: list[str], extra: list[str]) -> str:
    """What words past a command's arguments meant: more values of its last argument taking one, each its
    own command line; else Click's words."""
    from t3rl_core.counts import counted  # lazy: only for a command line Click refused

    said = f"Got unexpected extra argument(s) ({' '.join(extra)})"
    last = next((p for p in reversed(params) if p.param_type_name == "argument" and p.nargs == 1), None)
    given = ctx.params.get(last.name) if last is not None else None
    words = list(args)
    for word in reversed(extra):  # the extra words come after the value given: drop them from the end
        words.pop(len(words) - 1 - words[::-1].index(word))
    given = os.fspath(given) if isinstance(given, str | os.PathLike) else None  # a path's as typed
    if given is None or given not in words or any(w.startswith("-") for w in extra):
        return said
    at = len(words) - 1 - words[::-1].index(given)
    values = list(dict.fromkeys([given, *extra]))
    lines = [shlex.join([*ctx.command_path.split(), *words[:at], v, *words[at + 1 :]]) for v in values]
    metavar = getattr(last, "metavar", None) or str(getattr(last, "name", "")).upper()
    if len(values) == 1:
        return f"{said}: {metavar} takes one value, given twice; the command line: {lines[0]}"
    return (
        f"{said}: {metavar} takes one value, {counted(len(values), 'value')} given; one command line each: "
        + ", then ".join(lines)
    )


def _value_missing_named(params: list[Any], ctx: Any, parse: Any) -> list[str]:
    """`parse()`, with an option given no value answered with what it takes and the usual cause: Click said
    only "Option '--run-dir' requires an argument.", without the usage lines or a word of why (`--run-dir
    $RUN` with RUN unset, `--out` last on the line)."""
    # lazy: only to read a parse error
    from typer._click.exceptions import BadOptionUsage, MissingParameter, NoSuchOption

    try:
        return parse()  # type: ignore[no-any-return]
    except MissingParameter as error:
        _argument_missing_shown(ctx, error.param)
        raise
    except NoSuchOption as error:
        _group_option_after_its_command(ctx, error.option_name)
        _option_by_its_start(params, ctx, error.option_name)
        raise
    except BadOptionUsage as error:
        param = next((p for p in params if error.option_name in getattr(p, "opts", ())), None)
        if param is None or "requires" not in error.message:
            raise
        shown = param.display_type_rich(ctx) if isinstance(param, _Option) else None  # as --help shows it
        takes = shown or "a value"
        ctx.fail(
            f"{error.option_name} takes {takes} and nothing followed it: was a shell variable unset or "
            f"empty ({error.option_name} $VAR passes nothing)? See `{ctx.command_path} --help`"
        )


def _argument_missing_shown(ctx: Any, param: Any) -> None:
    """`t3rl check-template`, `t3rl runs diff A`, `t3rl data bfcl` (a required argument or option left
    out): Click said only "Missing argument 'MODEL'." or "Missing option '--out'." Answered with what it
    is (its help) and the command's first example that gives it, as `--help` shows them."""
    kind = getattr(param, "param_type_name", "")
    if param is None or kind not in ("argument", "option"):
        return
    # an option's example is one that gives it; an argument's, one with more than the command
    option = max(param.opts, key=len) if kind == "option" else None
    metavar = getattr(param, "metavar", None) or str(param.name).upper()
    label = f"Missing option '{option}'" if option else f"Missing argument '{metavar}'"
    what = " ".join(str(getattr(param, "help", "") or "").split()).rstrip(".")
    docstring = str(getattr(ctx.command, "_docstring", None) or ctx.command.help or "")
    examples = [line.strip().split("  #")[0].strip() for line in docstring.splitlines()]
    examples = [e for e in examples if e.startswith("t3rl ")]
    example = next((e for e in examples if (option in e.split() if option else len(e.split()) > 2)), None)
    said = label + (f": {what}" if what else "")
    ctx.fail(said + (f", e.g. {example}" if example else f" (see `{ctx.command_path} --help`)"))


def _option_by_its_start(params: list[Any], ctx: Any, name: str) -> None:
    """`t3rl eval --limit 1`: the start of one option's name (`--limit-per-category`), which Click's
    "Possible options" missed for another it found as near (`--split`)."""
    typed = name.partition("=")[0]
    longer = [o for p in params for o in getattr(p, "opts", ()) if o.startswith(f"{typed}-")]
    if len(longer) == 1:
        ctx.fail(f"No such option: {typed}: did you mean {longer[0]}?")


# Per command group (its name), which of the group's options each of its commands reads (`t3rl runs
# show` reads --runs-dir alone): declared by the group's module (launch.cli.runs), read here and by the
# group's callback, which refuses one its command does not read (was: ignored, `t3rl runs --json show`
# printed text).
GROUP_OPTIONS_READ: dict[str, dict[str, tuple[str, ...]]] = {}


def group_option_unread(group: str, command: str, option: str) -> str | None:
    """Why `option` of group `group` does nothing for its `command`, with the smallest fix; None when the
    command reads it (or the group declares nothing of it)."""
    read = GROUP_OPTIONS_READ.get(group, {}).get(command)
    if read is None or option in read:
        return None
    why = f"{option} is an option of `t3rl {group}` itself, which `t3rl {group} {command}` does not read"
    if command == "diff" and option in ("--metric", "--mixed-identity"):
        return f"{why}: diff has its own, after it: t3rl {group} diff A B {option} …"
    if option == "--json":
        return f"{why} (it prints no JSON; a run's record is JSON already: RUN_DIR/manifest.json, state.json)"
    return f"{why}: drop it (it applies to the listing: t3rl {group} {option} …)"


def _group_option_after_its_command(ctx: Any, name: str) -> None:
    """`t3rl runs show --runs-dir X`: an option of the group, typed after its command, where Click knows
    it not ("No such option: --runs-dir"). Answered with where it goes, or that the command does not
    read it; nothing when the group has none."""
    parent = ctx.parent
    option = name.partition("=")[0]
    if parent is None or not any(option in getattr(p, "opts", ()) for p in parent.command.params):
        return
    unread = group_option_unread(parent.info_name or "", ctx.info_name or "", option)
    if unread is not None:
        without = _moved_before(ctx, parent, option, drop=True)
        ctx.fail(unread + (f"; without it: {without}" if without else ""))
    ctx.fail(
        f"{option} is an option of `{parent.command_path}`, so it goes before `{ctx.info_name}`: "
        + (_moved_before(ctx, parent, option) or f"{parent.command_path} {option} … {ctx.info_name} …")
    )


def _moved_before(ctx: Any, parent: Any, option: str, *, drop: bool = False) -> str | None:
    """The command line as typed with the group's `option` (and its value) moved before the command, or
    with `drop` left out: the fix itself, not a line of `…` to fill in (`t3rl runs show --runs-dir=old`
    gives `t3rl runs --runs-dir=old show`). None when the line typed is not at hand."""
    import shlex  # lazy: only for an option typed after its command

    typed = ctx.find_root().meta.get(ARGV_KEY)
    group, command = parent.info_name, ctx.info_name
    if not isinstance(typed, list) or group not in typed:
        return None
    words = typed[typed.index(group) + 1 :]
    if command not in words:
        return None
    param = next(p for p in parent.command.params if option in getattr(p, "opts", ()))
    at = next((i for i, w in enumerate(words) if w == option or w.startswith(f"{option}=")), None)
    if at is None or at < words.index(command):
        return None
    size = 1 if param.is_flag or "=" in words[at] else 2
    moved = [] if drop else words[at : at + size]
    rest = words[:at] + words[at + size :]
    before = rest.index(command)
    return shlex.join(["t3rl", *typed[: typed.index(group) + 1], *rest[:before], *moved, *rest[before:]])


def _glob_expanded_by_the_shell(params: list[Any], args: list[str], ctx: Any) -> None:
    """`t3rl runs --name out*` unquoted: the shell matched the glob against the working directory's files
    and passed them (`--name out1 out2`), so the second was read as a command ("No such command 'out2'")
    or an extra argument, or, one file matching, the glob became that name. Every option whose metavar
    is GLOB: its value and the words after it that are existing paths are named, with the quoting."""
    globs = {opt for p in params if getattr(p, "metavar", None) == "GLOB" for opt in getattr(p, "opts", ())}
    for i, word in enumerate(args[:-2] if globs else ()):
        if word not in globs:
            continue
        expanded = list(itertools.takewhile(_a_path_typed, args[i + 1 :]))
        if len(expanded) > 1:
            prefix = os.path.commonprefix(expanded)  # noqa: RUF071 (the glob's start: characters, not path parts)
            quoted = shlex.quote(f"{prefix}*") if prefix else "'…*'"
            more = " …" if len(expanded) > 4 else ""
            ctx.fail(
                f"{word} takes one glob, and the shell expanded yours into {' '.join(expanded[:4])}{more} "
                f"(the files here it matches): quote it so that t3rl matches it, e.g. {word} {quoted}"
            )


def _a_path_typed(word: str) -> bool:
    return not word.startswith("-") and os.path.lexists(word)


def _refuse_given_twice(params: list[Any], args: list[str], ctx: Any, group: bool = False) -> None:
    """An option that takes one value given twice with different values (`--out a … --out b`): Click
    kept the last one silently, so a line edited by appending ran with a value its author had not read.
    A group's own options end at its command's name."""
    single = {
        name: param
        for param in params
        if param.param_type_name == "option" and not param.multiple and not param.is_flag and not param.count
        for name in param.opts
    }
    seen: dict[Any, tuple[str, str]] = {}
    i = 0
    while i < len(args) and args[i] != "--":
        name, eq, value = args[i].partition("=")
        if group and not args[i].startswith("-"):
            return
        param = single.get(name) if args[i].startswith("-") else None
        if param is not None and not eq:
            value, i = (args[i + 1] if i + 1 < len(args) else ""), i + 1
        if param is not None:
            first = seen.setdefault(param, (name, value))
            if first[1] != value:
                ctx.fail(
                    f"{first[0]} is given twice ({first[1]!r}, then {value!r}); it takes one value: keep the "
                    "one you mean"
                )
        i += 1


class PlainGroup(_ExamplesAtItsWidth, _ExitCodesEpilog, _HelpOptionPerNames, TyperGroup):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._docstring = self.help
        self.help = reflowed(self.help)

    def get_help_option_names(self, ctx: Any) -> list[str]:
        return _help_names(self, ctx)

    def get_params(self, ctx: Any) -> list[Any]:
        return [_plain(param) for param in super().get_params(ctx)]

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not ctx.resilient_parsing:
            _refuse_given_twice(self.params, args, ctx, group=True)
            _glob_expanded_by_the_shell(self.params, args, ctx)
        return _value_missing_named(self.params, ctx, lambda: super(PlainGroup, self).parse_args(ctx, args))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        """A path where the group's command goes (`t3rl runs runs/quickstart`): Click said only "No such
        command"; the lines that take it are named (the group's directory option, each command's first
        path parameter). Not for `t3rl` itself, whose every command takes one: Click's guess is better."""
        name = args[0] if args else ""
        if name and not ctx.resilient_parsing and self.get_command(ctx, name) is None:
            from launch.cli.other_words import line_for  # lazy: only for a command that is not one

            line = line_for(ctx.command_path, name)
            if line is not None:
                ctx.fail(f"`{ctx.command_path}` has no command '{name}'; use {line}")
        path = "/" in name or name in (".", "..")
        if path and ctx.parent is not None and self.get_command(ctx, name) is None:
            word = shlex.quote(name)
            lines = [f"{ctx.command_path} {opt} {word}" for opt in _path_options(self.params)[:1]]
            for command_name in self.list_commands(ctx):
                command = self.get_command(ctx, command_name)
                taking = _with_path(command.params if command is not None else [], word)
                if taking:
                    lines.append(f"{ctx.command_path} {command_name} {taking}")
            ctx.fail(
                f"'{name}' is a path, not a command of `{ctx.command_path}`: a path goes after the command "
                f"or option that takes it: {' or '.join(f'`{line}`' for line in lines)}"
            )
        return super().resolve_command(ctx, args)


def plain_metavars(app: typer.Typer) -> None:
    """Make every command and group registered on `app` (and its sub-apps) use the plain classes."""
    app.info.cls = PlainGroup
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # Typer fills in its own class when registering
            command.cls = PlainCommand
    for group in app.registered_groups:
        if group.typer_instance is not None:
            plain_metavars(group.typer_instance)
