"""Every setting an eval's result can depend on is declared once (t3rl_core/eval/compared.py): the part of
the benchmark identity that records it, or why results that differ in it still compare. The
declaration is checked against the identity an eval records, field by field, so that a new eval
setting cannot be added without saying whether it is compared, and a declaration cannot lie.

Kinds the declaration found: a setting that changes nothing measured (`allow_foreign_template`) made
two results incomparable; an OpenEnv server at another port, or started by another command, was
another benchmark; a verifiers environment scored by another release of its rubric, or by another
verifiers, was the same one.
"""

from __future__ import annotations

import asyncio
import importlib
from pathlib import Path
from typing import Any

import pytest
import yaml

from t3rl_core.config import ChatConfig, ParsersConfig, RolloutConfig, RuntimeConfig
from t3rl_core.engines.reference import ReferenceEngine
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.eval.compared import NOT_COMPARED, SECTIONS
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.identity import PARTS, benchmark_identity, differences
from t3rl_core.eval.published import PublishedConfig
from t3rl_core.eval.runner import apply_eval_limits, run_eval, select_rows
from t3rl_core.eval.verdict import NOT_COMPARABLE, REPRODUCED, verdicts
from t3rl_core.rewards.env_score import EnvScoreRewardConfig
from tests.eval.test_comparable_kinds import abort_third_call
from tests.support.eval_runs import bfcl_runtime
from tests.support.tiny_stack import bfcl_rows

REPO = Path(__file__).resolve().parents[2]
MODELS = {
    "eval": EvalConfig,
    "rollout": RolloutConfig,
    "chat": ChatConfig,
    "parsers": ParsersConfig,
    "runtime": RuntimeConfig,
}
# One scored episode without a verdict of the env's own: success is then the reward's (its settings count).
RECORDS = [{"status": "finished", "category": "c", "task_id": "t", "reward_metrics": {}, "outcome": {}}]
# The eval the variants differ from: sampled, so that top-p and top-k are part of what it measures.
BASE_EVAL = {"engine": {"name": "reference"}, "temperature": 0.7}


def identity(runtime: RuntimeConfig, settings: dict[str, Any] | None = None) -> dict[str, Any]:
    config = EvalConfig.model_validate(BASE_EVAL | (settings or {}))
    return benchmark_identity(apply_eval_limits(runtime, config), config, "a" * 64, RECORDS, complete=True)


def published() -> dict[str, Any]:
    return yaml.safe_load((REPO / "conf" / "published" / "t3rl_bfcl.yaml").read_text())


# Another valid value of each field, to check what its declaration says.
OTHER: dict[str, dict[str, Any]] = {
    "eval": {
        "engine": {"name": "hf"},
        "split": "bfcl_unseen",
        "samples": 4,
        "repeats": 2,
        "pass_k": [1, 2],
        "concurrency": 5,
        "limit_per_category": 2,
        "categories": ["multi_turn_base"],
        "temperature": 0.3,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 3,
        "max_new_tokens": 100,
        "max_num_steps": 3,
        "max_engine_failure_rate": 0.5,
        "server": {"port": 30001},
        "published": None,  # set below: a declaration
    },
    "rollout": {
        "max_num_steps": 3,
        "max_context_len": 4096,
        "max_response_len": 2048,
        "max_new_tokens": 100,
        "temperature": 0.5,
        "top_p": 0.8,
        "tito_drift_check": True,
        "max_failure_rate": 0.5,
    },
    "chat": {
        "tokenizer": "Qwen/Qwen3-4B",
        "chat_template": "qwen2_5",
        "family": {
            "name": "mine",
            "special_tokens": ["<|im_start|>", "<|im_end|>"],
            "stop_tokens": ["<|im_end|>"],
            "eos_token": "<|im_end|>",
            "pad_token": "<|endoftext|>",
        },
        "chat_template_kwargs": {"enable_thinking": False},
        "allow_foreign_template": True,
    },
    "parsers": {
        "tool_call_parser": "hermes",
        "reasoning_parser": "deepseek-r1",
        "think_tags": ["<t>", "</t>"],
    },
    "runtime": {
        "reward": {"name": "binary"},
        "mis": {"tis_mode": "clip"},
        "kl_in_reward": {"coef": 0.01},
        "turn_credit": {},
    },
}
# runtime.env, .chat, .parsers and .rollout are checked field by field (their own sections, the env below).
FIELD_BY_FIELD = ("env", "chat", "parsers", "rollout")


