"""ReTool world: code extraction, the `<interpreter>` text, scripted episodes in the real local sandbox,
the shared sandbox, and data preparation."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pydantic import ValidationError

from t3rl_core.envs.retool.config import ReToolEnvConfig
from t3rl_core.envs.retool.data import read_problems, shuffled_order
from t3rl_core.envs.retool.env import NO_OUTPUT, SANDBOX_FAILED, tool_content
from t3rl_core.envs.retool.parser import extract_code, interpreter_block
from t3rl_core.registries import ACTION_PARSERS, DATASETS, ENVS, REWARDS
from t3rl_core.rewards.base import RewardInput
from t3rl_core.sandbox.base import SandboxResult
from t3rl_core.types import AnswerAction, ToolCall, ToolCallAction, Transition
from tests.sandbox.fusion_standin import serve

PARSER = ACTION_PARSERS.factory("code_block")(None, [])
REWARD = REWARDS.build(REWARDS.validate({"name": "retool_outcome"}))
TASK = {"prompt": [{"role": "user", "content": "What is 17 times 23?"}], "label": "391"}


def code_turn(*lines: str) -> str:
    return "Let me compute.\n<code>\n```python\n" + "\n".join(lines) + "\n```\n</code>"


# ------------------------------------------------------------------------------------------- parser


def test_code_extraction_follows_agent_r1():
    assert extract_code(code_turn("print(1)")) == "\n# ========\nprint(1)\n"
    # Every block of the turn, joined, each behind the separator line.
    two = "<code>\na = 1\n</code>\ntext\n<code>\nprint(a)\n</code>"
    assert extract_code(two) == "\n# ========\na = 1\n\n# ========\nprint(a)\n"
    assert extract_code("no code here") is None
    assert extract_code("<code>\nprint(1)") is None  # unterminated
    assert extract_code("<code>print(1)</code>") is None  # tags share a line: never closed
    assert extract_code("  <code>\nprint(1)\n</code>") is None  # the tag must start the line
    assert extract_code("</code>\nprint(1)") is None


def test_parser_actions():
    action = PARSER.parse(code_turn("print(1)"))
    call = ToolCall("python", {"code": "\n# ========\nprint(1)\n"})
    assert action == ToolCallAction(calls=(call,), text=code_turn("print(1)"))
    answer = "<answer>\n\\boxed{1}\n</answer>"
    assert PARSER.parse(answer) == AnswerAction(text=answer)


# -------------------------------------------------------------------------------------- interpreter


def result(status: str, stdout: str = "", stderr: str = "", error: str | None = None) -> SandboxResult:
    return SandboxResult(status, stdout, stderr, 0 if status == "success" else 1, 0.1, error)  # type: ignore[arg-type]


def wrap(content: str) -> str:
    return f"\n<interpreter>\n{content}\n</interpreter>\n"


def test_interpreter_text_follows_agent_r1():
    assert tool_content(result("success", "  42 \n")) == "42"
    assert tool_content(result("success")) == NO_OUTPUT
    # Failures show stderr (not stdout); without stderr the sandbox's error; else "Unknown error".
    failed = result("error", "partial", "Traceback ...\nZeroDivisionError: division by zero\n", "exit code 1")
    assert tool_content(failed) == "Traceback ...\nZeroDivisionError: division by zero"
    limit = "wall-clock limit of 10 s exceeded"
    assert tool_content(result("timeout", error=limit)) == limit
    # A failure of the sandbox itself: one fixed line, whatever its message (a server's URL with a
    # token, a proxy's reply, the host's paths) said; the message goes to the log, masked.
    leaky = "SandboxFusion at http://fusion:8080/run_code?token=hf_" + "a1B2" * 8 + " failed: /srv/keys"
    assert tool_content(result("sandbox_error", "partial", "trace /srv/keys", leaky)) == SANDBOX_FAILED
    assert tool_content(result("sandbox_error")) == SANDBOX_FAILED
    # Cut to the limit, then "..." appended; wrapped in newlines and tags.
    assert interpreter_block("42", 512) == wrap("42")
    assert interpreter_block("x" * 600, 512) == wrap("x" * 512 + "...")
    assert interpreter_block("x" * 512, 512) == wrap("x" * 512)


# ------------------------------------------------------------------------------------------ episodes


def run_script(turns: list[str], task: dict = TASK, **env_fields: object) -> tuple[list, dict, float]:
    sandbox = {"name": "local", "timeout_s": 5}
    config = ENVS.validate({"name": "retool_python", "sandbox": sandbox, **env_fields})
    factory = ENVS.build(config)

    async def go() -> tuple[list, dict, float]:
        env = factory(task, "train")
        assert env.stop == ("</code>",) and env.action_format == "code_block"
        assert await env.reset() == Transition()
        transitions = []
        for text in turns:
            transitions.append(await env.step(PARSER.parse(text)))
            if transitions[-1].done:
                break
        outcome = env.outcome()
        await factory.aclose()
        return transitions, outcome, REWARD(RewardInput(outcome=outcome)).value

    return asyncio.run(go())


def test_scripted_episode_with_code_an_error_and_an_answer():
    turns = [
        code_turn("print(17 * 23)"),
        "Check a failure too.\n<code>\n1 / 0\n</code>",
        "So the answer is\n<answer>\n\\boxed{391}\n</answer>",
    ]
    transitions, outcome, reward = run_script(turns)
    assert [t.done for t in transitions] == [False, False, True]
    assert transitions[0].inline == "\n<interpreter>\n391\n</interpreter>\n"
    assert transitions[0].info["sandbox_status"] == "success"
    assert transitions[1].inline.endswith("ZeroDivisionError: division by zero\n</interpreter>\n")
    assert transitions[1].inline.startswith("\n<interpreter>\nTraceback (most recent call last):\n")
    assert transitions[2].inline is None and not transitions[2].truncated
    inlines = [t.inline for t in transitions]
    assert outcome["response"] == turns[0] + inlines[0] + turns[1] + inlines[1] + turns[2]
    assert {k: v for k, v in outcome.items() if k != "response"} == {
        "ground_truth": "391",
        "turns": 3,
        "code_calls": 2,
        "code_errors": 1,
        "sandbox_errors": 0,
        "truncated": False,
    }
    assert reward == 1.0


def test_turn_limit_still_runs_the_last_code_then_ends():
    turns = [code_turn("print(1)"), code_turn("print(2)"), "unused"]
    transitions, outcome, reward = run_script(turns, max_turns=2)
    assert [(t.done, t.truncated) for t in transitions] == [(False, False), (True, True)]
    assert transitions[1].inline == "\n<interpreter>\n2\n</interpreter>\n"
    assert outcome["turns"] == 2 and outcome["truncated"] is True
    assert reward == -1.0  # the response ends with the interpreter output, not with an answer


def test_wrong_answer_and_missing_answer():
    assert run_script(["<answer>\n\\boxed{390}\n</answer>"])[2] == 0.0
    assert run_script(["I think it is 391."])[2] == -1.0


def test_oracle_answer_scores_one():
    factory = ENVS.build(ReToolEnvConfig(sandbox={"name": "local"}))
    env = factory(TASK, "eval")
    oracle = env.oracle()
    assert oracle == AnswerAction(text="<answer>\n\\boxed{391}\n</answer>")
    asyncio.run(env.step(oracle))
    assert env.oracle() is None
    assert REWARD(RewardInput(outcome=env.outcome())).value == 1.0
    asyncio.run(factory.aclose())


def test_one_sandbox_is_shared_by_the_episodes_of_a_factory():
    factory = ENVS.build(ReToolEnvConfig(sandbox={"name": "local"}))
    assert factory(TASK, "train").sandbox is factory(TASK, "eval").sandbox is factory.sandbox
    asyncio.run(factory.aclose())
    with pytest.raises(ValueError, match="label"):
        factory({"prompt": []}, "train")


def test_episode_through_sandbox_fusion():
    async def go() -> str | None:
        async with serve() as standin:
            factory = ENVS.build(ReToolEnvConfig(sandbox={"name": "sandbox_fusion", "url": standin.url}))
            env = factory(TASK, "train")
            transition = await env.step(PARSER.parse(code_turn("print(6 * 7)")))
            await factory.aclose()
            assert standin.requests[0]["code"] == "\n# ========\nprint(6 * 7)\n"
            return transition.inline

    assert asyncio.run(go()) == "\n<interpreter>\n42\n</interpreter>\n"


# ---------------------------------------------------------------------------------------------- data


def prepare(tmp_path: Path, **data: object) -> dict[str, list[dict]]:
    config = ReToolEnvConfig(data=data)
    written = DATASETS.factory("retool_python")(config, tmp_path)
    return {split: [json.loads(x) for x in path.read_text().splitlines()] for split, path in written.items()}


def test_builtin_sample_split(tmp_path):
    splits = prepare(tmp_path / "a", test_size=4)
    assert {k: len(v) for k, v in splits.items()} == {"retool_test": 4, "retool_train": 10, "retool_sft": 10}
    names = ReToolEnvConfig(data={"test_size": 4}).split_names()
    assert names == ["retool_train", "retool_test", "retool_sft"]
    indices = sorted(r["metadata"]["index"] for s in ("retool_train", "retool_test") for r in splits[s])
    assert indices == list(range(14))
    row = splits["retool_train"][0]
    assert set(row) == {"prompt", "metadata", "label"}
    assert row["metadata"]["data_source"] == "BytedTsinghua-SIA/DAPO-Math-17k"
    assert row["metadata"]["tools"] == [] and row["metadata"]["split"] == "train"
    assert [m["role"] for m in row["prompt"]] == ["user"]
    content = row["prompt"][0]["content"]
    assert "<code>" in content and "<interpreter>" in content
    assert "<answer>\n\\boxed{your final answer}\n</answer>" in content
    assert {r["metadata"]["split"] for r in splits["retool_test"]} == {"test"}
    # Same seed, same split, byte for byte.
    again = prepare(tmp_path / "b", test_size=4)
    assert again == splits


def test_builtin_worked_solutions_are_true_and_score_one(tmp_path):
    """The SFT demonstrations: the train problems only, their code really prints the shown output, and
    the assistant turn gets the full reward."""
    splits = prepare(tmp_path, test_size=4)
    train = {r["metadata"]["index"]: r for r in splits["retool_train"]}
    assert {r["metadata"]["index"] for r in splits["retool_sft"]} == set(train)
    for row in splits["retool_sft"]:
        user, assistant = row["prompt"]
        assert [user] == train[row["metadata"]["index"]]["prompt"]
        outcome = {"response": assistant["content"], "ground_truth": row["label"]}
        assert REWARD(RewardInput(outcome=outcome)).value == 1.0

    factory = ENVS.build(ReToolEnvConfig(sandbox={"name": "local"}))

    async def outputs() -> list[tuple[str, str]]:
        pairs = []
        for record in read_problems(ReToolEnvConfig().data):
            ran = await factory.sandbox.run(record["code"])
            pairs.append((ran.stdout.strip(), record["output"]))
        await factory.aclose()
        return pairs

    for got, shown in asyncio.run(outputs()):
        assert got == shown


def test_sft_conversations_from_a_file(tmp_path):
    conversations = tmp_path / "sft.jsonl"
    chat = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "<answer>\\boxed{1}</answer>"}]
    conversations.write_text(json.dumps({"messages": chat}) + "\n")
    splits = prepare(tmp_path / "out", test_size=4, sft_source=str(conversations))
    metadata = {"data_source": "BytedTsinghua-SIA/DAPO-Math-17k", "split": "sft", "index": 0, "tools": []}
    assert splits["retool_sft"] == [{"prompt": chat, "metadata": metadata}]
    conversations.write_text(json.dumps({"messages": chat[:1]}) + "\n")
    with pytest.raises(ValueError, match="no assistant message"):
        prepare(tmp_path / "bad", test_size=4, sft_source=str(conversations))
    conversations.write_text(json.dumps({"turns": chat}) + "\n")
    with pytest.raises(ValueError, match="'messages' must be a list"):
        prepare(tmp_path / "bad2", test_size=4, sft_source=str(conversations))


def test_user_files_with_custom_keys(tmp_path):
    problems = [{"problem": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(6)]
    jsonl = tmp_path / "problems.jsonl"
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in problems))
    parquet = tmp_path / "problems.parquet"
    pq.write_table(pa.Table.from_pylist(problems), parquet)
    fields = {"question_key": "problem", "answer_key": "answer", "test_size": 2, "data_source": "mine"}
    from_jsonl = prepare(tmp_path / "j", source=str(jsonl), **fields)
    from_parquet = prepare(tmp_path / "p", source=str(parquet), **fields)
    assert from_jsonl == from_parquet
    assert set(from_jsonl) == {"retool_train", "retool_test"}  # no SFT split without SFT data
    rows = from_jsonl["retool_train"] + from_jsonl["retool_test"]
    assert all(r["label"] == str(2 * r["metadata"]["index"]) for r in rows)
    for r in rows:
        i = r["metadata"]["index"]
        assert r["prompt"][0]["content"].endswith(f"Problem: What is {i} + {i}?")
    with pytest.raises(KeyError, match="question_key"):
        prepare(tmp_path / "k", source=str(jsonl), test_size=2)


def test_data_errors(tmp_path):
    with pytest.raises(ValueError, match="no training rows"):
        prepare(tmp_path, test_size=100)
    with pytest.raises(FileNotFoundError, match=r"env\.data\.source"):
        prepare(tmp_path, source=str(tmp_path / "missing.jsonl"), test_size=1)
    with pytest.raises(ValidationError, match="question"):
        ReToolEnvConfig(data={"instruction": "Solve it."})
    with pytest.raises(ValidationError, match="format string"):
        ReToolEnvConfig(data={"instruction": "{question} {other}"})


@pytest.mark.parametrize(("n", "seed"), [(14, 42), (17398, 42), (1000, 7)])
def test_held_out_split_is_agent_r1s_datasets_shuffle(n: int, seed: int, tmp_path):
    """Agent-R1 holds out the first 100 rows of `Dataset.shuffle(seed=42)`: the same rows here (the real
    `datasets` library on a dataset of row numbers; random.Random(42) would give another set)."""
    import random

    import datasets  # locked (requirements/nodeps.in) for this check

    rows = datasets.Dataset.from_dict({"row": list(range(n))}).shuffle(seed=seed)["row"]
    assert shuffled_order(n, seed) == list(rows)
    other = list(range(n))
    random.Random(seed).shuffle(other)
    assert other[: min(n, 100)] != list(rows)[: min(n, 100)]


def test_prepared_test_split_is_the_first_rows_of_the_shuffle(tmp_path):
    source = tmp_path / "problems.jsonl"
    source.write_text("".join(json.dumps({"prompt": f"q{i}", "target": str(i)}) + "\n" for i in range(300)))
    splits = prepare(tmp_path / "out", source=str(source), test_size=100)
    held_out = [r["metadata"]["index"] for r in splits["retool_test"]]
    assert held_out == shuffled_order(300, 42)[:100]
