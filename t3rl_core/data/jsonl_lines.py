"""The lines of a JSONL file as users hand them over: gzip-compressed (`trajectories.jsonl.gz`), saved by
an editor that starts UTF-8 with a byte-order mark, or not JSONL at all but one JSON document (a list
dumped with `json.dump(rows, f, indent=2)`). Every reader of a JSONL a user gives reads it here, so each
of them reads the first two and names the third with the command that converts it.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

from t3rl_core import outside_json
from t3rl_core.counts import counted

# gzip's magic number (RFC 1952): the first two bytes of every gzip member.
_GZIP = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"


class NotJsonl(ValueError):
    """A file that holds one JSON document over several lines, not one JSON value per line."""


def file_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed when it is gzip (whatever its name), without a leading UTF-8 BOM
    (Windows editors write one; `json.loads` refuses it). OSError when it cannot be read."""
    data = path.read_bytes()
    if data.startswith(_GZIP):
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:  # a truncated download, a damaged member
            raise OSError(f"{path} is a damaged gzip file ({err})") from None
    return data.removeprefix(_BOM)


def numbered_lines(path: Path) -> list[tuple[int, bytes]]:
    """(line number, bytes) of every non-blank line, numbered as an editor numbers them (blank lines
    count; only \\n, \\r and \\r\\n end a line); NotJsonl for a file that is one JSON document."""
    data = file_bytes(path)
    lines = data.splitlines()
    numbered = [(number, raw) for number, raw in enumerate(lines, 1) if raw.strip()]
    # A JSONL's first line is an object by itself: only a file whose first line is not is parsed whole
    # (a prepared split of thousands of rows is read at every stage's start).
    if numbered and not _an_object(numbered[0][1]) and _one_document(data):
        over = f" over {counted(len(lines), 'line')}" if len(numbered) > 1 else ""
        raise NotJsonl(
            f"{path} holds one JSON {_kind(data)}{over}, not one JSON object per line: "
            f"convert it with `jq -c {_jq(data)} {path} > {_converted(path)}`"
        )
    return numbered


def _an_object(line: bytes) -> bool:
    try:
        return isinstance(outside_json.loads(line, "the line"), dict)
    except ValueError:  # no JSON, or past the limit on what is read from outside (OutsideJsonError)
        return False


def _one_document(data: bytes) -> bool:
    """Whether the whole text parses as one JSON array or object."""
    try:
        return isinstance(outside_json.loads(data, "the file"), list | dict)
    except ValueError:  # no JSON, or past the limit on what is read from outside (OutsideJsonError)
        return False


def _kind(data: bytes) -> str:
    return "array" if data.lstrip().startswith(b"[") else "object"


def _jq(data: bytes) -> str:
    """jq's filter that prints the document one JSON value per line."""
    return "'.[]'" if data.lstrip().startswith(b"[") else "."


def _converted(path: Path) -> Path:
    """Where the converted file goes: never `path` itself (`jq … f.jsonl > f.jsonl` empties it first)."""
    converted = path.with_suffix(".jsonl")
    return converted if converted != path else path.with_name(f"{path.stem}.lines.jsonl")
