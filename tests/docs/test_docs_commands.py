"""Every command the documentation marks runnable runs here, on CPU, so the docs cannot drift from the CLI.

A fenced `bash` block right after the comment `<!-- runnable -->` (or `<!-- runnable exit=N -->` for a
command shown being refused) is run as one bash script with `set -euo pipefail`, in a copy of the
checkout's files in a temporary directory, with this interpreter's `bin/` first on PATH. The blocks of one
page run in page order in the same directory, so a block may use what an earlier one wrote. How to mark
a block: docs/contributing.md.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
MARKER = re.compile(r"^<!--\s*runnable(?:\s+exit=(\d+))?\s*-->$")
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
# What a command in the docs may read: the checkout's sources, configs and examples, not its outputs.
NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "__pycache__", "*.egg-info", ".pytest_cache", ".ruff_cache", ".hypothesis",
    "runs", "plans", "site", "models", "checkpoints", "outputs", "multirun", "tests", "benchmarks",
)  # fmt: skip
# A whole page's commands; generous, since the machine may be busy (a page takes seconds when idle).
PAGE_TIMEOUT_S = 900


class BadMarker(ValueError):
    """A runnable marker that is not followed by a fenced bash block."""


@dataclass(frozen=True)
class Block:
    page: str
    line: int  # of the opening fence, 1-based
    script: str
    exit_code: int


def runnable_blocks(text: str, page: str) -> list[Block]:
    """The runnable blocks of a Markdown page, in order; a marker inside another fence is an example."""
    lines = text.splitlines()
    found: list[Block] = []
    pending: tuple[int, int] | None = None  # (marker line, expected exit code)
    index = 0
    while index < len(lines):
        line = lines[index]
        opening = FENCE.match(line)
        if pending is not None and line.strip() and not (opening and opening["info"].strip() == "bash"):
            raise BadMarker(f"{page}:{pending[0] + 1}: a runnable marker must precede a ```bash block")
        if opening:
            end = _closing(lines, index, opening["fence"])
            if pending is not None:
                body = [_dedent(text_line, len(opening["indent"])) for text_line in lines[index + 1 : end]]
                found.append(Block(page, index + 1, "\n".join(body) + "\n", pending[1]))
                pending = None
            index = end + 1
            continue
        marker = MARKER.match(line.strip())
        if marker:
            pending = (index, int(marker[1] or 0))
        index += 1
    if pending is not None:
        raise BadMarker(f"{page}:{pending[0] + 1}: a runnable marker at the end of the page")
    return found


def _closing(lines: list[str], start: int, fence: str) -> int:
    for index in range(start + 1, len(lines)):
        stripped = lines[index].strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            return index
    raise BadMarker(f"line {start + 1}: a fence that is never closed")


def _dedent(line: str, indent: int) -> str:
    """A line of a fenced block without the fence's own indentation (a block inside a list item)."""
    return line[indent:] if not line[:indent].strip() else line.lstrip()


def pages() -> dict[str, list[Block]]:
    found = {}
    for path in sorted(DOCS.rglob("*.md")):
        name = str(path.relative_to(DOCS))
        blocks = runnable_blocks(path.read_text(), name)
        if blocks:
            found[name] = blocks
    return found


PAGES = pages()


def test_the_docs_mark_commands_of_every_kind_of_page() -> None:
    kinds = {page.split("/")[0] for page in PAGES}
    assert {"tutorials", "how-to", "reference", "explanation"} <= kinds, kinds


def test_a_marker_must_precede_a_bash_block() -> None:
    text = "<!-- runnable -->\n```text\nt3rl ls\n```\n"
    with pytest.raises(BadMarker, match="must precede"):
        runnable_blocks(text, "page.md")
    nested = "````markdown\n<!-- runnable -->\n```bash\nexit 1\n```\n````\n"
    assert runnable_blocks(nested, "page.md") == []  # an example of the marker, inside a fence
    listed = "1. Run:\n\n    <!-- runnable exit=2 -->\n    ```bash\n    cat <<E\n      x\n    E\n    ```\n"
    assert runnable_blocks(listed, "page.md") == [Block("page.md", 4, "cat <<E\n  x\nE\n", 2)]
    flush = "<!-- runnable -->\n```bash\ncat <<E\n  kept: indented\nE\n```\n"
    assert runnable_blocks(flush, "page.md")[0].script == "cat <<E\n  kept: indented\nE\n"


# The files of the module's copy of the checkout as it was made (`_files`).
_COPIED: dict[str, tuple[int, int, int]] = {}


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the checkout's files; each page runs in a copy of it."""
    copy = tmp_path_factory.mktemp("docs") / "checkout"
    shutil.copytree(REPO, copy, ignore=NOT_COPIED, symlinks=True)
    _COPIED.update(_files(copy))
    return copy


def _files(root: Path) -> dict[str, tuple[int, int, int]]:
    """Each file below `root` with its size, mtime and mode: what a write or chmod in place changes."""
    found = {}
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            stat = path.stat()
            found[str(path.relative_to(root))] = (stat.st_size, stat.st_mtime_ns, stat.st_mode)
    return found


@pytest.mark.slow
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_runnable_commands_of_a_page_run(page: str, checkout: Path, tmp_path: Path) -> None:
    workdir = tmp_path / "checkout"
    # Hard links, not copies (~0.15 s of CPU a page): a page's commands add files (a config dir, data,
    # runs) and replace them; one that changed a file of the checkout in place would change every later
    # page's, which is checked after each page.
    shutil.copytree(checkout, workdir, symlinks=True, copy_function=os.link)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("T3RL_NO_CACHE", None)
    for block in PAGES[page]:
        done = subprocess.run(
            ["bash", "-c", "set -euo pipefail\n" + block.script],
            cwd=workdir,
            env=env,
            capture_output=True,
            text=True,
            timeout=PAGE_TIMEOUT_S,
        )
        assert done.returncode == block.exit_code, (
            f"docs/{block.page}:{block.line}: exit {done.returncode}, expected {block.exit_code}\n"
            f"{block.script}\n--- stdout (end)\n{done.stdout[-3000:]}\n"
            f"--- stderr (end)\n{done.stderr[-3000:]}"
        )
    changed = sorted(name for name, seen in _files(checkout).items() if _COPIED.get(name) != seen)
    assert not changed, (
        f"docs/{page} (or a page before it) changed files of the checkout in place, which the pages share "
        f"(hard links): {changed[:5]}"
    )
