"""Where the example plugin package (examples/plugin) and its config dir are."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "plugin"
EXAMPLE_CONF = EXAMPLE / "conf"
