"""An experiment of data preparation only, on ReTool's bundled sample problems: a real stage that takes
about a second, for tests of the run record (written as conf/experiment/<name>.yaml of a test's
config dir), and a snapshot of what a run wrote."""

from pathlib import Path
from typing import Any

EXPERIMENT = """\
# @package _global_
defaults:
  - override /env: retool_python
  - override /reward: retool_outcome
  - override /executor: local
  - override /tracking: none
  - _self_
name: rec
env:
  data:
    test_size: 4
eval:
  split: retool_test
stages:
  prepare_data:
    kind: prepare_data
"""


def rec_config_dir(tmp_path: Path, monkeypatch: Any) -> Path:
    """A config dir holding EXPERIMENT as `rec`, with the working dir at `tmp_path` and no t3rl
    directory or tracker variables from the environment (pytest's monkeypatch undoes it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "T3RL_CHECKPOINTS_DIR", "WANDB_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    experiment = tmp_path / "conf" / "experiment" / "rec.yaml"
    experiment.parent.mkdir(parents=True)
    experiment.write_text(EXPERIMENT)
    return tmp_path / "conf"


def tree_snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and directory below `root`, and `root` itself, with its bytes and mtime: two equal
    snapshots mean nothing there was written, not even rewritten with the same bytes."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    } | {".": (b"<dir>", root.stat().st_mtime_ns)}
