"""The README is the front door to docs/: every relative link in it reaches a file of the checkout, and
every `#anchor` a heading of that page (mkdocs build --strict checks the links inside docs/ only)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchors(page: Path) -> set[str]:
    """The ids MkDocs gives a page's headings (lower case, punctuation dropped, spaces as dashes)."""
    headings = re.findall(r"^#+\s+(.+)$", page.read_text(), re.M)
    return {re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", h.strip().lower())) for h in headings}


def test_every_relative_link_of_the_readme_resolves() -> None:
    broken = []
    for target in LINK.findall((REPO / "README.md").read_text()):
        if "://" in target:
            continue
        path, _, anchor = target.partition("#")
        page = REPO / path
        if not page.exists() or (anchor and anchor not in _anchors(page)):
            broken.append(target)
    assert not broken, broken
