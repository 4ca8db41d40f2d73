"""Live progress of a running stage, read from its own output lines.

An eval stage prints `eval progress: 12/40 episodes, accuracy 0.500, ETA 82s` (t3rl_core.eval; `…,
starting` before its first episode ends), a data stage `data progress: 120/800 rows built, ETA 3s` per
phase of its preparation (t3rl_core.data.progress): both formats are t3rl_core.progress_format's;
slime logs `rollout 3: {...}` after each rollout and `step 17: {...}` after each train step. On a
terminal the local executor turns these into one live bar under the stage's output (eval and data
progress lines replace the bar rather than scroll); elsewhere (a pipe, CI, a log) every line is
printed as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

# The eval's and a data stage's lines, as their writers declare them (one format for both sides).
from t3rl_core.progress_format import DATA_LINE, EVAL_LINE

ROLLOUT_LINE = re.compile(r"\brollout (?P<rollout>\d+): \{")
STEP_LINE = re.compile(r"\bstep (?P<step>\d+): \{")


@dataclass
class StageProgress:
    """What a stage's output said about its progress so far."""

    done: int | None = None
    total: int | None = None
    # What `done` counts when it is not episodes (a data phase: "rows built").
    what: str | None = None
    accuracy: float | None = None
    rollout: int | None = None
    step: int | None = None

    def feed(self, line: str) -> str | None:
        """Take one output line; "eval", "data" or "train" when it was a progress line, else None."""
        if found := EVAL_LINE.search(line):
            self.done, self.total = int(found["done"]), int(found["total"])
            self.accuracy = float(found["accuracy"]) if found["accuracy"] is not None else None
            return "eval"
        if found := DATA_LINE.search(line):
            self.done, self.total = int(found["done"]), int(found["total"])
            self.what = found["what"].strip()
            return "data"
        if found := ROLLOUT_LINE.search(line):
            self.rollout = int(found["rollout"])
            return "train"
        if found := STEP_LINE.search(line):
            self.step = int(found["step"])
            return "train"
        return None

    def describe(self) -> str:
        parts = [self.what] if self.what else []
        if self.accuracy is not None:
            parts.append(f"accuracy {self.accuracy:.3f}")
        if self.rollout is not None:
            parts.append(f"rollout {self.rollout}")
        if self.step is not None:
            parts.append(f"train step {self.step}")
        return ", ".join(parts)


class LiveStageOutput:
    """Echoes a stage's output to `out`; on a terminal, also keeps a progress bar below it."""

    def __init__(self, out: TextIO, stage: str) -> None:
        self.out = out
        self.state = StageProgress()
        self.live = _is_terminal(out)
        self._progress: Any = None
        self._bar: Any = None
        self.stage = stage

    def write(self, line: str) -> None:
        kind = self.state.feed(line)
        if not self.live:
            self.out.write(line)
            self.out.flush()
            return
        if kind is None or kind == "train":
            self._console().print(line.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)
        if kind is not None:
            self._update()

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def _console(self) -> Any:
        if self._progress is None:
            self._progress = Progress(
                TextColumn("[bold]{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[detail]}"),
                TimeRemainingColumn(),
                console=Console(file=self.out),
                transient=True,
            )
            self._bar = self._progress.add_task(self.stage, total=None, detail="")
            self._progress.start()
        return self._progress.console

    def _update(self) -> None:
        self._console()
        state = self.state
        self._progress.update(
            self._bar, completed=state.done or 0, total=state.total, detail=state.describe()
        )


def _is_terminal(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):
        return False
