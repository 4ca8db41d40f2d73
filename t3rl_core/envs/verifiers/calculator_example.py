"""A small verifiers ToolEnv written only in verifiers' terms, as a hub environment is: arithmetic questions
answered with an `add` tool, scored by a rubric of two weighted functions. env=verifiers's default
(env.id=t3rl_core.envs.verifiers.calculator_example), for trying the world without installing one."""

from typing import Any

import verifiers as vf
from datasets import Dataset


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


def load_environment(
    num_examples: int = 3, max_turns: int = 4, system_prompt: str | None = None
) -> vf.ToolEnv:
    rows = [
        {"question": f"What is {10 * i + 3} + {i + 4}? Use the add tool.", "answer": str(11 * i + 7)}
        for i in range(num_examples)
    ]

    def correct_answer(completion: list[Any], answer: str) -> float:
        last = completion[-1]
        return 1.0 if last.role == "assistant" and answer in str(last.content or "") else 0.0

    def used_tool(completion: list[Any]) -> float:
        return float(any(m.role == "tool" for m in completion))

    rubric = vf.Rubric(funcs=[correct_answer, used_tool], weights=[1.0, 0.5])
    return vf.ToolEnv(
        dataset=Dataset.from_list(rows),
        eval_dataset=Dataset.from_list(rows[:2]),
        tools=[add],
        rubric=rubric,
        max_turns=max_turns,
        system_prompt=system_prompt or "Use the tools, then answer with the number.",
    )
