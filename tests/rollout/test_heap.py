"""The first runner of a process freezes its start-up heap out of the collector's way, once."""

from __future__ import annotations

import gc

import pytest

import t3rl_core.rollout.heap as heap


@pytest.mark.parametrize(("before", "after"), [(700, heap.YOUNG_THRESHOLD), (500_000, 500_000)])
def test_the_start_up_heap_is_frozen_once(monkeypatch: pytest.MonkeyPatch, before: int, after: int) -> None:
    calls: list[str] = []
    thresholds = [(before, 10, 10)]
    monkeypatch.setattr(heap, "_frozen", False)
    monkeypatch.setattr(gc, "collect", lambda *args: calls.append("collect") or 0)
    monkeypatch.setattr(gc, "freeze", lambda: calls.append("freeze"))
    monkeypatch.setattr(gc, "get_threshold", lambda: thresholds[-1])
    monkeypatch.setattr(gc, "set_threshold", lambda *values: thresholds.append(values))
    heap.freeze_startup_heap()
    heap.freeze_startup_heap()
    assert calls == ["collect", "freeze"]
    assert thresholds[1:] == [(after, 10, 10)]  # raised, never lowered


def test_building_a_runner_freezes_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    from t3rl_core.chat.tiny import shared_tokenizer_dir
    from t3rl_core.config import RuntimeConfig
    from t3rl_core.engines.config import ReferenceEngineConfig
    from t3rl_core.engines.reference import ReferenceEngine
    from t3rl_core.rollout.runner import EpisodeRunner

    frozen: list[bool] = []
    monkeypatch.setattr("t3rl_core.rollout.runner.freeze_startup_heap", lambda: frozen.append(True))
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": "bfcl_multi_turn"},
            "reward": {"name": "progress"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    from t3rl_core.chat.format import ChatFormat

    chat = ChatFormat.from_config(runtime.chat)
    EpisodeRunner.from_runtime(runtime, ReferenceEngine(ReferenceEngineConfig(), chat=chat), chat=chat)
    assert frozen == [True]
