"""An experiment of data preparation only, on ReTool's bundled sample problems: a real stage that takes
about a second, for tests of the run record (written as conf/experiment/<name>.yaml of a test's
config dir)."""

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
