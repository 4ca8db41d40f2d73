"""Working dirs for CLI tests: the default runs, plans, checkpoints and models dirs under them, and
(for commands whose GPU stages pre-flight must refuse) no slime or Megatron checkout where the paths
point."""

from __future__ import annotations

from pathlib import Path

import pytest

MOVABLE = ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "WANDB_API_KEY")


def cli_workdir(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`work` (made if needed) as the working directory, none of the variables that move t3rl's dirs."""
    work.mkdir(parents=True, exist_ok=True)
    monkeypatch.chdir(work)
    for name in MOVABLE:
        monkeypatch.delenv(name, raising=False)
    return work


def no_slime_workdir(work: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`cli_workdir`, with SLIME_ROOT and MEGATRON_ROOT beside it and missing."""
    monkeypatch.setenv("SLIME_ROOT", str(work.parent / "no-slime"))
    monkeypatch.setenv("MEGATRON_ROOT", str(work.parent / "no-megatron"))
    return cli_workdir(work, monkeypatch)
