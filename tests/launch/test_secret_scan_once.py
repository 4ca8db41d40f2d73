"""The secret masking of a cold `t3rl plan` reads less and masks the same (#26, the cold plan's row):
a run of token characters is read by one search (`secret_shapes._run_holds_token`), the composed
config's second read after `expand_home` reads only what that changed (`secrets.remember_expanded`), and
a short text scrubbed again with nothing learnt in between is answered from `scrub_text`'s memo. Each
against its plain definition, on generated data with secrets at the joins."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from launch.config import secrets
from launch.config.secrets import remember, remember_config, remember_expanded, scrub_text
from t3rl_core import secret, secret_shapes
from t3rl_core.home_paths import expand_home
from t3rl_core.secret import mask_text
from t3rl_core.secret_pieces import mask_values

# ------------------------------------------------------------------ a run read by one search

STARTS = list(secret_shapes._TOKEN_STARTS)
# What stands before a start inside a run (a name's characters refuse it, the others let it start),
# words around the shortest token's length, and what a path or an argument is made of.
RUN_PIECES = st.sampled_from(
    [*STARTS, "/", ".", "=", "+", "%", "_", "-", "a", "Z9", "x" * 6, "b" * 11, "work"]
)


def per_place(run: bytes) -> bool:
    """The definition: a start at the run's beginning, or at a place after a run character that is not
    a name's, with 15 or more of the run's characters from there on."""
    after = set(b"%+./=")
    return run.startswith(secret_shapes._STARTS_BYTES) or any(
        run[at - 1] in after and run.startswith(secret_shapes._STARTS_BYTES, at)
        for at in range(1, len(run) - 15 + 1)
    )


@settings(max_examples=400, deadline=None)
@given(st.lists(RUN_PIECES, max_size=12).map("".join))
def test_a_run_answers_as_read_place_by_place(run: str) -> None:
    assert secret_shapes._run_holds_token(run.encode()) == per_place(run.encode()), run


def test_a_run_answers_as_read_place_by_place_at_the_shortest_tokens_length() -> None:
    for before in ("", "a", "/", "ab/", "x.", "=%", "a" * 20 + "/"):
        for start in STARTS:
            for after in range(0, 20):
                for run in (f"{before}{start}{'q' * after}", f"{before}/{start}{'q' * after}"):
                    assert secret_shapes._run_holds_token(run.encode()) == per_place(run.encode()), run


def test_a_run_is_read_by_one_search(monkeypatch) -> None:
    pattern = secret_shapes._start_in_run()
    searches: list[bytes] = []

    class Counting:
        def search(self, run: bytes) -> Any:
            searches.append(run)
            return pattern.search(run)

    monkeypatch.setattr(secret_shapes, "_start_in_run", Counting)
    path = "/work/main/.venv/lib/python3.11/site-packages/sglang/launch_server.py"
    assert secret_shapes._may_hold_token(f"python {path} --port 30000") is False
    assert searches == [path.encode()]  # one search of the run, not a test at each of its 70 places
    assert secret_shapes._may_hold_token(f"python {path}/hf_{'Ab3' * 11}") is True


# ------------------------------------------------------------------ the config's second read

KEYS = [
    "api_key",
    "password",
    "secrets",
    "token",
    "cache_dir",
    "path",
    "HF_TOKEN",
    "extra_args",
    "name",
    "dir",
]
TILDE = ["~", "~/", "~/x", "~/.cache/t3rl", "~user/x", "~/hf_" + "Ab3" * 11, "~/a b", "~/pw@host"]
OTHER = [
    "plain",
    "https://alice:s3cretpw1@host",
    "sk-" + "Ab3" * 8,
    "--api-key",
    "--token=V4lue99x",
    "-pS3cretpw",
    "mysql",
    "env:HF_TOKEN",
    "${oc.env:HF_TOKEN,fallback99}",
    "***",
]
LEAF = st.one_of(st.sampled_from(TILDE + OTHER), st.integers(-2, 2), st.booleans(), st.none())
CONFIG = st.recursive(
    LEAF,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)
    ),
    max_leaves=14,
)
# A home whose path itself reads as a credential's place once joined to a value (`user:pw@host`, a token).
HOMES = ["/home/alice", "/home/alice:pw123456@host", "/home/hf_" + "Zx9" * 11, "/"]


@contextmanager
def fresh(home: str) -> Iterator[set[str]]:
    """Nothing remembered, nothing last composed, HOME set: what each side of a comparison starts from."""
    saved = secrets._REMEMBERED, secrets._LAST_CONFIG[0], os.environ.get("HOME")
    secrets._REMEMBERED, secrets._LAST_CONFIG[0] = set(), None
    os.environ["HOME"] = home
    try:
        yield secrets._REMEMBERED
    finally:
        secrets._REMEMBERED, secrets._LAST_CONFIG[0] = saved[0], saved[1]
        if saved[2] is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = saved[2]


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.sampled_from(KEYS), CONFIG, max_size=5), st.sampled_from(HOMES))
def test_the_second_read_remembers_what_a_whole_read_remembers(composed: dict[str, Any], home: str) -> None:
    with fresh(home) as whole:
        remember_config(composed)
        remember_config(expand_home(composed))
    with fresh(home) as differing:
        remember_config(composed)
        remember_expanded(expand_home(composed), composed)
    assert differing == whole


def test_a_config_composed_elsewhere_is_read_whole() -> None:
    composed = {"hardware": {"env_vars": {"DB_PASSWORD": "~/pw"}}, "path": "~/x"}
    with fresh("/home/alice") as remembered:
        remember_expanded(expand_home(composed), {"hardware": {"env_vars": {"DB_PASSWORD": "~/pw"}}})
        assert remembered == {"/home/alice/pw"}
        remember_config({"other": 1})  # the last composition is another config
        remembered.clear()
        remember_expanded(expand_home(composed), composed)
        assert remembered == {"/home/alice/pw"}


def _leaves(data: Any) -> list[Any]:
    if isinstance(data, dict):
        return [leaf for value in data.values() for leaf in _leaves(value)]
    if isinstance(data, list):
        return [leaf for value in data for leaf in _leaves(value)]
    return [data]


def test_resolve_reads_the_composed_config_once_then_what_expand_home_changed(monkeypatch, tmp_path) -> None:
    from launch.checks.resolve import resolve

    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    monkeypatch.setenv("T3RL_COMPOSE_AHEAD", "0")
    monkeypatch.delenv("T3RL_CACHE_DIR", raising=False)  # paths.cache_dir: its default, `~/.cache/t3rl`
    monkeypatch.setenv("HOME", str(tmp_path))
    read: list[Any] = []
    original = secrets.secrets_in
    monkeypatch.setattr(secrets, "secrets_in", lambda data: read.append(data) or original(data))
    resolve(["+experiment=stage2_bfcl"])
    composed, expanded = read
    tilde = [leaf for leaf in _leaves(composed) if isinstance(leaf, str) and leaf.startswith("~/")]
    assert tilde and expanded["paths"] == {"cache_dir": f"{tmp_path}/.cache/t3rl"}
    # Only the strings expand_home changed (a path interpolated from paths.cache_dir too), not ~700 keys.
    assert sorted(_leaves(expanded)) == sorted(leaf.replace("~", str(tmp_path), 1) for leaf in tilde)


# ------------------------------------------------------------------ a text scrubbed again

TOKEN = "hf_" + "Qw7" * 11
# A credential that does not look random: its beginning alone is masked only once it is known as one
# (remembered or revealed), not while only the environment holds it (`_cuttable`).
PHRASE = "correct-horse-battery"
TEXT_PIECES = st.sampled_from(
    ["x", " ", "\n", "=", "pw=", "s3cr3tValue99", TOKEN[:14], TOKEN, PHRASE, PHRASE[:15]]
)
TEXTS = st.lists(TEXT_PIECES, max_size=6).map("".join)
STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("scrub"), TEXTS),
        st.tuples(st.just("remember"), st.sampled_from(["s3cr3tValue99", PHRASE, TOKEN[3:]])),
        st.tuples(st.just("reveal"), st.sampled_from(["s3cr3tValue99", PHRASE])),
        st.tuples(st.just("env"), st.sampled_from(["", "s3cr3tValue99", TOKEN, PHRASE])),
    ),
    max_size=12,
)


def unmemoized(text: str) -> str:
    """`scrub_text` as it was: every call a scan."""
    return mask_text(mask_values(text, secrets.secret_values(), secrets._cuttable))


@settings(max_examples=120, deadline=None)
@given(STEPS)
# The environment's credential, then known as one: its beginning is masked from then on.
@example([("env", PHRASE), ("scrub", PHRASE[:15]), ("reveal", PHRASE), ("scrub", PHRASE[:15])])
@example([("env", PHRASE), ("scrub", PHRASE[:15]), ("remember", PHRASE), ("scrub", PHRASE[:15])])
def test_a_text_scrubbed_again_is_masked_as_a_fresh_scan_masks_it(steps: list[tuple[str, str]]) -> None:
    saved = secrets._REMEMBERED, secret._REVEALED, os.environ.get("SERVICE_TOKEN")
    secrets._REMEMBERED, secret._REVEALED = set(), set()
    try:
        for step, value in steps:
            if step == "scrub":
                assert scrub_text(value) == unmemoized(value), value
            elif step == "remember":
                remember([value])
            elif step == "reveal":
                secret._REVEALED.add(value)
            else:
                os.environ["SERVICE_TOKEN"] = value
    finally:
        secrets._REMEMBERED, secret._REVEALED = saved[0], saved[1]
        if saved[2] is None:
            os.environ.pop("SERVICE_TOKEN", None)
        else:
            os.environ["SERVICE_TOKEN"] = saved[2]


def test_a_text_scrubbed_again_with_nothing_learnt_is_not_scanned_again(monkeypatch) -> None:
    scans: list[str] = []
    monkeypatch.setattr(secrets, "mask_text", lambda text: scans.append(text) or mask_text(text))
    message = "models/Qwen3-4B holds no config.json here: s3cr3tValue42 (a problem's text, made again)"
    assert scrub_text(message) == scrub_text(message) == message
    assert len(scans) == 1
    remember(["s3cr3tValue42"])  # learnt since: read again, and masked
    assert scrub_text(message) == message.replace("s3cr3tValue42", "***")
    assert len(scans) == 2


def test_the_memo_stays_small() -> None:
    for n in range(secrets._SCRUBBED_COUNT + 50):  # a long run's log lines, each new
        scrub_text(f"step {n}: loss 0.5")
    scrub_text("x" * (secrets._SCRUBBED_TEXT + 1))
    assert 0 < len(secrets._SCRUBBED) <= secrets._SCRUBBED_COUNT
    assert all(len(text) <= secrets._SCRUBBED_TEXT for text, *_ in secrets._SCRUBBED)
