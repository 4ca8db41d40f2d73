"""The chat templates t3rl ships (`t3rl_core/chat/templates/*.jinja`): their folder, names and sources.

A leaf module: the chat format and the template plugins (`t3rl_core.chat.custom`) both read it.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES_DIR = Path(__file__).with_name("templates")


def shipped_templates() -> list[str]:
    """Names of the chat templates shipped in t3rl_core/chat/templates."""
    return sorted(path.stem for path in TEMPLATES_DIR.glob("*.jinja"))


def load_template(name_or_path: str) -> str:
    """A shipped template by name, or a .jinja file by path."""
    shipped = TEMPLATES_DIR / f"{name_or_path}.jinja"
    if shipped.is_file():
        return shipped.read_text()
    path = Path(name_or_path)
    if path.suffix == ".jinja" and path.is_file():
        return path.read_text()
    raise ValueError(
        f"unknown chat template '{name_or_path}': not a shipped template ({', '.join(shipped_templates())}) "
        "nor a .jinja file"
    )
