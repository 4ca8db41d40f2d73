"""Hunt wave 4 (secrets): a known value in the forms other programs write it.

A value a `Secret` revealed (or a secret-named variable holds) was masked as written and in the forms
Python's own encoders give it (`json.dumps`, `urllib.parse.quote`, `repr`, `shlex.quote`, base64). Three
ways it still reached a file or the terminal:

- cut short by a view (`rollouts show`, a table cell: its beginning and an ellipsis): `mask_revealed`
  handed `mask_values` a generator, which its first pass used up, so the cut-short pass saw no value;
- escaped by another program's encoder, as an HTTP error body or a gateway's log echoes it: JSON's
  `\\/` (PHP, some Java), `\\uXXXX` in either case (Go escapes `&<>`, .NET `+` and non-ASCII in
  capitals), a URL's `%xx` in lower case;
- in a server's log through its copier (`t3rl_core.redact`, in front of every server started with a
  key): it masked the bytes as typed only, so SGLang's `ServerArgs(api_key='…')`, a repr that doubles
  a backslash, a JSON line and a cut-short beginning kept the key in server.log.
"""

from __future__ import annotations

import pytest

from t3rl_core import secret
from t3rl_core.secret import mask_revealed

PHRASE = "tulip garden is blooming 1987 again"  # no form of its own: only the Secret says what it is


def test_a_revealed_value_cut_short_by_a_view_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret, "_REVEALED", {PHRASE})
    for shown in (f"key: {PHRASE[:16]}… (more)", f"key: …{PHRASE[-16:]}"):
        masked = mask_revealed(shown)
        assert "tulip garden is" not in masked and "1987 again" not in masked, masked
    assert mask_revealed("a tulip gard… (more)") == "a tulip gard… (more)"  # under 12: too short to be it
