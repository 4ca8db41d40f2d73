"""A reward that cuts the answer out of the decoded text at chat-format tokens (`RewardConfig.cuts_at()`)
cuts at tokens of the model's format: a model swap that leaves ToolRL's model_style behind warns, with
the style that fits (the episode loop's answers are the model's text alone, which a cut that finds
nothing keeps whole, so the config stays valid)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from t3rl_core.chat.families import FAMILIES
from t3rl_core.rewards.toolrl import ToolRLRewardConfig

TOOLRL = "+experiment=toolrl_grpo"
# An 8B model fits the experiment's two H100s with smaller micro-batches.
LLAMA = ["model=llama3_1_8b_instruct", "stages.train.hardware.max_tokens_per_gpu=8192"]


@pytest.mark.parametrize(
    ("overrides", "key", "style"),
    [
        ([TOOLRL, *LLAMA], "model.family", "llama"),
        ([TOOLRL, "reward.model_style=llama"], "reward.model_style", "qwen"),
    ],
    ids=["model-swapped", "style-changed"],
)
def test_a_cut_at_tokens_the_format_never_writes_warns(
    overrides: list[str],
    key: str,
    style: str,
    sandbox: Path,  # noqa: F811
) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 0, out
    assert f"warning {key}: reward toolrl cuts a decoded answer" in out, out
    assert f"fix: set reward.model_style={style}" in out, out
    code, after = _invoke("validate", *overrides, f"reward.model_style={style}")
    assert code == 0 and "cuts a decoded answer" not in after, after


def test_each_style_cuts_at_control_tokens_of_its_family(sandbox: Path) -> None:  # noqa: F811
    for style, family in (("qwen", "qwen2_5"), ("qwen", "qwen3"), ("llama", "llama3")):
        field, tokens = ToolRLRewardConfig(model_style=style).cuts_at()
        assert field == "model_style" and set(tokens) <= set(FAMILIES[family].special_tokens)
    code, out = _invoke("validate", TOOLRL, *LLAMA, "reward.model_style=llama")
    assert code == 0, out
