"""The committed CLI reference (docs/reference/cli.md) is what scripts/gen_cli_reference.py writes from
the Typer app now: an option or a help text changed without regenerating fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_committed_cli_reference_is_regenerated_unchanged(tmp_path: Path) -> None:
    fresh = tmp_path / "cli.md"
    script = REPO / "scripts" / "gen_cli_reference.py"
    subprocess.run([sys.executable, str(script), "--out", str(fresh)], check=True, capture_output=True)
    committed = (REPO / "docs" / "reference" / "cli.md").read_text()
    assert fresh.read_text() == committed, "stale: run .venv/bin/python scripts/gen_cli_reference.py"
