"""A function's calls, recorded while it goes on working: what the tests of "done once" count."""

from __future__ import annotations

from typing import Any

import pytest


def calls_of(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[tuple[Any, ...]]:
    """The positional arguments of each call of `owner.name` from now on; each call still runs the real
    one and returns what it returns (the patch ends with the test, as `monkeypatch` undoes it)."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(owner, name)

    def recording(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, recording)
    return calls
