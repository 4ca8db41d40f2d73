"""Kinds of evals that measured different things under the same benchmark identity before: each variant
of a real eval (the scripted reference engine on BFCL) must differ from the base eval in the part named,
and what is only a draw of the same measurement (the seed, the concurrency) must not.

Each case failed before the identity recorded its part (budget, decoding, protocol, coverage, the
scorer's sources, the reward behind a reward-defined success)."""

from __future__ import annotations

import asyncio
import importlib
import sys
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from t3rl_core.config import RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.eval.identity import differences, scorer_record, success_definition
from t3rl_core.eval.published import PublishedConfig
from t3rl_core.eval.runner import run_eval
from t3rl_core.eval.verdict import NOT_COMPARABLE, REPRODUCED, verdicts
from tests.support.eval_runs import bfcl_runtime, count_episodes, reference_config
from tests.support.tiny_stack import bfcl_rows


@cache  # on first use: built at import, BFCL's 800 rows cost every xdist worker ~1.5 s of CPU to collect this
def rows() -> list[dict[str, Any]]:
    return bfcl_rows(per_category=1)


def evaluate(out: Path, runtime: RuntimeConfig | None = None, **settings: Any) -> dict[str, Any]:
    config = reference_config(**{"concurrency": 1, **settings})
    return asyncio.run(run_eval(runtime or bfcl_runtime(), config, rows(), out, show_progress=False))


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return evaluate(tmp_path_factory.mktemp("base"))["identity"]


def _with(runtime: RuntimeConfig, section: str, **update: Any) -> RuntimeConfig:
    part = getattr(runtime, section)
    return runtime.model_copy(update={section: part.model_copy(update=update)})


VARIANTS = {
    "fewer tokens per call": ({"max_new_tokens": 2048}, None, "budget: max_new_tokens 32768 vs 2048"),
    "fewer model calls": ({"max_num_steps": 3}, None, "budget: max_num_steps"),
    "a context cap": ({}, ("rollout", {"max_context_len": 4096}), "budget: max_context_len null vs 4096"),
    "sampled, not greedy": ({"temperature": 0.7}, None, "decoding: temperature 0.0 vs 0.7"),
    "thinking switched off": (
        {},
        ("chat", {"chat_template_kwargs": {"enable_thinking": False}}),
        "protocol: chat_sha256",
    ),
    "another reasoning parser": ({}, ("parsers", {"reasoning_parser": "deepseek-r1"}), "protocol: reasoning"),
}


@pytest.mark.parametrize("name", list(VARIANTS))
def test_an_eval_of_other_settings_is_another_benchmark(name: str, base: dict, tmp_path: Path) -> None:
    settings, runtime_update, expected = VARIANTS[name]
    runtime = bfcl_runtime()
    if runtime_update is not None:
        section, update = runtime_update
        runtime = _with(runtime, section, **update)
    found = differences(base, evaluate(tmp_path, runtime, **settings)["identity"])
    assert any(part.startswith(expected) for part in found), found


def test_top_p_counts_only_when_sampled(tmp_path: Path) -> None:
    sampled = evaluate(tmp_path / "a", temperature=0.7)["identity"]
    nucleus = evaluate(tmp_path / "b", temperature=0.7, top_p=0.9)
    assert differences(sampled, nucleus["identity"]) == ["decoding: top_p 1.0 vs 0.9"]
    assert nucleus["sampling"]["top_p"] == 0.9  # the summary says what the engine was asked for
    greedy = evaluate(tmp_path / "c", top_p=0.9)["identity"]
    assert [d for d in differences(sampled, greedy) if d.startswith("decoding")] == [
        "decoding: temperature 0.7 vs 0.0"
    ]


def test_a_draw_of_the_same_measurement_stays_comparable(base: dict, tmp_path: Path) -> None:
    assert differences(base, evaluate(tmp_path / "seed", seed=7)["identity"]) == []
    assert differences(base, evaluate(tmp_path / "slots", concurrency=4)["identity"]) == []


def abort_third_call(monkeypatch: pytest.MonkeyPatch, engine: type[ReferenceEngine]) -> None:
    """The reference engine fails its third call (the second task's first turn at concurrency 1)."""
    original = engine._reply
    calls = []

    async def reply(self: ReferenceEngine, input_ids: list[int], sampling: Any, context: Any) -> Generation:
        calls.append(1)
        if len(calls) == 3:
            return Generation([], [], "abort", error="injected")
        return await original(self, input_ids, sampling, context)

    monkeypatch.setattr(engine, "_reply", reply)


@pytest.fixture
def one_call_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    abort_third_call(monkeypatch, ReferenceEngine)


@pytest.mark.usefixtures("one_call_aborts")
def test_an_incomplete_eval_is_another_benchmark(base: dict, tmp_path: Path) -> None:
    summary = evaluate(tmp_path)
    assert summary["complete"] is False
    (found,) = [part for part in differences(base, summary["identity"]) if part.startswith("coverage")]
    assert "complete true vs false" in found


def test_engine_failures_within_the_rate_leave_fewer_tasks(
    base: dict, tmp_path: Path, one_call_aborts
) -> None:
    summary = evaluate(tmp_path, max_engine_failure_rate=0.5)
    assert summary["complete"] is True
    (found,) = differences(base, summary["identity"])
    assert found == "coverage: unscored 0 vs 1", found


