"""The checks that decide whether a credential pattern is compiled and tried at all (secret_shapes'
`_value_may_follow`, secret_commands' `_fields_follow`) never skip a place the pattern matches:
properties over texts made of the pieces those patterns read. A cold plan's text (`max_tokens_per_gpu:
2048`, `--max-tokens-per-gpu 2048`, a time `02:24:17`) compiles none of them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core import secret_commands, secret_shapes

NAME_PIECES = st.sampled_from(
    ["token", "Token", "pass", "word", "wd", "entİals", "s", "ſ", "X", "_", "-", "--", "\\", "\\\\", '"',
     "'", " ", "\t", "\n", ":", "=", "==", ",", "[", "(", "choice(", "CHOıCE(", "Ab3xYz9Q", "ab12", "2048",
     "K1", "\u00a0", "null", "/tmp/x", "izer", "ential", "PHRASE", "ab1234x"]
)  # fmt: skip
# A `.pgpass` field, or what breaks one (a space, a quote, an escaped `:` or line break), joined by `:`
# into 2-6 fields: five make a record, times and ratios have fewer.
PGPASS_FIELDS = st.lists(
    st.sampled_from(
        [
            "db.host",
            "5432",
            "*",
            "app",
            "alice",
            "S3cretPw!",
            "a\\:b",
            "\\\\",
            "x y",
            'q"',
            "'",
            "12",
            "45.5",
            "",
            "\\n",
            "\t",
        ]
    ),
    min_size=2,
    max_size=6,
).map(":".join)
BEFORE, AFTER = st.sampled_from(["", " ", "\n", '"', "at "]), st.sampled_from(["", " ", "\n"])
PGPASS_TEXTS = st.tuples(BEFORE, PGPASS_FIELDS, AFTER)


@settings(max_examples=500, deadline=None)
@given(st.lists(NAME_PIECES, min_size=1, max_size=10).map("".join))
def test_no_assignment_or_flag_value_is_skipped(rest: str) -> None:
    for word in ("token", "pass"):
        text = f"--api-{word}{rest}"
        at = text.index(word) + len(word)
        if not secret_shapes._value_may_follow(text, at):
            assert re.compile(secret_shapes._ASSIGNED, re.IGNORECASE).match(text, at) is None, text
            assert re.compile(secret_shapes._FLAG_VALUE, re.IGNORECASE).match(text, at) is None, text


@settings(max_examples=500, deadline=None)
@given(PGPASS_TEXTS.map("".join))
def test_no_pgpass_record_is_skipped(text: str) -> None:
    record = re.compile(secret_commands._PGPASS)
    for port in re.compile(secret_commands._PGPASS_PORT).finditer(text):
        if secret_commands._fields_follow(text, port.end()):
            continue
        for start in range(port.start() + 1):
            found = record.match(text, start)
            assert found is None or found.start(2) != port.start() + 1, (text, start)


def test_a_cold_plan_compiles_none_of_these_patterns(tmp_path: Path) -> None:
    probe = (
        "import re, sys, atexit\n"
        "from t3rl_core import secret_commands as c, secret_shapes as s\n"
        "watched = {c._PGPASS, s._ASSIGNED, s._FLAG_VALUE}\n"
        "atexit.register(lambda: print('compiled', sorted(k[1][:12] for k in re._cache"
        " if isinstance(k, tuple) and k[1] in watched), file=sys.stderr))\n"
        "sys.argv = ['t3rl', 'plan', '+experiment=stage2_bfcl', f'paths.plans_dir={sys.argv[1]}']\n"
        "from launch.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    command = [sys.executable, "-c", probe, str(tmp_path / "plans")]
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "compiled []" in done.stderr, done.stderr[-2000:]
