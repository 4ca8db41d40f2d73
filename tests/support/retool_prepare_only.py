"""An experiment of data preparation only, on ReTool's bundled sample problems: a real stage that takes
about a second, for tests of the run record (written as conf/experiment/<name>.yaml of a test's
config dir), and a snapshot of what a run wrote."""

from pathlib import Path

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


def tree_snapshot(root: Path) -> dict[str, tuple[bytes, int]]:
    """Every file and directory below `root`, and `root` itself, with its bytes and mtime: two equal
    snapshots mean nothing there was written, not even rewritten with the same bytes."""
    return {
        str(p.relative_to(root)): (p.read_bytes() if p.is_file() else b"<dir>", p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
    } | {".": (b"<dir>", root.stat().st_mtime_ns)}
