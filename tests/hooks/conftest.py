"""The tiny Qwen3 chat format the fake episodes of slime_fakes play with (built once per test process)."""

import pytest

from tests.rollout.fakes import qwen_chat  # noqa: F401


@pytest.fixture(scope="module")
def torch_in_module(request: pytest.FixtureRequest) -> None:
    """torch bound as `torch` in the asking test module (its tests skipped without it): imported when they
    run, not when the module is collected (~1.5 s per process, and every xdist worker collects the whole
    suite). Forked processes of a test inherit it."""
    request.module.torch = pytest.importorskip("torch")
