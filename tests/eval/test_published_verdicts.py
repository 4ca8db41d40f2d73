"""Recipes' published results: the verdict of a real eval (the reference engine on BFCL rows, perfect
and with every call made malformed) against declared results, each way a result fails to compare, and the
declarations shipped with the seed experiments."""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from pathlib import Path

import pytest
from pydantic import ValidationError

from t3rl_core.config import RuntimeConfig
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.published import PublishedConfig
from t3rl_core.eval.runner import run_eval
from t3rl_core.eval.verdict import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, headline, one_line, verdicts
from tests.support.eval_runs import bfcl_runtime
from tests.support.tiny_stack import bfcl_rows, write_jsonl

CATEGORIES = ["multi_turn_base", "multi_turn_long_context", "multi_turn_miss_func", "multi_turn_miss_param"]


def _result(label: str, value: float, **kw) -> dict:
    return {
        "label": label,
        "model": "some model",
        "benchmark": "BFCL multi-turn, 8 test tasks",
        "split": "bfcl_test",
        "values": [{"scope": "overall", "value": value, "tasks": 8}],
        "source": "a test",
        **kw,
    }


@pytest.fixture(scope="module")
def runtime() -> RuntimeConfig:
    return bfcl_runtime()


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(bfcl_rows(per_category=2), tmp_path_factory.mktemp("data") / "bfcl_test.jsonl")


def _evaluate(runtime: RuntimeConfig, data: Path, out: Path, published: dict, **engine) -> dict:
    from t3rl_core.eval.runner import load_rows

    config = EvalConfig.model_validate(
        {"engine": {"name": "reference", **engine}, "concurrency": 4, "published": published}
    )
    return asyncio.run(
        run_eval(runtime, config, load_rows(data), out, data_path=str(data), show_progress=False)
    )


def test_a_real_eval_is_reproduced_not_reproduced_or_not_comparable(runtime, data, tmp_path):
    from t3rl_core.eval.records import file_sha256

    sha = file_sha256(data)
    published = {
        "target": "matches",
        "results": [
            _result(
                "matches",
                0.95,
                data_sha256=sha,
                scorer={"package": "bfcl-eval", "version": version("bfcl-eval")},
            ),
            _result("far below", 0.3),
            _result("other split", 1.0, split="bfcl_unseen"),
            _result("other data", 1.0, data_sha256="0" * 64),
            _result("old scorer", 1.0, scorer={"package": "bfcl-eval", "version": "2024.1.1"}),
            _result("pass@4", 1.0, metric={"name": "pass@k", "k": 4, "samples": 4}),
            _result("greedy only", 1.0, metric={"temperature": 0.7}),
            _result("three categories", 1.0, metric={"categories": CATEGORIES[:3]}),
            _result("400 tasks", 1.0, values=[{"scope": "overall", "value": 1.0, "tasks": 400}]),
            _result("a category", 1.0, values=[{"scope": "multi_turn_base", "value": 1.0, "tasks": 2}]),
        ],
    }
    summary = _evaluate(runtime, data, tmp_path / "perfect", published)
    assert summary["overall"]["accuracy"] == 1.0 and summary["overall"]["tasks"] == 8
    found = {v["label"]: v for v in summary["published"]["verdicts"]}
    assert found["matches"]["status"] == REPRODUCED and found["matches"]["role"] == "target"
    low, high = found["matches"]["interval"]
    assert low < 0.95 <= high == 1.0
    assert found["far below"]["status"] == NOT_REPRODUCED and found["far below"]["gap"] == pytest.approx(0.7)
    assert found["a category"]["status"] == REPRODUCED
    why = {label: " ".join(v.get("why", [])) for label, v in found.items()}
    assert "another split: published on bfcl_unseen, this eval ran bfcl_test" in why["other split"]
    assert "other data" in why["other data"] and sha[:12] in why["other data"]
    assert "another scorer version" in why["old scorer"] and "2024.1.1" in why["old scorer"]
    assert "another k" in why["pass@4"]
    assert "another temperature" in why["greedy only"]
    assert "other categories" in why["three categories"]
    assert "another task count: published over 400 tasks, this eval over 8" in why["400 tasks"]
    for label in ("other split", "other data", "old scorer", "pass@4", "greedy only", "three categories"):
        assert found[label]["status"] == NOT_COMPARABLE, label
    assert one_line(headline(summary["published"]["verdicts"])).startswith(
        "published 0.950 (matches accuracy): reproduced"
    )
    report = (tmp_path / "perfect" / "summary.json").read_text()
    assert '"not comparable"' in report

    # Every call malformed: the same declaration is now far above what was measured.
    broken = _evaluate(runtime, data, tmp_path / "broken", published, faults={"malformed_json": 1.0})
    assert broken["overall"]["accuracy"] == 0.0
    assert {v["label"]: v["status"] for v in broken["published"]["verdicts"]}["matches"] == NOT_REPRODUCED


