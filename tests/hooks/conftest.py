"""The tiny Qwen3 chat format the fake episodes of slime_fakes play with (built once per test process)."""

from tests.rollout.fakes import qwen_chat  # noqa: F401
