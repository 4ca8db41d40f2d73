"""Every `t3rl` command the documentation shows is t3rl usage as typed: its command (and subcommand)
exists, every option it gives is one of that command's, an option's value has the option's type and the
arguments fit, also where tests/docs/test_docs_commands_shown.py cannot validate it: a command holding a
`<placeholder>` (`t3rl runs show runs/quickstart/<ts>`), one needing what a page made (`--run-dir`, a
hub environment) and the commands that compose no config (`runs`, `score`, `data`, `rollouts`,
`check-template`). The options a validation drops (`--from`, `--stage`, …) are checked here against the
command they were given to.

Commands in the text (`` `t3rl …` `` inline) are mentions, often partial (`t3rl run --run-dir`): in every
page but the CLI behaviour reference (a catalogue of what is refused), the command they name must exist;
in the tutorials, which a newcomer follows word for word, their options too.
"""

from __future__ import annotations

import re
import shlex

import pytest
import typer
import typer.main
from typer._click.exceptions import UsageError

from launch.cli.app import app
from tests.docs.test_docs_commands import FENCE, _closing
from tests.docs.test_docs_commands_shown import SHOWN, Shown, _pages, _words

ROOT = typer.main.get_command(app)
# `t3rl`'s own options: --help, --version and the completion installers (never run here: they write).
ROOT_OPTIONS = {"--help", "--version", "-V", "--install-completion", "--show-completion"}
# A command written inline in the text, outside a fenced block.
INLINE = re.compile(r"(?<!`)`(t3rl [^`]+)`(?!`)")
PLACEHOLDER = re.compile(r"<[^>]*>|[A-Z][A-Z_|]*")
# Inline mentions name a command without everything it needs (`t3rl score`, `t3rl run --run-dir`).
MENTION = ("Missing argument", "Missing option", "nothing followed it")  # an option named without its value
# The reference page that lists refused command lines, as typed, beside what t3rl answers.
REFUSALS = "docs/reference/cli-behaviour.md"


def usage_problem(argv: list[str] | tuple[str, ...]) -> str | None:
    """What makes `t3rl ARGV` no usage of t3rl, as its parser reads it (nothing runs), or None. A value
    holding a `<placeholder>` stands for one of the option's type."""
    argv = [word.strip("[]") for word in argv if word.strip("[]")]  # a synopsis' `[--limit N]`
    if not argv or argv[0].startswith("-"):
        return None if set(argv) <= ROOT_OPTIONS else f"t3rl: {argv} are not options of t3rl itself"
    if "--help" in argv:
        argv = argv[: argv.index("--help")]
    if "|" in argv[0]:  # `t3rl plan|run|validate OVERRIDES…`: each of the commands
        alternatives = (usage_problem([word, *argv[1:]]) for word in argv[0].split("|"))
        return next((problem for problem in alternatives if problem), None)
    command, context, rest = ROOT, typer.Context(ROOT, info_name="t3rl"), argv
    while rest:
        sub = command.get_command(context, rest[0])
        if sub is None:
            return f"{context.command_path}: no command {rest[0]!r}"
        given = [_typed(word, sub) for word in rest[1:]]
        try:
            context = sub.make_context(rest[0], given, parent=context, resilient_parsing=False)
        except UsageError as error:
            return f"{context.command_path} {rest[0]}: {error.format_message()}"
        command = sub
        if not hasattr(command, "get_command"):
            return _option_among_overrides(command, context)
        rest = [*context._protected_args, *context.args]
    return None


def _typed(word: str, command: typer.core.TyperCommand) -> str:
    """A placeholder value (`<N>`, a metavar: `N`, `FILE|DIR`) as one of any type the option takes (a
    number is also a path); the metavar of a parameter declaring its words (`WORLD`) as its first word."""
    if not PLACEHOLDER.fullmatch(word):
        return word
    words = {p.metavar: p.type_descriptor.choices for p in command.params if p.type_descriptor.choices}
    return str(getattr(words[word][0], "value", words[word][0])) if word in words else "1"


def _option_among_overrides(command: typer.core.TyperCommand, context: typer.Context) -> str | None:
    """run, plan, validate and eval take unknown `--options` as overrides (to answer a misspelt one with
    its name); an override never starts with '-'."""
    for param in command.get_params(context):
        if param.param_type_name == "argument" and param.nargs == -1:
            odd = [word for word in context.params.get(param.name) or () if word.startswith("-")]
            if odd:
                return f"{context.command_path}: no such option {odd[0]}"
    return None


