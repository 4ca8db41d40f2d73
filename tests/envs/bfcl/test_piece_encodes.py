"""Real BFCL tool outputs encoded from kept pieces equal whole-text encodes, for every family.

Long-context worlds return ~30k characters of shared listings in call after call, the case the piece
cache exists for (t3rl_core/chat/pieces.py); each output is encoded as the turn delta the loop sends.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from t3rl_core.chat.format import ChatFormat
from t3rl_core.envs.bfcl.config import BFCLEnvConfig
from t3rl_core.envs.bfcl.env import BFCLEnv, BFCLTask
from tests.rollout.fakes import chat  # noqa: F401


@pytest.fixture(scope="module")
def tool_outputs(bfcl_rows: list[dict[str, Any]]) -> list[str]:
    """The gold calls' results of long-context and base test rows."""
    rows = [row for row in bfcl_rows if row["metadata"]["split"] == "test"]
    long = [row for row in rows if "long_context" in row["metadata"]["bfcl_task"]["id"]]
    picked = rows[:4] + [
        next(row for row in long if name in row["metadata"]["bfcl_task"]["involved_classes"])
        for name in ("GorillaFileSystem", "TradingBot", "TravelAPI", "MessageAPI", "TwitterAPI", "TicketAPI")
    ]
    outputs = []
    for row in picked:
        env = BFCLEnv(BFCLTask.from_row(row), BFCLEnvConfig(), "eval")
        asyncio.run(env.reset())
        world = env._model_world("test")
        outputs += [world.execute(world.parse(call)) for turn in env.task.ground_truth for call in turn]
    assert max(map(len, outputs)) > 10_000
    return outputs


def test_turn_deltas_of_real_tool_outputs_encode_as_the_whole(
    chat: ChatFormat,  # noqa: F811
    tool_outputs: list[str],
) -> None:
    assert chat._pieces is not None
    for output, neighbour in zip(tool_outputs, [*tool_outputs[1:], "done"], strict=True):
        for messages in (
            [{"role": "tool", "name": "f", "content": output}],
            [{"role": "tool", "name": "f", "content": output}, {"role": "tool", "content": neighbour}],
        ):
            text = chat._turn_end_text(None, messages, True)
            whole = chat._backend.encode(text, add_special_tokens=False).ids
            assert chat.encode(text) == whole
            assert asyncio.run(chat.encode_async(text)) == whole
