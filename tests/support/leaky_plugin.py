"""A plugin env whose data preparation reveals credentials and fails with them in its output and its
error message: its configured `Secret` (`credential`), and one it builds itself (`env:LEAKY_SESSION`),
which the launcher cannot know from the config. Written into a test's directory with its config dir:
`prepare_data` runs it in the stage's own process, as a user's plugin runs."""

from __future__ import annotations

from pathlib import Path

MODULE = """\
from pathlib import Path
from typing import Any

from t3rl_core.config import EnvConfig
from t3rl_core.secret import Secret


class LeakyConfig(EnvConfig):
    name: str = "leaky_world:LeakyWorld"
    credential: Secret

    def split_names(self) -> list[str]:
        return ["leaky_test"]


class LeakyWorld:
    Config = LeakyConfig

    def __init__(self, config: LeakyConfig) -> None:
        self.config = config

    def __call__(self, task: dict[str, Any], mode: str) -> Any:
        raise NotImplementedError

    async def aclose(self) -> None:
        pass

    @staticmethod
    def prepare(config: LeakyConfig, out_dir: Path) -> dict[str, Path]:
        session = Secret("env:LEAKY_SESSION").reveal().get_secret_value()
        print(f"data service session {session}", flush=True)
        value = config.credential.reveal().get_secret_value()
        raise RuntimeError(f"the data service refused the credential {value}")
"""

EXPERIMENT = """\
# @package _global_
defaults:
  - override /model: tiny_qwen3
  - override /env: leaky
  - override /reward: binary
  - override /executor: local
  - override /tracking: none
  - _self_
name: leaky
eval:
  split: leaky_test
stages:
  prepare_data:
    kind: prepare_data
"""


def write_plugin(root: Path, credential: str) -> Path:
    """The plugin module under `root` and its config dir (returned), the env's credential set to
    `credential` (a reference)."""
    (root / "leaky_world.py").write_text(MODULE)
    conf = root / "conf"
    (conf / "env").mkdir(parents=True)
    (conf / "experiment").mkdir()
    (conf / "env" / "leaky.yaml").write_text(f"name: leaky_world:LeakyWorld\ncredential: {credential}\n")
    (conf / "experiment" / "leaky.yaml").write_text(EXPERIMENT)
    return conf