def inline_commands(text: str, page: str) -> list[tuple[str, list[str]]]:
    """(page:line, argv after `t3rl`) of each inline `` `t3rl …` `` outside fenced blocks."""
    found = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening:
            index = _closing(lines, index, opening["fence"]) + 1
            continue
        for match in INLINE.finditer(lines[index]):
            words = _words(match[1])
            if words is not None:
                found.append((f"{page}:{index + 1}", words))
        index += 1
    return found


INLINE_COMMANDS = [
    (where, words)
    for page, text in _pages().items()
    if page != REFUSALS
    for where, words in inline_commands(text, page)
]


def test_the_commands_are_found() -> None:
    assert len(SHOWN) >= 50, len(SHOWN)
    assert any(shown.argv[:2] == ("runs", "show") for shown in SHOWN)  # a placeholder's command too
    assert len(INLINE_COMMANDS) >= 100, len(INLINE_COMMANDS)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["runs", "--stauts", "failed"], "No such option: --stauts"),
        (["runs", "compare", "a", "b"], "no command 'compare'"),
        (["runs", "diff", "a"], "Missing argument"),
        (["runs", "show", "a", "b"], "unexpected extra argument"),
        (["eval", "--k", "four"], "Invalid value for '--k'"),
        (["run", "--form", "eval_tiny"], "no such option --form"),
        (["validate", "+experiment=quickstart", "--from", "eval_tiny"], "no such option --from"),
        (["show", "--only", "eval_tiny"], "No such option: --only"),
        (["data", "bfcl"], "Missing option '--out'"),
        (["--config-dir", "x", "run"], "not options of t3rl itself"),
    ],
)
def test_usage_that_is_none_is_told(argv: list[str], says: str) -> None:
    assert says in (usage_problem(argv) or ""), usage_problem(argv)


@pytest.mark.parametrize(
    "argv",
    [
        ["runs", "show", "runs/quickstart/<ts>"],
        ["eval", "--k", "<K>", "+experiment=quickstart"],
        ["run", "--run-dir", "runs/x", "--from", "eval_tiny"],
        ["rollouts", "show", "FILE|DIR", "[--limit", "N]"],
        ["runs", "--help"],
        ["--version"],
    ],
)
def test_usage_as_documented_passes(argv: list[str]) -> None:
    assert usage_problem(argv) is None


def test_a_shell_separator_glued_to_a_word_ends_the_command() -> None:
    """`t3rl score bfcl r.jsonl --no-progress; echo "exit $?"`: the option was read as `--no-progress;`."""
    assert _words('t3rl score bfcl r.jsonl --no-progress; echo "exit $?"') == [
        "score",
        "bfcl",
        "r.jsonl",
        "--no-progress",
    ]


@pytest.mark.parametrize("shown", SHOWN, ids=[shown.where for shown in SHOWN])
def test_a_command_the_docs_show_is_t3rl_usage(shown: Shown) -> None:
    problem = usage_problem(shown.argv)
    if problem is not None and shown.where.startswith(f"{REFUSALS}:"):
        # The catalogue of refusals shows a value outside an option's domain with what t3rl answers.
        assert _said_on(REFUSALS, problem.partition(": ")[2]), f"{shown.where}: the page shows not {problem}"
        return
    assert problem is None, f"{shown.where}: `t3rl {shlex.join(shown.argv)}`: {problem}"


def _said_on(page: str, message: str) -> bool:
    """The page shows the message (in its figures, boxed and wrapped as the terminal shows it)."""
    return " ".join(message.split()) in " ".join(re.sub("[│╭╮╰╯─]", " ", _pages()[page]).split())


@pytest.mark.parametrize(("where", "argv"), INLINE_COMMANDS, ids=[where for where, _ in INLINE_COMMANDS])
def test_a_command_the_text_names_exists(where: str, argv: list[str]) -> None:
    problem = usage_problem(argv)
    if problem is None or any(mention in problem for mention in MENTION):
        return
    if "/tutorials/" in where or "no command" in problem:
        pytest.fail(f"{where}: `t3rl {shlex.join(argv)}`: {problem}")
