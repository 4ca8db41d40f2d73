"""Every `t3rl` command the documentation shows, and the README's, is checked as a newcomer would paste it,
not only the blocks marked runnable (tests/docs/test_docs_commands.py runs those whole).

A command of `run` or `plan` goes through `t3rl plan` (run's pre-flight, into a temporary plans dir),
one of `validate` or `show` through `t3rl validate`, with its overrides and config dirs (no GPU,
nothing run); `t3rl ls` and any `--help` run as shown. A command shown being refused (an `error …` line
printed under it) must be refused with exit 2; every other must pass. A command that needs something
made earlier (a `<placeholder>`, a run dir, a config dir that is not in the checkout) is left to the
page's prose, and so is a block preceded by `<!-- needs: WHAT -->` (an environment installed from a
hub). A `t3rl run` whose plan asks for GPUs says GPU beside it (its comment, the block's, or the
sentence before the block), so nobody pastes it expecting the CPU quickstart.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from launch.checks.resolve import resolve
from launch.run.rundir import RunDir
from launch.run.search import is_search
from launch.run.steps import plan_run
from launch.run.sweep import expand_points, is_sweep
from launch.run.sweep_checks import search_base
from tests.docs.test_docs_commands import FENCE, MARKER, _closing
from tests.support.cli_app import invoke

REPO = Path(__file__).resolve().parents[2]
# Generated from the code (tests/docs checks they are current): their usage lines are no examples.
GENERATED = ("docs/reference/config/", "docs/reference/cli.md")
SHELL_ENDS = {"|", "||", "&&", ";", ">", ">>", "2>&1", "2>/dev/null", "&"}
VALIDATED = {"run", "plan", "validate", "show", "eval"}
# Options of run/plan/show/eval that `validate` does not take, with whether each takes a value.
NOT_VALIDATE_OPTIONS = {
    "--from": True, "--only": True, "--out": True, "--explain": True, "--resolve": False,
    "--engine": True, "--url": True, "--split": True, "--k": True, "--limit-per-category": True,
    "--data": True, "--runtime-config": True, "--serve-checkpoint": True, "--tp": True, "--stage": True,
    "--resume": False, "--no-resume": False, "--published": False,
}  # fmt: skip


NEEDS = re.compile(r"^<!--\s*needs:\s*(?P<what>.+?)\s*-->$")


@dataclass(frozen=True)
class Shown:
    where: str  # page:line
    argv: tuple[str, ...]  # after `t3rl`
    refused: bool  # printed with an `error …` line under it
    said: str = ""  # the command's own comment, the block's comment lines and the sentence before it
    needs: str = ""  # what a `<!-- needs: … -->` marker says it needs from outside the checkout
    # `export NAME=value` lines above the command in its block: the shell it is pasted into has them
    exports: tuple[tuple[str, str], ...] = ()


EXPORT = re.compile(r"^export (?P<name>[A-Za-z_][A-Za-z0-9_]*)=(?P<value>\S+)$")


def _command_lines(body: list[str], figure: bool) -> list[tuple[int, str, bool]]:
    """(offset, command, refused) of each `t3rl` line of a block; a figure's commands start with `$ `
    and are refused when an `error` line follows before the next command."""
    found: list[tuple[int, str, bool]] = []
    index = 0
    while index < len(body):
        line = body[index].strip()
        if figure:
            line = line[2:] if line.startswith("$ ") else ""
        start = index
        while line.endswith("\\") and index + 1 < len(body):
            index += 1
            line = line[:-1] + " " + body[index].strip()
        # `./scripts/setup.sh && .venv/bin/t3rl run …`: the command after the shell's `&&`
        line = line.rpartition("&& ")[2].removeprefix(".venv/bin/")
        if line.startswith("t3rl "):
            found.append((start, line, False))
        elif figure and found and body[index].lstrip().startswith("error") and not found[-1][2]:
            found[-1] = (found[-1][0], found[-1][1], True)
        index += 1
    return found


def shown_commands(text: str, page: str) -> list[Shown]:
    """The `t3rl` commands of a page's fenced blocks that are not marked runnable."""
    lines = text.splitlines()
    shown: list[Shown] = []
    marked, needs = False, ""
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            stripped = lines[index].strip()
            marked = bool(MARKER.match(stripped)) or (marked and not stripped)
            found = NEEDS.match(stripped)
            needs = found["what"] if found else needs if not stripped else ""
            index += 1
            continue
        end = _closing(lines, index, opening["fence"])
        info = opening["info"].strip()
        if not marked and info in ("bash", "sh", "text", "console"):
            body = lines[index + 1 : end]
            following = _next_figure(lines, end + 1)
            before = " ".join(line.strip() for line in lines[max(index - 3, 0) : index])
            comments = " ".join(line.strip() for line in body if line.strip().startswith("#"))
            for offset, command, refused in _command_lines(body, figure=info in ("text", "console")):
                words = _words(command)
                if words is not None:
                    refused = refused or (info in ("bash", "sh") and following.startswith("error"))
                    said = " ".join([command.partition(" #")[2], comments, before])
                    exports = tuple(
                        (found["name"], found["value"])
                        for line in body[:offset]
                        if (found := EXPORT.match(line.strip())) is not None
                    )
                    where = f"{page}:{index + 2 + offset}"
                    shown.append(Shown(where, tuple(words), refused, said, needs, exports))
        marked, needs = False, ""
        index = end + 1
    return shown


