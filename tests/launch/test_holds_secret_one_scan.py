"""launch.config.secrets.holds_secret (the composition cache's refusal to store a secret) decides without
building the scrubbed copy: whole entries first, then every text in one joined scrub. Whatever the data
holds, its answer is the definition's, `scrub_obj(data) != data` (adversarial data: credential shapes, URL
passwords, secret keys, subtrees and flags, `${oc.env:NAME,fallback}` under credential names, the mask
itself, vocabulary tokens, texts cut at the joins). And `holds_referenced_value`, which reads the
references of the config joined, finds what reading each text finds."""

from __future__ import annotations

import os
import re
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from launch.config.secrets import _known, _scrub, holds_referenced_value, holds_secret
from tests.launch.test_credentials_one_scan import PIECES
from tests.launch.test_scrub_texts import MORE, SECRET

KEYS = (
    "api_key",
    "token",
    "password",
    "secrets",
    "env_vars",
    "runtime_env",
    "HF_TOKEN",
    "DB_PASS",
    "MODEL_OPTS",
    "eos_token",
    "hf_id",
    "args",
    "name",
    "key",
    "sort_key",
    "monkey",
    SECRET,
)
VALUES = (
    "***",
    "",
    "<|im_end|>",
    "--api-key",
    "--token=abc123def456",
    "--token",
    "-x",
    "${oc.env:DB_PASS,hunter2hunter2}",
    "${oc.env:T3RL_TEST_REFERENCED}",
    "env:T3RL_TEST_REFERENCED",
    "a1B2c3D4e5F6g7H8i9J0",
    "-----BEGIN PRIVATE KEY-----\nMIIabc\n-----END PRIVATE KEY-----",
    "postgres://u:pw1234@db/x",
    "r3ferencedValue",
)
TEXT = st.one_of(st.sampled_from(VALUES), st.lists(st.sampled_from(PIECES + MORE), max_size=4).map("".join))
SCALAR = st.one_of(TEXT, st.none(), st.booleans(), st.integers(-2, 123456), st.sampled_from([0.5, 1e-6]))
KEY = st.one_of(st.sampled_from(KEYS), TEXT, st.integers(0, 3))
DATA = st.recursive(
    SCALAR,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(KEY, inner, max_size=4),
    ),
    max_leaves=14,
)
ENV = {"T3RL_TEST_REFERENCED": "r3ferencedValue"}


# 600 examples earned (derandomized): with 400, holds_secret without its check of flag values (`--token V`
# in a list) passes this property and test_scrub_obj_one_scan's; with 500 both fail. Five other mutants of
# holds_secret die at 200 (3) or survive at 600 as well (2).
@given(DATA)
@settings(max_examples=600, deadline=None)
def test_the_same_answer_as_scrubbing_a_copy(data: Any) -> None:
    # The definition: every text scrubbed on its own (scrub_obj itself now asks holds_secret first).
    assert holds_secret(data, [SECRET]) == (_scrub(data, frozenset([SECRET]) | _known(), "") != data)


def test_each_kind_is_found() -> None:
    """The examples above are not all clean: each kind on its own is refused, its neighbours are not."""
    assert holds_secret({"api_key": "abc"}, [])
    assert holds_secret({"secrets": {"a": 1}}, [])
    assert holds_secret(["--api-key", "abc"], [])
    assert holds_secret({"MODEL_OPTS": "x " + PIECES[0]}, [])
    # A fallback under a credential's name is remembered by composition (remember_config), then found.
    fallback = {"hardware": {"env_vars": {"DB_PASS": "${oc.env:DB_PASS,hunter2hunter2}"}}}
    assert holds_secret(fallback, ["hunter2hunter2"]) and not holds_secret(fallback, [])
    assert holds_secret({"a": "x", "b": f"run-{SECRET}"}, [SECRET])
    assert not holds_secret({"api_key": "***", "eos_token": "<|im_end|>", "key": "${oc.env:X}"}, [])
    assert not holds_secret([{"name": "sort_key"}, ["--api-key", "env:KEY"]], [])


def _referenced_each(text: str) -> list[str]:
    """What one text's references point at, read on its own (the definition)."""
    found = [os.environ.get(name, "") for name in re.findall(r"\$\{oc\.env:([A-Za-z_][A-Za-z0-9_]*)", text)]
    kind, _, target = text.partition(":")
    return [*found, os.environ.get(target, "")] if kind == "env" else found


def _texts(obj: Any) -> list[str]:
    if isinstance(obj, dict):
        return [t for k, v in obj.items() for t in (str(k), *_texts(v))]
    if isinstance(obj, list | tuple):
        return [t for v in obj for t in _texts(v)]
    return [obj] if isinstance(obj, str) else []


@given(DATA, DATA)
@settings(max_examples=400, deadline=None)
def test_referenced_values_found_as_reading_each_text_finds_them(config: Any, other: Any) -> None:
    own = _texts(config)
    with mock.patch.dict(os.environ, ENV):
        values = {v for text in own for v in _referenced_each(text) if len(v) >= 6}
        expected = any(v in text for v in values for text in [*own, *_texts([other])])
        assert holds_referenced_value(config, other) == expected
