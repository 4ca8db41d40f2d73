"""BFCL multi-turn dataset rows, read from the data shipped inside the bfcl-eval package.

One row per entry: the prompt is a system prompt plus the first user turn; `metadata.tools` are the
functions rendered with the prompt, `metadata.late_tools` those a later user turn offers (miss_func),
and `metadata.bfcl_task` holds what an episode needs (initial state, classes, ground truth, the later
user turns). Splits follow
T3RL: the numeric ids 0..num_ids-1 are shuffled with the seed and cut into train / val / test, so
scenario k lands in the same split in every category. Output is byte-for-byte deterministic.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from t3rl_core.counts import counted
from t3rl_core.data.progress import Steps
from t3rl_core.envs.bfcl.config import SPLIT_FILES, BFCLDataConfig, BFCLEnvConfig, id_split_counts

ABILITY = "multi_turn_function_calling"


def system_prompt(think_tags: tuple[str, str] | None) -> str:
    """Format-neutral instructions: the chat template renders the tools and the call syntax."""
    if think_tags:
        reasoning = f"Begin every reply by reasoning step by step inside {think_tags[0]}{think_tags[1]}."
    else:
        reasoning = "Think the request through step by step before you act."
    return (
        "You help the user by calling the functions available to you. "
        f"{reasoning} "
        "Then either call one or more functions, or reply to the user in plain text.\n\n"
        "Keep calling functions until the user's current request is fully handled; you will see the "
        "result of every call before your next step. A reply without any function call ends your "
        "turn, so only reply in plain text once the request is done or cannot be done.\n\n"
        "Never guess. If no available function can do what is asked, or a value a function needs is "
        "neither given by the user nor obtainable through another function, do not call anything: "
        "say in plain text what is missing and ask the user for it."
    )


def split_of_ids(data: BFCLDataConfig) -> dict[int, str]:
    """Numeric entry id → "train" / "val" / "test" (T3RL: shuffle ids with random.seed(seed))."""
    ids = list(range(data.num_ids))
    random.Random(data.seed).shuffle(ids)
    counts = id_split_counts(data)
    num_train, num_val = counts["train"], counts["val"]
    split = {i: "train" for i in ids[:num_train]}
    split.update({i: "val" for i in ids[num_train : num_train + num_val]})
    split.update({i: "test" for i in ids[num_train + num_val :]})
    return split


def turn_questions(entry: Mapping[str, Any]) -> list[str]:
    """The user text of every turn; a held-out-function turn gets the docs plus bfcl-eval's prompt."""
    # lazy: bfcl_eval, only when BFCL data is prepared
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING

    missed = entry.get("missed_function") or {}
    questions = []
    for index, turn in enumerate(entry["question"]):
        if str(index) in missed:
            docs = json.dumps(missed[str(index)], ensure_ascii=False)
            questions.append(DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=docs))
        elif len(turn) == 1 and turn[0]["role"] == "user":
            questions.append(turn[0]["content"])
        else:
            raise ValueError(f"{entry['id']}: turn {index} is not a single user message: {turn!r}")
    return questions


