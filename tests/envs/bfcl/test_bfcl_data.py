"""BFCL data preparation: split sizes, T3RL's id split, miss_func injection, determinism."""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from t3rl_core.envs.bfcl.config import (
    MULTI_TURN_CATEGORIES,
    SPLIT_FILES,
    BFCLDataConfig,
    BFCLEnvConfig,
    id_split_counts,
)
from t3rl_core.envs.bfcl.data import prepare, split_of_ids, system_prompt

ADDED_FUNCTIONS_PROMPT = "I have updated some more functions you can choose from. What about now?"


def _number(row):
    return int(row["metadata"]["index"].rsplit("_", 1)[1])


def test_split_sizes_and_categories(bfcl_rows):
    assert len(bfcl_rows) == 800
    per_split = Counter((row["metadata"]["split"], row["metadata"]["data_source"]) for row in bfcl_rows)
    for category in MULTI_TURN_CATEGORIES:
        assert per_split["train", category] == 100
        assert per_split["val", category] == 25
        assert per_split["test", category] == 75
    assert all(row["metadata"]["bfcl_task"]["split"] == row["metadata"]["split"] for row in bfcl_rows)


def test_declared_split_sizes_are_the_rows_of_each_split_file(bfcl_rows):
    """Pre-flight's sizes (no data prepared) are the prepared files' row counts for the default cut."""
    sizes = BFCLEnvConfig().split_sizes()
    for name, (id_splits, category) in SPLIT_FILES.items():
        kept = [
            r
            for r in bfcl_rows
            if r["metadata"]["split"] in (id_splits or ("train", "val", "test"))
            and category in (None, r["metadata"]["data_source"])
        ]
        assert sizes[name] == len(kept), name
    for num_ids, train, val in ((37, 0.3, 0.2), (200, 0.5, 0.0), (9, 0.9, 0.05), (1, 0.5, 0.125)):
        data = BFCLDataConfig(num_ids=num_ids, train_ratio=train, val_ratio=val)
        cut = Counter(split_of_ids(data).values())
        assert {s: cut[s] for s in ("train", "val", "test")} == id_split_counts(data)


def test_split_is_t3rl_seeded_shuffle_of_ids():
    # T3RL: random.seed(42) at import, then random.shuffle(list(range(200))), cut 100 / 25 / 75.
    state = random.getstate()
    try:
        random.seed(42)
        ids = list(range(200))
        random.shuffle(ids)
    finally:
        random.setstate(state)
    expected = {i: "train" for i in ids[:100]}
    expected |= {i: "val" for i in ids[100:125]} | {i: "test" for i in ids[125:]}
    assert split_of_ids(BFCLDataConfig()) == expected


def test_scenario_lands_in_same_split_in_every_category(bfcl_rows):
    split_by_number: dict[int, set[str]] = {}
    for row in bfcl_rows:
        split_by_number.setdefault(_number(row), set()).add(row["metadata"]["split"])
    assert len(split_by_number) == 200
    assert all(len(splits) == 1 for splits in split_by_number.values())


def test_rows_follow_the_dataset_contract(bfcl_rows):
    from bfcl_eval.utils import load_ground_truth_entry

    gold = {item["id"]: item["ground_truth"] for item in load_ground_truth_entry("multi_turn_miss_param")}
    for row in bfcl_rows:
        meta, task = row["metadata"], row["metadata"]["bfcl_task"]
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert row["prompt"][1]["content"] == task["question"][0][0]["content"]
        assert set(meta) == {"tools", "late_tools", "data_source", "ability", "split", "index", "bfcl_task"}
        assert set(task) == {
            "id",
            "initial_config",
            "involved_classes",
            "ground_truth",
            "processed_question",
            "missed_function",
            "question",
            "split",
        }
        assert len(task["processed_question"]) == len(task["ground_truth"]) - 1 == len(task["question"]) - 1
        assert all(
            tool["type"] == "function" and tool["function"]["parameters"]["type"] == "object"
            for tool in meta["tools"]
        )
        if meta["data_source"] == "multi_turn_miss_param":
            assert task["ground_truth"] == gold[task["id"]]
        json.dumps(row)  # serialisable as is


def test_miss_func_turn_offers_the_held_out_function_only_in_its_turn(bfcl_rows):
    miss_func = [row for row in bfcl_rows if row["metadata"]["data_source"] == "multi_turn_miss_func"]
    assert len(miss_func) == 200
    for row in miss_func:
        task = row["metadata"]["bfcl_task"]
        ((turn, docs),) = task["missed_function"].items()
        turn = int(turn)
        assert task["question"][turn] == []
        text = task["processed_question"][turn - 1]
        assert text == json.dumps(docs, ensure_ascii=False) + "\n" + ADDED_FUNCTIONS_PROMPT
        held_out = {doc["name"] for doc in docs}
        assert held_out and not held_out & {tool["function"]["name"] for tool in row["metadata"]["tools"]}
        # ... but calls to it must still parse once it is offered.
        assert {tool["function"]["name"] for tool in row["metadata"]["late_tools"]} == held_out
        # Before its turn the function is never mentioned to the model as available.
        earlier = [row["prompt"][1]["content"], *task["processed_question"][: turn - 1]]
        assert not any(ADDED_FUNCTIONS_PROMPT in question for question in earlier)
    others = [row for row in bfcl_rows if row["metadata"]["data_source"] != "multi_turn_miss_func"]
    assert all(row["metadata"]["bfcl_task"]["missed_function"] == {} for row in others)
    assert all(row["metadata"]["late_tools"] == [] for row in others)


def test_system_prompt_is_format_neutral():
    plain = system_prompt(None)
    assert "<tool_call>" not in plain and "<think" not in plain
    assert "<thinking></thinking>" in system_prompt(("<thinking>", "</thinking>"))


@pytest.mark.slow
def test_prepare_writes_the_files_and_is_byte_deterministic(tmp_path: Path):
    config = BFCLEnvConfig()
    first = prepare(config, tmp_path / "a")
    second = prepare(config, tmp_path / "b")
    counts = {name: sum(1 for _ in path.open()) for name, path in first.items()}
    expected = {"bfcl_train_base": 100, "bfcl_train": 400, "bfcl_val": 100, "bfcl_test": 300, "bfcl_all": 800}
    assert counts == {**expected, "bfcl_unseen": 400}
    # The unseen split is exactly val + test: no task whose id any train split holds.
    ids = {n: {json.loads(row)["metadata"]["bfcl_task"]["id"] for row in p.open()} for n, p in first.items()}
    assert ids["bfcl_unseen"] == ids["bfcl_val"] | ids["bfcl_test"]
    assert not ids["bfcl_unseen"] & ids["bfcl_train"]
    for name in first:
        digest_a = hashlib.sha256(first[name].read_bytes()).hexdigest()
        assert digest_a == hashlib.sha256(second[name].read_bytes()).hexdigest(), name
    base = [json.loads(line) for line in first["bfcl_train_base"].open()]
    assert {row["metadata"]["data_source"] for row in base} == {"multi_turn_base"}
    assert not list((tmp_path / "a").glob("*.partial"))


def test_unknown_category_is_rejected():
    with pytest.raises(ValidationError, match="multi_turn_base"):
        BFCLDataConfig(categories=["multi_turn_composite"])