def test_every_setting_of_an_eval_is_declared_compared_or_not() -> None:
    """A field added to one of these sections fails here until compared.py says what it changes."""
    for section, model in MODELS.items():
        declared = SECTIONS[section]
        assert set(model.model_fields) == set(declared), (
            f"{section}: declare in t3rl_core/eval/compared.py whether each field is compared "
            f"(missing {sorted(set(model.model_fields) - set(declared))}, "
            f"stale {sorted(set(declared) - set(model.model_fields))})"
        )
        for field, part in declared.items():
            assert part in PARTS or part.startswith(f"{NOT_COMPARED}: "), (section, field, part)
        checked = set(declared) - (set(FIELD_BY_FIELD) if section == "runtime" else set())
        assert checked <= set(OTHER[section]), f"{section}: give the test another value of each field"


def _variant(section: str, field: str) -> tuple[RuntimeConfig, dict[str, Any]]:
    """The base runtime and eval settings with `field` of `section` at another value."""
    runtime, value = bfcl_runtime(), OTHER[section][field]
    if section == "eval":
        return runtime, {field: published() if field == "published" else value}
    if section == "runtime":
        dumped = runtime.model_dump(mode="json")
        current = dumped[field] if field != "reward" else None  # another reward, not another setting
        dumped[field] = {**(current or {}), **value}
        return RuntimeConfig.model_validate(dumped), {}
    part = getattr(runtime, section)
    updated = type(part).model_validate({**part.model_dump(), field: value})
    return runtime.model_copy(update={section: updated}), {}


CASES = [
    (section, field)
    for section, fields in SECTIONS.items()
    for field in fields
    if not (section == "runtime" and field in FIELD_BY_FIELD)
]


@pytest.mark.parametrize(("section", "field"), CASES, ids=[f"{s}.{f}" for s, f in CASES])
def test_a_declaration_holds_for_the_identity_an_eval_records(section: str, field: str) -> None:
    """A field declared in a part changes that part and no other; one declared not compared changes
    nothing (the chat's allow_foreign_template made two evals incomparable before)."""
    runtime, settings = _variant(section, field)
    found = {
        part.split(":", 1)[0] for part in differences(identity(bfcl_runtime()), identity(runtime, settings))
    }
    declared = SECTIONS[section][field]
    assert found == (set() if declared.startswith(NOT_COMPARED) else {declared}), (section, field, found)


def test_the_same_openenv_server_elsewhere_is_the_same_benchmark() -> None:
    """Where the server runs (env.url, env.command, its start-up timeout) is not what it measures; the
    environment's image, system prompt and action settings are."""
    base = bfcl_runtime()

    def env_identity(**env: Any) -> dict[str, Any]:
        runtime = base.model_copy(update={"env": OpenEnvEnvConfig.model_validate(env)})
        return identity(runtime)["env"]

    here = env_identity(url="http://127.0.0.1:8000")
    assert env_identity(url="http://10.0.0.7:9000/", startup_timeout_s=30, max_observation_chars=9) == here
    started = ["python3", "-m", "uvicorn", "my_env:app", "--port", "8001"]
    assert env_identity(url="http://127.0.0.1:8001", command=started) == here
    assert env_identity(url="http://127.0.0.1:8000", system_prompt="Act.") != here
    assert env_identity(image="my-env:1.0") != env_identity(image="my-env:1.1")


LOADER = (
    "import verifiers as vf\n"
    "from datasets import Dataset\n"
    "def load_environment():\n"
    "    rows = Dataset.from_list([{'question': 'q', 'answer': 'a'}])\n"
    "    return vf.SingleTurnEnv(dataset=rows, rubric=vf.Rubric(funcs=[lambda completion: {score}]))\n"
)


def _installed(
    root: Path, monkeypatch: pytest.MonkeyPatch, version: str | None, score: str = "1.0"
) -> VerifiersEnvConfig:
    """A verifiers environment `vf_rubric_env` installed under `root` (as pip installs it: the module and
    its package's dist-info, with `version`; None = the module alone, no package)."""
    site = root / "site"
    site.mkdir(parents=True)
    (site / "vf_rubric_env.py").write_text(LOADER.replace("{score}", score))
    if version is not None:
        info = site / f"vf_rubric_env-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vf-rubric-env\nVersion: {version}\n")
        (info / "top_level.txt").write_text("vf_rubric_env\n")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    return VerifiersEnvConfig(id="vf_rubric_env")


def _scorer(config: VerifiersEnvConfig) -> dict[str, Any]:
    runtime = bfcl_runtime().model_copy(update={"env": config, "reward": EnvScoreRewardConfig()})
    return identity(runtime)["scorer"]


