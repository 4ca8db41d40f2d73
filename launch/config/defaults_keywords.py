"""A defaults list entry whose keyword is misspelt: `- overide /model: qwen3_8b` in an experiment file.

Hydra reads the first word of an entry's key as a keyword (`override`, `optional`) and, for any other word,
silently takes the entry as a plain one: the group is then chosen twice, and Hydra's "Multiple values for
model. To override a value use 'override model: qwen3_8b'" was printed at a key named after the entry, set
in "the defaults list", with no fix. The keywords are Hydra's two; a word before the group that is neither
is refused at `defaults`, set in the file at its line, with the keyword it is nearest as the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from launch.config.errors import Problem, did_you_mean

# Hydra's keywords of a defaults list entry (hydra/_internal/config_repository.py, 1.3).
KEYWORDS = ("override", "optional")


def misspelt_keyword(files: Iterable[str]) -> Problem | None:
    """The first entry of the files' defaults lists whose key is `<word> <group>` with a word that is no
    keyword; None when there is none."""
    from launch.config.defaults_order import raw_defaults  # lazy: only to explain a refusal

    for file in files:
        for item in raw_defaults(file):
            key = next(iter(item)) if isinstance(item, dict) and len(item) == 1 else None
            words = str(key).split() if key is not None else []
            if len(words) != 2 or words[0] in KEYWORDS:
                continue
            meant = did_you_mean(words[0], list(KEYWORDS)) or "override"
            at = _line_of(file, words[0])
            return Problem(
                key="defaults",
                message=f"{file}{at}: the defaults list entry `{key}: {item[key]}` starts with `{words[0]}`, "
                f"which is no keyword of Hydra's ({', '.join(KEYWORDS)}): Hydra took it as a plain entry, "
                f"which chooses {words[1].lstrip('/')} a second time",
                source=file,
                fix=f"in {file}{at}, write `{meant}` for `{words[0]}`",
            )
    return None


def _line_of(file: str, word: str) -> str:
    """`:N`, the line of the entry starting with `word`, or "" when the file cannot be read."""
    try:
        with open(file, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return ""
    found = (n for n, line in enumerate(lines, 1) if re.match(rf"\s*-\s*{re.escape(word)}\s", line))
    line = next(found, None)
    return f":{line}" if line else ""