def build_row(
    entry: Mapping[str, Any],
    ground_truth: list[list[str]],
    category: str,
    split: str,
    system: str,
    tool_lists: dict[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """One JSONL row (the project's dataset row contract). `tool_lists` (function list's JSON → its
    tools): lists already converted, handed back as they are, one object for every row offering it."""
    from bfcl_eval.constants.enums import ModelStyle  # lazy: bfcl_eval, only when BFCL data is prepared

    # lazy: bfcl_eval, only when BFCL data is prepared
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI

    # lazy: bfcl_eval, only when BFCL data is prepared
    from bfcl_eval.model_handler.utils import convert_to_tool

    def converted(functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if tool_lists is None:
            return convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
        # Keyed by the list's JSON in its own key order: the conversion keeps that order.
        key = json.dumps(functions)
        if key not in tool_lists:
            tool_lists[key] = convert_to_tool(functions, GORILLA_TO_OPENAPI, ModelStyle.OPENAI_COMPLETIONS)
        return tool_lists[key]

    questions = turn_questions(entry)
    if len(questions) != len(ground_truth):
        raise ValueError(
            f"{entry['id']}: {counted(len(questions), 'turn')} but {len(ground_truth)} ground-truth turns"
        )
    # bfcl-eval already removed the held-out functions from `function`: they are offered in their turn.
    tools = converted(entry["function"])
    missed = entry.get("missed_function") or {}
    held_out = [doc for turn in sorted(missed, key=int) for doc in missed[turn]]
    late_tools = converted(held_out)
    return {
        "prompt": [{"role": "system", "content": system}, {"role": "user", "content": questions[0]}],
        "metadata": {
            "tools": tools,
            # Offered later in a user turn (miss_func), so absent from the rendered tool list, yet the
            # action parser must accept calls to them (bfcl-eval adds them to the tools at that turn).
            "late_tools": late_tools,
            "data_source": category,
            "ability": ABILITY,
            "split": split,
            "index": entry["id"],
            "bfcl_task": {
                "id": entry["id"],
                "initial_config": entry["initial_config"],
                "involved_classes": entry["involved_classes"],
                "ground_truth": ground_truth,
                "processed_question": questions[1:],
                "missed_function": entry.get("missed_function") or {},
                "question": entry["question"],
                "split": split,
            },
        },
    }


def build_rows(config: BFCLEnvConfig, *, shared_tools: bool = False) -> list[dict[str, Any]]:
    """Every row of the configured categories, in category order then bfcl-eval's entry order.
    `shared_tools`: rows offering equal function lists hold one `tools` (`late_tools`) object, for a
    caller that writes the rows and changes none of them (`prepare`): the 800 entries offer 212
    distinct lists, and bfcl-eval's conversion deep-copies each list it is given (0.85 of a
    preparation's 1.85 s of CPU went to converting the same lists again; 0.7 s in all with them shared).
    """
    # lazy: bfcl_eval, only when BFCL data is prepared
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    split = split_of_ids(config.data)
    system = system_prompt(config.data.think_tags)
    loaded = []
    for category in config.data.categories:
        entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
        ground_truth = {item["id"]: item["ground_truth"] for item in load_ground_truth_entry(category)}
        loaded.append((category, entries, ground_truth))
    phase = Steps(sum(len(entries) for _, entries, _ in loaded), "rows built")
    rows: list[dict[str, Any]] = []
    tool_lists: dict[str, list[dict[str, Any]]] | None = {} if shared_tools else None
    for category, entries, ground_truth in loaded:
        for entry in entries:
            number = int(entry["id"].rsplit("_", 1)[1])
            if number not in split:
                raise ValueError(f"{entry['id']}: id {number} ≥ data.num_ids {config.data.num_ids}")
            row = build_row(entry, ground_truth[entry["id"]], category, split[number], system, tool_lists)
            rows.append(row)
            phase.advance()
    return rows


def prepare(config: BFCLEnvConfig, out_dir: Path) -> dict[str, Path]:
    """Write bfcl_train_base / bfcl_train / bfcl_val / bfcl_test / bfcl_unseen / bfcl_all .jsonl."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows = build_rows(config, shared_tools=True)
    files = {
        stem: [
            row
            for row in rows
            if (splits is None or row["metadata"]["split"] in splits)
            and (category is None or row["metadata"]["data_source"] == category)
        ]
        for stem, (splits, category) in SPLIT_FILES.items()
    }
    phase = Steps(sum(map(len, files.values())), "rows written")
    paths = {}
    for stem, selected in files.items():
        paths[stem] = write_jsonl(selected, out_dir / f"{stem}.jsonl", phase)
    return paths


def write_jsonl(rows: Iterable[Mapping[str, Any]], path: Path, phase: Steps | None = None) -> Path:
    """Write atomically: a failed run never leaves a truncated file under the final name. Each row is
    a step of `phase` when given."""
    partial = path.with_name(path.name + ".partial")
    with partial.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            if phase is not None:
                phase.advance()
    os.replace(partial, path)
    return path