def _next_figure(lines: list[str], start: int) -> str:
    """The first line of a text block right after a bash block (what that command printed), else ""."""
    index = start
    while index < len(lines) and not lines[index].strip():
        index += 1
    if index + 1 < len(lines) and FENCE.match(lines[index]) and "text" in lines[index]:
        return lines[index + 1].strip()
    return ""


def _words(command: str) -> list[str] | None:
    """The arguments after `t3rl`, up to the shell's first pipe or redirect; None when it cannot be read
    as typed (an unclosed quote: a sentence quoted around a command)."""
    # as shlex.split(comments=True), and a `;` glued to a word (`--no-progress; echo $?`) is its own
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:
        return None
    cut = next((i for i, w in enumerate(words) if w in SHELL_ENDS), len(words))
    return words[1:cut]


def _checkable(shown: Shown) -> list[str] | None:
    """The argv that checks `shown` here (its `validate`, or itself for ls and --help); None when it
    needs what a page made earlier or holds a placeholder."""
    argv = list(shown.argv)
    if shown.needs or not argv or any(("<" in w and ">" in w) or "…" in w or w == "..." for w in argv):
        return None
    if "--help" in argv or argv[0] == "ls":
        return argv
    if argv[0] not in VALIDATED or "--run-dir" in argv:
        return None
    # run's pre-flight is plan's (a config with no stage is valid to validate, refused by both); a search
    # picks its points as it runs, so it has no plan: validate checks it at its bounds
    planned = argv[0] in ("run", "plan") and not is_search(argv[1:])
    checked, words = ["plan" if planned else "validate"], iter(argv[1:])
    for word in words:
        name = word.partition("=")[0]
        if name in NOT_VALIDATE_OPTIONS:
            if NOT_VALIDATE_OPTIONS[name] and "=" not in word:
                next(words, None)
            continue
        if name == "--config-dir":
            path = word.partition("=")[2] or next(words, "")
            if not (REPO / path).is_dir():
                return None
            checked += ["--config-dir", str(REPO / path)]
            continue
        checked.append(word)
    return checked


def _pages() -> dict[str, str]:
    found = {"README.md": (REPO / "README.md").read_text()}
    for path in sorted((REPO / "docs").rglob("*.md")):
        name = str(path.relative_to(REPO))
        if not name.startswith(GENERATED):
            found[name] = path.read_text()
    return found


SHOWN = [shown for page, text in _pages().items() for shown in shown_commands(text, page)]
CHECKED = [(shown, argv) for shown in SHOWN if (argv := _checkable(shown)) is not None]


def test_the_commands_are_found() -> None:
    """The extraction cannot quietly find nothing: the README's three and the pages' validates are in."""
    wheres = {shown.where.partition(":")[0] for shown, _ in CHECKED}
    assert {"README.md", "docs/tutorials/quickstart.md", "docs/how-to/tau2.md"} <= wheres, wheres
    assert "README.md:25" in {shown.where for shown, _ in CHECKED}  # `setup.sh && .venv/bin/t3rl run …`
    assert len(CHECKED) >= 30, len(CHECKED)
    assert any(shown.refused for shown, _ in CHECKED)