def test_a_scorer_without_a_version_is_identified_by_its_sources(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "own_scorer_h47"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = package / "env.py"
    source.write_text("class OwnEnv:\n    name = 'own'\n\nTHRESHOLD = 1.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    module = importlib.import_module("own_scorer_h47.env")
    reward = SimpleNamespace()
    before = scorer_record(module.OwnEnv(), reward)
    assert before["version"] is None and before["source_sha256"]
    source.write_text("class OwnEnv:\n    name = 'own'\n\nTHRESHOLD = 0.5\n")
    after = scorer_record(module.OwnEnv(), reward)
    assert differences({"scorer": before}, {"scorer": after})[0].startswith("scorer: source_sha256")
    sys.modules.pop("own_scorer_h47.env")


def test_t3rl_own_scorers_carry_their_sources() -> None:
    from t3rl_core.envs.toolrl.config import ToolRLEnvConfig

    env = ToolRLEnvConfig.model_validate({"data": {"splits": {"train": "train.parquet"}}})
    record = scorer_record(env, bfcl_runtime().reward)
    assert record["package"] == "t3rl" and len(record["source_sha256"]) == 64


def test_a_success_defined_by_the_reward_names_its_settings() -> None:
    from t3rl_core.rewards.retool import ReToolRewardConfig

    records = [{"reward_metrics": {}}]
    reward = ReToolRewardConfig()
    assert success_definition(records, reward) == success_definition(records, ReToolRewardConfig())
    other = ReToolRewardConfig(end_of_turn="<|eot_id|>")
    assert success_definition(records, reward) != success_definition(records, other)
    verdict = [{"reward_metrics": {"accuracy": 1.0}}]  # the env's own verdict does not depend on it
    assert success_definition(verdict, reward) == success_definition(verdict, other)


RESUMED_CHANGES = {
    "the rollout's top_p under a sampled eval": ("rollout", {"top_p": 0.5}),
    "another reasoning parser": ("parsers", {"reasoning_parser": "deepseek-r1"}),
    "a context cap": ("rollout", {"max_context_len": 4096}),
    "a response cap": ("rollout", {"max_response_len": 4096}),
}


@pytest.mark.parametrize("name", list(RESUMED_CHANGES))
def test_a_resumed_eval_of_changed_settings_runs_its_episodes_again(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    evaluate(tmp_path, temperature=0.7)
    played = count_episodes(monkeypatch)
    section, update = RESUMED_CHANGES[name]
    config = reference_config(concurrency=1, temperature=0.7)
    runtime = _with(bfcl_runtime(), section, **update)
    asyncio.run(run_eval(runtime, config, rows(), tmp_path, resume=True, show_progress=False))
    assert len(played) == len(rows())  # none of the first part's episodes is kept


def _published(**metric: Any) -> PublishedConfig:
    result = {"label": "claim", "model": "m", "benchmark": "b", "split": "bfcl_test", "metric": metric}
    result |= {"values": [{"scope": "overall", "value": 1.0}], "source": "s"}
    return PublishedConfig.model_validate({"target": "claim", "results": [result]})


PUBLISHED_SETTINGS = {
    "tokens per call": (
        {"max_new_tokens": 2048},
        {},
        "another max_new_tokens: published 2048, this eval 32768",
    ),
    "model calls": (
        {"max_num_steps": 10},
        {"max_num_steps": 3},
        "another max_num_steps: published 10, this eval 3",
    ),
    "nucleus": ({"top_p": 0.95}, {"temperature": 0.7}, "another top_p: published 0.95, this eval 1.0"),
}


@pytest.mark.parametrize("name", list(PUBLISHED_SETTINGS))
def test_a_published_number_of_other_settings_gets_no_verdict(name: str, tmp_path: Path) -> None:
    declared, settings, expected = PUBLISHED_SETTINGS[name]
    (verdict,) = verdicts(evaluate(tmp_path, **settings), _published(**declared))
    assert verdict["status"] == NOT_COMPARABLE and any(why.startswith(expected) for why in verdict["why"])


def test_a_published_number_of_the_same_settings_gets_its_verdict(tmp_path: Path) -> None:
    summary = evaluate(tmp_path, temperature=0.7, top_p=0.95)
    declared = {"max_new_tokens": 32768, "max_num_steps": summary["max_num_steps"], "top_p": 0.95}
    (verdict,) = verdicts(summary, _published(temperature=0.7, **declared))
    assert verdict["status"] == REPRODUCED, verdict.get("why")


@pytest.mark.usefixtures("one_call_aborts")
def test_a_published_number_against_an_eval_that_left_tasks_unscored(tmp_path: Path) -> None:
    summary = evaluate(tmp_path, max_engine_failure_rate=0.5)
    (verdict,) = verdicts(summary, _published())
    assert verdict["status"] == NOT_COMPARABLE
    assert verdict["why"] == [
        "1 task(s) have no scored episode (the engine failed every one, within "
        "eval.max_engine_failure_rate): rerun them with --resume"
    ]


def test_a_resumed_eval_scored_by_another_checker_version_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from t3rl_core.eval import identity

    evaluate(tmp_path)
    played = count_episodes(monkeypatch)
    monkeypatch.setattr(identity, "version", lambda name: "1999.1.1")  # bfcl-eval upgraded in between
    summary = asyncio.run(
        run_eval(
            bfcl_runtime(),
            reference_config(concurrency=1),
            rows(),
            tmp_path,
            resume=True,
            show_progress=False,
        )
    )
    assert len(played) == len(rows()) and summary["identity"]["scorer"]["version"] == "1999.1.1"


def test_the_report_lists_every_part_of_the_identity(tmp_path: Path) -> None:
    from t3rl_core.eval.report import render_markdown

    text = render_markdown(evaluate(tmp_path, temperature=0.7, max_num_steps=3))
    assert "| budget | `max_new_tokens=32768, max_num_steps=3, max_context_len=None" in text
    assert "| decoding | `temperature=0.7, top_p=1.0, top_k=-1` |" in text
    assert "| protocol | `chat_sha256=" in text and "tool_call_parser=qwen25" in text
    assert "| coverage | `complete=True, unscored=0` |" in text
