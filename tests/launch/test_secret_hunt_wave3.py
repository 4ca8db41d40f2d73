"""Hunt wave 3 (secrets): a passphrase folded at its spaces.

A credential with spaces (`correct horse battery staple`, a file: secret's pass phrase) is folded over
lines at its spaces by whatever lays text out in words: rich and textwrap put the break where the space
was, YAML (PyYAML's default width of 80, as a tool dumping a config writes it) too, with the next
line indented. Unfolded, the break and its padding are gone, so the value read back had no space
there and was not found: folded into pieces shorter than a cut-short beginning (12 characters), every
word of it stayed in the text. Now each run of a value's spaces may be where a line broke.
"""

from __future__ import annotations

import textwrap

import pytest
import yaml

from launch.config.secrets import scrub_text
from t3rl_core import secret
from t3rl_core.secret import mask_revealed

PHRASE = "velvet quarry 42 lantern mosaic"
WORDS = PHRASE.split()
SAID = f"error: login refused for password {PHRASE} (user alice)"


def _folds() -> list[str]:
    return [
        *(textwrap.fill(SAID, width) for width in (10, 16, 24, 40)),
        textwrap.indent(textwrap.fill(SAID, 20), "│ "),  # a panel's border before each line
        yaml.safe_dump({"error": SAID}, width=20),  # indented continuation lines
    ]


@pytest.mark.parametrize("text", _folds())
def test_a_passphrase_folded_at_its_spaces_is_masked_whole(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})  # as a Secret's reveal() leaves it
    for masked in (mask_revealed(text), scrub_text(text, [PHRASE])):
        assert not [word for word in WORDS if word in masked], masked
        assert "alice" in masked and "login" in masked, masked


def test_its_words_elsewhere_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the words in the value's order, with nothing but spaces or a line break between, are it."""
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})
    text = "the velvet\nquarry is closed; 42 lanterns\nmosaic tiles"
    assert mask_revealed(text) == text
