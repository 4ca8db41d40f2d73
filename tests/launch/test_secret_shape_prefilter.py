"""A token's beginning counts only where the shape patterns' look-behind lets it start: an eval record's
`task_id` (`sk_` inside a word) no longer sends the whole text through them, and every token still is."""

import re
from typing import Any

from t3rl_core import secret_shapes
from t3rl_core.secret_shapes import credentials_in, mask_shapes

TOKEN = "sk-" + "Ab3" * 8


class Counting:
    """A compiled pattern that counts its uses."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.uses = pattern, 0

    def __getattr__(self, name: str) -> Any:
        self.uses += 1
        return getattr(self.pattern, name)


def test_a_token_start_inside_a_word_runs_no_shape_pattern(monkeypatch):
    prefixed, cut = Counting(secret_shapes._PREFIXED), Counting(secret_shapes._CUT)
    monkeypatch.setattr(secret_shapes, "_PREFIXED", prefixed)
    monkeypatch.setattr(secret_shapes, "_CUT", cut)
    record = '{"task_id": "multi_turn_base_5", "messages": [{"content": "ask_me, desk-lamp, they"}]}'
    assert mask_shapes(record) == record and credentials_in(record) == []
    assert prefixed.uses == cut.uses == 0


def test_every_token_is_still_found_wherever_it_may_start():
    for text in (
        TOKEN,
        f'{{"task_id": "x", "error": "{TOKEN}"}}',
        f"task_id {TOKEN}",
        f"key={TOKEN}",
        f"(hf_{'a' * 34})",
        "desk-lamp eyJabcdefghij.eyJabcdefghij.abcdefghij",
        f"task_sk-{'a' * 24} then {TOKEN}…",
    ):
        assert TOKEN not in mask_shapes(text) and "***" in mask_shapes(text), text
        assert credentials_in(text), text
    assert mask_shapes(f"task{TOKEN}") == f"task{TOKEN}"  # inside a word: not a token, as before
