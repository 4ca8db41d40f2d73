"""The forms a JSONL arrives in, read by every reader of one (`t3rl_core/data/jsonl_lines.py`): gzip
(whatever its name) and a UTF-8 byte-order mark are read; one JSON document over several lines (a list
dumped with indent=2) is refused with the jq command that converts it, into another file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from t3rl_core.data.rows import DataError, read_jsonl
from tests.support.cli_app import invoke

_LINES = [{"id": str(n), "response": "<answer>\\boxed{4}</answer>", "answer": "4"} for n in range(2)]
_JSONL = "".join(json.dumps(line) + "\n" for line in _LINES).encode()


@pytest.mark.parametrize(
    ("name", "data", "scored"),
    [
        ("r.jsonl.gz", gzip.compress(_JSONL), "r.scored"),
        ("r.jsonl", gzip.compress(_JSONL), "r.scored"),  # compressed, its name says nothing
        ("r.jsonl", b"\xef\xbb\xbf" + _JSONL.replace(b"\n", b"\r\n"), "r.scored"),  # a Windows editor's
    ],
    ids=["gz", "gz-unnamed", "bom-crlf"],
)
def test_a_compressed_or_bom_file_is_scored(here: Path, name: str, data: bytes, scored: str) -> None:
    """Were: 'UnicodeDecodeError … byte 0x8b' and 'Unexpected UTF-8 BOM' on every line (exit 1)."""
    (here / name).write_bytes(data)
    result = invoke(["score", "retool", name, "--no-progress"])
    assert result.exit_code == 0 and "2 scored, 0 failed" in result.output, result.output
    assert (here / scored / "verdicts.jsonl").read_text().count("\n") == 2
    assert [row["id"] for _, row in read_jsonl(here / name)] == ["0", "1"]


@pytest.mark.parametrize(
    ("name", "text", "shown"),
    [
        ("r.jsonl", json.dumps(_LINES), "jq -c '.[]' r.jsonl > r.lines.jsonl"),
        ("r.json", json.dumps(_LINES, indent=2), "jq -c '.[]' r.json > r.jsonl"),
        ("r.jsonl", json.dumps(_LINES[0], indent=2), "jq -c . r.jsonl > r.lines.jsonl"),
    ],
    ids=["array-one-line", "array-indented", "object-indented"],
)
def test_one_json_document_is_refused_with_its_conversion(
    here: Path, name: str, text: str, shown: str
) -> None:
    """Were: every line failed to score ('a line must be a JSON object', or not JSON) and exit 1 with a
    scored dir written; the conversion never names its own input as output (jq's `>` empties it first)."""
    (here / name).write_text(text)
    result = invoke(["score", "retool", name, "--no-progress"], COLUMNS="400")
    assert result.exit_code == 2 and shown in result.output, result.output
    assert sorted(p.name for p in here.iterdir()) == [name]
    with pytest.raises(DataError, match="not one JSON object per line"):
        list(read_jsonl(here / name))


def test_a_damaged_gzip_file_is_named(here: Path) -> None:
    (here / "r.jsonl.gz").write_bytes(gzip.compress(_JSONL)[:30])
    result = invoke(["score", "retool", "r.jsonl.gz", "--no-progress"], COLUMNS="400")
    assert result.exit_code == 2 and "r.jsonl.gz is a damaged gzip file" in result.output, result.output
    with pytest.raises(DataError, match="damaged gzip"):
        list(read_jsonl(here / "r.jsonl.gz"))
