"""A trajectory line is built as the bytes written (`record_bytes`), the same bytes the text-built line
encoded to: each ~90 KB BFCL line was decoded from orjson, joined as text, encoded for its digest and
encoded again by the text file it went to. The definition below is the text-built line as it was
written before, and the property draws records of every shape a line meets (token lists orjson writes
and those json writes: NaN, None, text, odd types; episode text; keys that are not text)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.eval import resume as resuming
from t3rl_core.eval import runner
from t3rl_core.eval.jsonl import LIST_FIELDS, masked_rest, record_bytes, record_line
from tests.support.eval_runs import bfcl_runtime, reference_config
from tests.support.tiny_stack import bfcl_rows


def text_built_line(record: dict[str, Any]) -> str:
    """The line as `record_line` built it as text before `record_bytes` (its definition, kept here: the
    record's masked JSON without its token lists, then each list's text joined to it as text)."""
    import orjson

    def list_text(values: list[Any]) -> str:
        try:
            text = orjson.dumps(values)
        except TypeError:
            return json.dumps(values, default=str)
        return json.dumps(values, default=str) if b"n" in text else text.decode()

    lists = {key: record[key] for key in LIST_FIELDS if type(record.get(key)) is list}
    rest = masked_rest(record, lists)
    if not lists:
        return rest + "\n"
    parts = [f"{json.dumps(key)}: {list_text(value)}" for key, value in lists.items()]
    return rest[:-1] + (", " if rest != "{}" else "") + ", ".join(parts) + "}\n"


_SCALARS = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.none(),
    st.booleans(),
    st.text(max_size=12),
)
_TOKEN_LISTS = st.one_of(
    st.lists(st.integers(0, 200_000), max_size=40),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=10),
    st.lists(_SCALARS, max_size=8),
    st.just([Path("odd"), 1]),
)
_MESSAGES = st.lists(
    st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text()}),
    max_size=4,
)


@st.composite
def records(draw: st.DrawFn) -> dict[str, Any]:
    record: dict[str, Any] = draw(
        st.dictionaries(st.sampled_from(["task_id", "error", "reward", "outcome", "seed"]), _SCALARS)
    )
    for key in draw(st.lists(st.sampled_from(LIST_FIELDS), unique=True)):
        record[key] = draw(_TOKEN_LISTS)
    if draw(st.booleans()):
        record["messages"] = draw(_MESSAGES)
    if draw(st.booleans()):
        record["response_text"] = draw(st.text())
    if draw(st.booleans()):
        record["outcome"] = {1: "int key", "path": Path("/tmp/x")}
    if draw(st.booleans()):  # a token list that is not a list is one of the other fields
        record["loss_mask"] = (1, 0)
    return dict(draw(st.permutations(list(record.items()))))


@settings(max_examples=300, deadline=None)
@given(records())
def test_the_bytes_are_the_text_built_line_encoded(record: dict[str, Any]) -> None:
    expected = text_built_line(record)
    assert record_bytes(record) == expected.encode()
    assert record_line(record) == expected


def test_a_bfcl_sized_record_is_the_same_line() -> None:
    record = {
        "task_id": "multi_turn_base_0",
        "messages": [{"role": "user", "content": "ünïcödé sk_live_" + "a" * 30}],
        "prompt_ids": list(range(12_000)),
        "response_ids": list(range(900)),
        "loss_mask": [1, 0] * 450,
        "log_probs": [0.0, -0.5, math.nan] * 300,
    }
    assert record_bytes(record) == text_built_line(record).encode()


def test_the_eval_writes_each_line_as_the_bytes_its_index_digests(tmp_path, monkeypatch) -> None:
    """The runner hands the file the line's bytes (not text for it to encode again), and the index
    holds their sha256: a resume verifies every line."""
    written: list[Any] = []
    write = resuming.write

    def kept(sink: Any, index: Any, key: Any, line: Any, *args: Any) -> None:
        written.append(line)
        write(sink, index, key, line, *args)

    monkeypatch.setattr(resuming, "write", kept)
    rows = bfcl_rows(per_category=1)[:3]
    asyncio.run(runner.run_eval(bfcl_runtime(), reference_config(2), rows, tmp_path, show_progress=False))
    assert written and all(type(line) is bytes for line in written)
    lines = (tmp_path / runner.TRAJECTORIES_FILE).read_bytes().splitlines(keepends=True)
    assert sorted(lines) == sorted(written)
    index = [json.loads(line) for line in (tmp_path / resuming.INDEX_FILE).read_text().splitlines()]
    assert sorted(entry["sha256"] for entry in index) == sorted(
        hashlib.sha256(line).hexdigest() for line in lines
    )
