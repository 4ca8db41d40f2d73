"""A token's beginning counts only where the shape patterns' look-behind lets it start: an eval record's
`task_id` (`sk_` inside a word) no longer sends the whole text through them, and every token still is."""

import os
import re
import re._parser as sre_parse
import subprocess
import sys
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core import secret_shapes
from t3rl_core.secret_shapes import ISSUERS, credentials_in, mask_shapes

TOKEN = "sk-" + "Ab3" * 8


class Counting:
    """A compiled pattern that counts its uses."""

    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern, self.uses = pattern, 0

    def __getattr__(self, name: str) -> Any:
        self.uses += 1
        return getattr(self.pattern, name)


def test_a_token_start_inside_a_word_runs_no_shape_pattern(monkeypatch):
    prefixed, cut = (Counting(p) for p in secret_shapes._issued_patterns())
    monkeypatch.setattr(secret_shapes, "_issued_patterns", lambda: (prefixed, cut))
    record = (
        '{"task_id": "multi_turn_base_5", "messages": [{"content": "ask_me, desk-lamp, they"}],'
        ' "model.hf_id": "Qwen/Qwen3-4B", "hf_checkpoint": "models/x", "uses": "sk-learn"}'
    )
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


# Pieces text around a token is made of: every issuer's start, what may follow it, ellipses, words.
PIECES = st.sampled_from(
    [start for _, starts, _, _ in ISSUERS for start in starts]
    + ["Ab3", "9f", "a" * 12, "_", "-", ".", "...", "…", "%2B", "+/=", " ", '"', "task", "\n", "=", "eyJ"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, max_size=14).map("".join))
def test_the_prefilter_misses_no_text_the_patterns_match(text: str) -> None:
    prefixed, cut = secret_shapes._issued_patterns()
    if prefixed.search(text) or cut.search(text):
        assert secret_shapes._may_hold_token(text), text


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_every_issuer_s_token_passes_the_prefilter_whole_and_cut_short(data) -> None:
    _, _, token_pattern, _ = data.draw(st.sampled_from(ISSUERS))
    token = data.draw(st.from_regex(token_pattern, fullmatch=True))
    before, after = (
        data.draw(st.sampled_from(["", " ", '"', "=", "("])),
        data.draw(st.sampled_from(["", " ", '"'])),
    )
    assert secret_shapes._may_hold_token(before + token + after)
    assert secret_shapes._may_hold_token(before + token[: max(len(token) // 2, 8)] + "…")


def test_the_shortest_token_is_the_issuers_shortest() -> None:
    assert min(sre_parse.parse(t).getwidth()[0] for _, _, t, _ in ISSUERS) == secret_shapes._SHORTEST_TOKEN


def test_a_cold_validate_compiles_no_issuer_pattern(tmp_path: Path) -> None:
    """stage2_bfcl's config and output hold `hf_id`, `hf_checkpoint`, no token: the patterns (~15 M
    instructions to compile) are never compiled."""
    probe = (
        "import sys, atexit\n"
        "from t3rl_core import secret_shapes\n"
        "atexit.register(lambda: print('compiled', secret_shapes._issued_patterns.cache_info().currsize,"
        " file=sys.stderr))\n"
        "sys.argv = ['t3rl', 'validate', '+experiment=stage2_bfcl']\n"
        "from launch.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "compiled 0" in done.stderr, done.stderr