def test_an_incomplete_eval_and_a_foreign_benchmark_are_not_comparable() -> None:
    published = PublishedConfig.model_validate(
        {"results": [_result("elsewhere", 0.5, split=None, benchmark="AIME 2024"), _result("here", 0.5)]}
    )
    summary = {
        "complete": False,
        "reason": "the engine failed",
        "split": "bfcl_test",
        "pass_k": [1],
        "temperature": 0.0,
        "overall": {"tasks": 8, "accuracy": 0.5},
        "categories": {},
    }
    found = verdicts(summary, published)
    assert [v["status"] for v in found] == [NOT_COMPARABLE, NOT_COMPARABLE]
    assert any("which no t3rl split holds" in reason for reason in found[0]["why"])
    assert any("incomplete" in reason for reason in found[1]["why"])
    assert headline(found) is None  # no target declared


def test_a_user_simulator_mismatch_is_named() -> None:
    published = PublishedConfig.model_validate(
        {"results": [_result("tau2", 0.5, user_simulator={"model": "gpt-4.1-mini", "temperature": 0.7})]}
    )
    summary = {
        "complete": True,
        "split": "bfcl_test",
        "pass_k": [1],
        "temperature": 0.0,
        "identity": {
            "user_simulator": {"name": "llm", "model": "Qwen/Qwen3-4B-Instruct-2507", "temperature": 0.7}
        },
        "overall": {"tasks": 8, "accuracy": 0.5},
        "categories": {},
    }
    (verdict,) = verdicts(summary, published)
    assert verdict["why"] == [
        "another user simulator: published with gpt-4.1-mini, this eval with Qwen/Qwen3-4B-Instruct-2507"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"target": "nobody"}, "none of the results' labels"),
        ({"results": [_result("a", 0.5), _result("a", 0.6)]}, "unique"),
        ({"results": [_result("a", 60.0)]}, "less than or equal to 1"),
        ({"results": [_result("a", 0.5, data_sha256="abc")]}, "sha256"),
        ({"tolerance": {"confidence": 1.0}}, "less than 1"),
        ({"tolerance": {"margin": float("nan")}}, "finite"),
    ],
)
def test_declarations_are_checked(change: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        PublishedConfig.model_validate({"results": [_result("a", 0.5)], **change})


SEEDS = [
    "stage1_bfcl",
    "stage2_bfcl",
    "bfcl_env_tuning",
    "bfcl_env_tuning_4stage",
    "tau2_pipeline",
    "toolrl_grpo",
    "retool",
]


@pytest.mark.parametrize("experiment", SEEDS)
def test_every_seed_experiment_declares_and_plans_its_published_results(experiment: str) -> None:
    from rich.console import Console

    from launch.checks.resolve import resolve
    from launch.run.published_view import show_published

    run = resolve([f"+experiment={experiment}"]).run
    published = run.eval.published
    assert published is not None and all(result.source for result in published.results)
    console = Console(record=True, width=200)
    show_published(run, console)
    text = console.export_text()
    for result in published.results:
        assert result.label in text and result.source in text
        assert f"{result.values[0].value:.2%}" in text


def test_the_t3rl_declaration_holds_the_published_numbers() -> None:
    from launch.checks.resolve import resolve

    published = resolve(["+experiment=stage1_bfcl"]).run.stages["eval"]
    run = resolve(["+experiment=stage1_bfcl"]).run
    assert published.eval == {"split": "bfcl_unseen"}
    declared = {r.label: r for r in run.eval.published.results}
    assert run.eval.published.target == "T3RL stage 1"
    assert declared["T3RL stage 1"].values[0].value == 0.6 and declared["T3RL stage 1"].values[0].tasks == 400
    assert declared["T3RL stage 1"].split == "bfcl_unseen"
    assert declared["Qwen3-4B-Instruct"].values[0].value == 0.1575


def test_eval_published_needs_a_declaration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from launch.cli.app import app

    # No synthetic model is built in this session's cache (the check has its own test): the eval's own
    # refusal is what is checked.
    monkeypatch.setattr("launch.cli.eval_command._check_tokenizer", lambda *args: None)
    out = tmp_path / "record"
    args = ["eval", "+experiment=quickstart", "--engine", "reference", "--published", "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "250"})
    assert result.exit_code == 2, result.output
    assert "declares no published result (eval.published)" in result.output
    assert not out.exists()  # refused before anything was written


def test_the_report_says_when_a_reproduction_is_too_small_to_mean_much() -> None:
    from t3rl_core.eval.report_sections import published_section

    published = PublishedConfig.model_validate(
        {
            "target": "airline",
            "results": [
                _result("airline", 0.5, values=[{"scope": "tau2_airline", "value": 0.5, "tasks": 20}]),
                # Outside the asymmetric interval [0.342, 0.742], though closer than its half width.
                _result("far", 0.745, values=[{"scope": "tau2_airline", "value": 0.745, "tasks": 20}]),
            ],
        }
    )
    block = {"tasks": 20, "accuracy": 0.55}
    summary = {
        "complete": True,
        "split": "bfcl_test",
        "pass_k": [1],
        "temperature": 0.0,
        "overall": block,
        "categories": {"tau2_airline": block},
    }
    summary["published"] = {"tolerance": {"confidence": 0.95}, "verdicts": verdicts(summary, published)}
    rows = {line.split(" | ")[0]: line for line in published_section(summary) if line.startswith("| ")}
    assert "**reproduced**" in rows["| airline (target)"]
    assert "20 tasks resolve ±0.2" in rows["| airline (target)"]
    assert "**not reproduced**" in rows["| far (reference)"] and "resolve" not in rows["| far (reference)"]
