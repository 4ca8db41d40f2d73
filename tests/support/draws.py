"""Random test data that is the same on every run: a stand-in for the `secrets` module's drawing
functions, seeded by the running test's id.

Tests that plant "a random value of no known form" drew it from `secrets`, a new value each run. Whether
a drawn value reads as a credential is itself a matter of chance (24 random letters and digits hold no
digit one time in 70: `password: <value>` is then no credential by its look, docs/how-to/secrets.md
"Limits"), so such a module failed one run in 20 to 30 with nothing changed (CI at 36bfa50: a public key's
body line that began with `+`). Drawn from here, each test gets its own values (seeded by its node id,
whichever tests ran before it and on whichever worker) and the same ones every run: a failure is one
anyone can rerun. Where a test is about every value of a kind, it draws many from here (hundreds per
property, as tests/launch/test_public_base64_bodies.py does), not one new value per CI run.

tests/architecture/test_seeded_draws.py refuses test data drawn from `secrets` or an unseeded `random`.
"""

from __future__ import annotations

import base64
import os
import random
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")


class SeededDraws:
    """`choice`, `randbelow`, `token_bytes`, `token_hex` and `token_urlsafe` as `secrets` has them, from a
    `random.Random` seeded by `salt` and the running test's node id (`PYTEST_CURRENT_TEST`; at import, by
    `salt` alone)."""

    def __init__(self, salt: str) -> None:
        self._salt = salt
        self._test: str | None = None
        self._random = random.Random(salt)

    def rng(self) -> random.Random:
        """The running test's generator: a fresh one, seeded by its node id, when the test changed."""
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" (", 1)[0]  # less its phase, `(call)`
        if test != self._test:
            self._test = test
            self._random = random.Random(f"{self._salt}::{test}")
        return self._random

    def choice(self, items: Sequence[T]) -> T:
        return self.rng().choice(items)

    def randbelow(self, n: int) -> int:
        return self.rng().randrange(n)

    def token_bytes(self, n: int = 32) -> bytes:
        return self.rng().randbytes(n)

    def token_hex(self, n: int = 32) -> str:
        return self.token_bytes(n).hex()

    def token_urlsafe(self, n: int = 32) -> str:
        return base64.urlsafe_b64encode(self.token_bytes(n)).rstrip(b"=").decode()
