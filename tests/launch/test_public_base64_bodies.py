"""A certificate's or a public key's body is public, however it is framed, wrapped or cut: no secret
rule may read it as a key. CI at 36bfa50 failed once in ~30 runs of test_secret_leaks_five because a
public key's body line began with `+` (one line in 32 does): the folded-key rule measured that line
from its first letter (63 wide, not PEM's 64) and joined the lines into a "key" pre-flight refused.

Bodies are drawn from a seeded generator (the same draws every run), hundreds per framing, so a rule
that misreads one body in 32 fails here every time; the private key's body beside each stays masked."""

from __future__ import annotations

import base64
import json
import random
from collections.abc import Callable

import pytest

from t3rl_core.secret import mask_text
from t3rl_core.secret_shapes import credentials_in

DRAWS = 300
PUBLIC_KINDS = ("PUBLIC KEY", "CERTIFICATE", "RSA PUBLIC KEY", "X509 CRL", "CERTIFICATE REQUEST")


def body_lines(rng: random.Random, width: int, low: int = 24, high: int = 700) -> list[str]:
    body = base64.b64encode(rng.randbytes(rng.randint(low, high))).decode()
    return [body[i : i + width] for i in range(0, len(body), width)]


def block(kind: str, lines: list[str], brk: str = "\n", indent: str = "") -> str:
    rows = [f"-----BEGIN {kind}-----", *lines, f"-----END {kind}-----"]
    return brk.join(indent + row for row in rows) + brk


FRAMINGS: dict[str, Callable[[str, random.Random], str]] = {
    "pem 64": lambda kind, rng: block(kind, body_lines(rng, 64)),
    "pem 76": lambda kind, rng: block(kind, body_lines(rng, 76)),
    "crlf": lambda kind, rng: block(kind, body_lines(rng, 64), "\r\n"),
    "json string": lambda kind, rng: json.dumps({"key": block(kind, body_lines(rng, 64))}),
    "yaml block": lambda kind, rng: "key: |\n" + block(kind, body_lines(rng, 64), indent="  "),
    "after prose": lambda kind, rng: "the service's key follows\n" + block(kind, body_lines(rng, 64)),
}


@pytest.mark.parametrize("framing", FRAMINGS)
def test_a_public_block_is_never_a_credential_and_a_private_one_always_is(framing: str) -> None:
    rng = random.Random(framing)
    for _ in range(DRAWS):
        kind = rng.choice(PUBLIC_KINDS)
        public = FRAMINGS[framing](kind, rng)
        assert credentials_in(public) == [], public
        assert mask_text(public) == public
        private = FRAMINGS[framing]("PRIVATE KEY", rng)
        rows = [row.strip() for row in private.replace("\\n", "\n").splitlines()]
        line = next(row for row in rows if row and not row.startswith(("-----", "key", "the", "{")))
        assert line not in mask_text(private), private


@pytest.mark.parametrize("width", [64, 76])
def test_a_wrapped_body_seen_without_its_begin_line_is_left_whole(width: int) -> None:
    """A log or a diff shows the middle of a body: each whole line of the wrap width, the shorter line
    that ends it, and MIME's 76-wide lines (a base64 attachment) are a body's, not keys."""
    rng = random.Random(width)
    for _ in range(DRAWS):
        lines = body_lines(rng, width, low=width, high=400)  # two lines at least
        text = "\n".join(lines) + "\n"
        assert credentials_in(text) == [], text
        assert mask_text(text) == text


def test_a_key_alone_on_its_line_is_still_masked() -> None:
    """What the wrapped-body rule leaves: a key shorter than a wrap width on its own line, after a line
    that is no base64 body's, and a 76-wide one with nothing wrapped below it."""
    rng = random.Random(0)
    for _ in range(DRAWS):
        short, wide = (
            "".join(rng.choice("ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz23456789") for _ in range(n))
            for n in (40, 76)
        )
        for key, text in ((short, f"note:\n{short}\n"), (short, f"{short}\n"), (wide, f"x\n{wide}\nend.\n")):
            if credentials_in(key):  # one random draw in ~50 does not read as random: not the point here
                assert credentials_in(text), text
