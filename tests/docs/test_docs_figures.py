"""Every figure of a refusal in the docs is what its command prints today: a `text` block of `error …` or
`warning …` lines right after a block holding one `t3rl validate` command is compared, line by line,
with that command's answer (a line ending in `...` or `…` is its start). A figure may leave lines out,
never show one the command no longer prints (tests/docs/test_docs_commands_shown.py checks only the
exit code).

A command that reads a config dir an earlier block of its page made (not in the checkout) is left to
the page's runnable blocks.
"""

from __future__ import annotations

import itertools
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.docs.test_docs_commands import FENCE, _closing
from tests.support.cli_app import invoke

REPO = Path(__file__).resolve().parents[2]
PAGES = sorted(
    p for p in [REPO / "README.md", *(REPO / "docs").rglob("*.md")] if "reference/config/" not in p.as_posix()
)


@dataclass(frozen=True)
class Figure:
    where: str  # page:line of the figure
    argv: tuple[str, ...]  # after `t3rl`
    lines: tuple[str, ...]  # the figure's lines, stripped


def figures(text: str, page: str) -> list[Figure]:
    """Each refusal figure of a page with the one `t3rl validate` command of the block before it."""
    lines = text.splitlines()
    blocks: list[tuple[int, int, str, list[str]]] = []  # (opening fence's line, closing's, info, body)
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = _closing(lines, index, opening["fence"])
        blocks.append((index, end, opening["info"].strip(), lines[index + 1 : end]))
        index = end + 1
    found = []
    for (_, end, info, body), (start, _, figure_info, shown) in itertools.pairwise(blocks):
        if any(line.strip() for line in lines[end + 1 : start]):
            continue  # prose between: a figure of something else
        commands = [line.strip() for line in body if line.strip().startswith("t3rl ")]
        printed = [line.strip() for line in shown if line.strip()]
        if info not in ("bash", "sh") or figure_info != "text" or len(commands) != 1 or not printed:
            continue
        if not printed[0].startswith(("error ", "warning ")):
            continue
        words = shlex.split(commands[0], comments=True)
        if words[1] == "validate":
            found.append(Figure(f"{page}:{start + 1}", tuple(words[1:]), tuple(printed)))
    return found


FIGURES = [
    figure
    for page in PAGES
    for figure in figures(page.read_text(encoding="utf-8"), page.relative_to(REPO).as_posix())
]


def _config_dirs(argv: tuple[str, ...]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv[:-1]) if word == "--config-dir"]


def test_the_docs_hold_refusal_figures() -> None:
    """The finder finds the figures this module exists for (a format change would leave it none)."""
    assert {f.where.partition(":")[0] for f in FIGURES} >= {
        "docs/reference/commands.md",
        "docs/tutorials/first-experiment.md",
    }, FIGURES


def test_a_figure_line_ending_in_dots_is_a_start() -> None:
    assert _shown_in("fix: set a=4 (one of ...); ...", ["    fix: set a=4 (one of ...); or b"])
    assert not _shown_in("error a: x (Megatron)", ["error a: x in stage train (Megatron)"])


def _shown_in(line: str, output: list[str]) -> bool:
    printed = [" ".join(o.split()) for o in output]
    wanted = " ".join(line.split())
    for dots in ("...", "…"):
        if wanted.endswith(dots):
            return any(o.startswith(wanted.removesuffix(dots).rstrip()) for o in printed)
    return wanted in printed


@pytest.mark.parametrize("figure", FIGURES, ids=[f.where for f in FIGURES])
def test_a_refusal_figure_is_what_its_command_prints(figure: Figure, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # validate writes nothing; the command is read as the page says, from the root
    if not all((REPO / d).is_dir() for d in _config_dirs(figure.argv)):
        pytest.skip("reads a config dir an earlier block of its page made")
    result = invoke(list(figure.argv), COLUMNS="400")
    output = result.output.splitlines()
    missing = [line for line in figure.lines if not _shown_in(line, output)]
    assert not missing, f"{figure.where}: the figure shows lines the command no longer prints:\n" + "\n".join(
        [*missing, "--- it prints:", result.output]
    )