def test_an_export_above_a_command_in_its_block_is_in_its_environment() -> None:
    page = "```bash\nexport A_KEY=…\nt3rl validate x=1\n```\n\n```bash\nt3rl validate y=1\n```\n"
    first, second = shown_commands(page, "p.md")
    assert first.exports == (("A_KEY", "…"),) and second.exports == ()


def test_a_figure_of_a_refusal_expects_exit_2() -> None:
    page = "```text\n$ t3rl validate model=nope\nerror model: unknown option\n$ t3rl ls model\nmodel:\n```\n"
    first, second = shown_commands(page, "p.md")
    assert first.refused and first.argv == ("validate", "model=nope") and not second.refused
    bash = "```bash\nt3rl validate a=1 | head  # why\n```\n\n```text\nerror a: no\n```\n"
    (only,) = shown_commands(bash, "p.md")
    assert only.refused and only.argv == ("validate", "a=1")
    marked = "<!-- runnable -->\n```bash\nt3rl ls\n```\n"
    assert shown_commands(marked, "p.md") == []


@pytest.mark.parametrize(("shown", "argv"), CHECKED, ids=[shown.where for shown, _ in CHECKED])
def test_a_command_the_docs_show_validates_as_shown(
    shown: Shown, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    for name, value in shown.exports:
        monkeypatch.setenv(name, value)
    result = invoke([*argv, f"paths.plans_dir={tmp_path}"] if argv[0] == "plan" else argv, COLUMNS="200")
    expected = 2 if shown.refused else 0
    assert result.exit_code == expected, (
        f"{shown.where}: `t3rl {shlex.join(shown.argv)}` (checked as `t3rl {shlex.join(argv)}`) exited "
        f"{result.exit_code}, the page shows it {'refused' if shown.refused else 'accepted'}\n{result.output}"
    )


RUNS = [(shown, argv) for shown, argv in CHECKED if shown.argv[0] == "run" and not shown.refused]
# The README is kept short and is not edited for this (its GPU pipeline lines are introduced as such on
# the pages they link to); every page of docs/ marks its GPU runs.
UNMARKED_PAGES = ("README.md",)


def planned_gpus(argv: list[str], where: Path) -> int:
    """The most GPUs a stage of the run's plan asks for (a sweep's or search's first point, planned
    in `where`)."""
    words = [w for w in argv[1:] if w != "-m"]
    dirs = [words[i + 1] for i, w in enumerate(words) if w == "--config-dir"]
    overrides = [
        w for i, w in enumerate(words) if w != "--config-dir" and (i == 0 or words[i - 1] != "--config-dir")
    ]
    if is_search(overrides):
        overrides = search_base(overrides, dirs)
    elif is_sweep(overrides):
        overrides = list(expand_points(overrides, dirs)[0].overrides)
    plan = plan_run(resolve(overrides, dirs), RunDir(where))
    return max((stage.gpus for stage in plan.stages), default=0)


def test_the_gpus_of_a_plan_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    assert planned_gpus(["validate", "+experiment=quickstart"], tmp_path / "cpu") == 0
    assert planned_gpus(["validate", "-m", "+experiment=stage1_bfcl", "seed=1,2"], tmp_path / "gpu") == 8


@pytest.mark.parametrize(("shown", "argv"), RUNS, ids=[shown.where for shown, _ in RUNS])
def test_a_run_the_docs_show_that_needs_gpus_says_so(
    shown: Shown, argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl run …` on a machine without the GPUs its plan asks for stops before starting (exit 1): a
    page showing such a command says GPU beside it (its comment, the block's, or the sentence before)."""
    monkeypatch.chdir(REPO)
    for name, value in shown.exports:
        monkeypatch.setenv(name, value)
    gpus = planned_gpus(argv, tmp_path / "plan")
    if not gpus or shown.where.startswith(UNMARKED_PAGES):
        return
    assert "GPU" in shown.said, (
        f"{shown.where}: `t3rl {shlex.join(shown.argv)}` plans {gpus} GPU(s) for a stage, and nothing "
        f"beside it says so (its comment, the block's comment lines or the sentence before: {shown.said!r})"
    )