def test_a_verifiers_environment_is_scored_by_its_own_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rubric of the installed environment scores the episodes, not t3rl's bridge: another release of
    it is another scorer, and so is another verifiers."""
    first = _scorer(_installed(tmp_path / "a", monkeypatch, "0.1.2"))
    assert first["package"] == "vf-rubric-env" and first["version"] == "0.1.2", first
    assert set(first["libraries"]) == {"verifiers"} and first["libraries"]["verifiers"], first
    monkeypatch.undo()
    second = _scorer(_installed(tmp_path / "b", monkeypatch, "0.1.3"))
    assert differences({"scorer": first}, {"scorer": second}) == ["scorer: version 0.1.2 vs 0.1.3"]
    assert differences({"scorer": second}, {"scorer": second | {"libraries": {"verifiers": "0.0.1"}}})


def test_an_unversioned_verifiers_module_is_scored_by_its_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A module installed without a package has no version: its source is the scorer's identity."""
    first = _scorer(_installed(tmp_path / "a", monkeypatch, None))
    monkeypatch.undo()
    same = _scorer(_installed(tmp_path / "b", monkeypatch, None))
    monkeypatch.undo()
    edited = _scorer(_installed(tmp_path / "c", monkeypatch, None, score="0.5"))
    assert first["package"] == "vf_rubric_env" and first["version"] is None
    assert first == same  # the same source in another place
    assert [d.split(";")[0] for d in differences({"scorer": first}, {"scorer": edited})] == [
        f"scorer: source_sha256 {first['source_sha256'][:12]}… vs {edited['source_sha256'][:12]}…"
    ]


def test_an_overall_of_some_categories_is_not_the_published_overall_of_the_split(tmp_path: Path) -> None:
    """A source that names neither its categories nor its task count averages over the whole split; an
    eval of some of its categories (eval.categories) got a verdict on it (a slice by limit_per_category
    did not)."""
    rows = bfcl_rows(per_category=1)
    chosen = sorted({row["metadata"]["data_source"] for row in rows})[:2]
    config = EvalConfig.model_validate(
        {"engine": {"name": "reference"}, "concurrency": 1, "categories": chosen}
    )
    summary = asyncio.run(
        run_eval(bfcl_runtime(), config, select_rows(rows, config), tmp_path, show_progress=False)
    )
    result = {"label": "claim", "model": "m", "benchmark": "b", "split": "bfcl_test", "source": "s"}
    values = [{"scope": "overall", "value": 1.0}, {"scope": chosen[0], "value": 1.0}]
    declared = PublishedConfig.model_validate({"target": "claim", "results": [result | {"values": values}]})
    overall, category = verdicts(summary, declared)
    assert overall["status"] == NOT_COMPARABLE
    assert overall["why"] == [
        f"a part of the split (eval.categories={chosen}); the source's overall is all of it"
    ]
    assert category["status"] == REPRODUCED  # the category's own tasks are all there
    with_tasks = {"scope": "overall", "value": 1.0, "tasks": len(rows)}
    declared = PublishedConfig.model_validate(
        {"target": "claim", "results": [result | {"values": [with_tasks]}]}
    )
    (counted,) = verdicts(summary, declared)
    assert counted["why"] == [f"another task count: published over {len(rows)} tasks, this eval over 2"]


def test_tasks_short_of_k_samples_are_another_coverage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An engine failure within eval.max_engine_failure_rate leaves its task one sample short: pass@2 and
    pass^2 average over the other tasks only. The coverage said nothing (no task was unscored), so the
    eval compared as complete, and a published pass@2 got a verdict on fewer tasks than it names."""
    rows = bfcl_rows(per_category=1)
    settings = {"engine": {"name": "reference"}, "concurrency": 1, "samples": 2, "pass_k": [1, 2]}

    def run(out: Path, **more: Any) -> dict[str, Any]:
        config = EvalConfig.model_validate(settings | more)
        return asyncio.run(run_eval(bfcl_runtime(), config, rows, out, show_progress=False))

    full = run(tmp_path / "full")
    assert "short_of_k" not in full["identity"]["coverage"]  # as recorded before: summaries stay equal
    abort_third_call(monkeypatch, ReferenceEngine)
    short = run(tmp_path / "short", max_engine_failure_rate=0.5)
    assert short["complete"] is True and short["identity"]["coverage"]["unscored"] == 0
    assert differences(full["identity"], short["identity"]) == ['coverage: short_of_k null vs {"2": 1}']
    result = {"label": "claim", "model": "m", "benchmark": "b", "split": "bfcl_test", "source": "s"}
    result |= {
        "metric": {"name": "pass@k", "k": 2},
        "values": [{"scope": "overall", "value": 1.0, "tasks": 4}],
    }
    (verdict,) = verdicts(short, PublishedConfig.model_validate({"target": "claim", "results": [result]}))
    assert verdict["status"] == NOT_COMPARABLE
    assert verdict["why"] == [
        "1 task(s) have fewer than 2 scored samples (the engine failed the others, within "
        "eval.max_engine_failure_rate), so pass@2 averages over the other tasks: rerun them with --resume"
    ]
    (counted,) = verdicts(full, PublishedConfig.model_validate({"target": "claim", "results": [result]}))
    assert counted["status"] == REPRODUCED, counted.get("why")
