"""The committed configuration reference (docs/reference/config/) is what scripts/gen_config_reference.py
writes from the schema and conf/ now: a field, a comment or an option file changed without regenerating
fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMMITTED = REPO / "docs" / "reference" / "config"


def test_the_committed_reference_is_regenerated_unchanged(tmp_path: Path) -> None:
    script = REPO / "scripts" / "gen_config_reference.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path)], check=True, capture_output=True)
    fresh = {p.name: p.read_text() for p in tmp_path.glob("*.md")}
    committed = {p.name: p.read_text() for p in COMMITTED.glob("*.md")}
    assert sorted(fresh) == sorted(committed), "pages added or removed: run scripts/gen_config_reference.py"
    stale = [name for name in fresh if fresh[name] != committed[name]]
    assert not stale, f"stale pages {stale}: run .venv/bin/python scripts/gen_config_reference.py"
