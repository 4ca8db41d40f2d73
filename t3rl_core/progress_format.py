"""The progress lines t3rl's commands print when no terminal shows a bar, declared once: the writers
(the eval runner, a data preparation, `t3rl score`) format them here, and the launcher
(`launch.run.stage_progress`) parses them with the patterns made here from the same pieces, so a
change of wording cannot leave the live bar under a running stage reading nothing.

    eval progress: 0/40 episodes, starting                      (before the first episode ends)
    eval progress: 12/40 episodes, accuracy 0.500, ETA 82s
    data progress: 120/800 rows built, ETA 3s
"""

from __future__ import annotations

import re

from t3rl_core.counts import counted

EVAL_LABEL = "eval progress"
DATA_LABEL = "data progress"
SCORE_LABEL = "score progress"
# Said after the counts while no episode has ended yet (the engine loads, the first episode runs).
STARTING = "starting"

_COUNTS = r"(?P<done>\d+)/(?P<total>\d+)"
_ETA = r"(?:, ETA (?P<eta>\d+)s)?"


def _eta(eta_s: float | None) -> str:
    return "" if eta_s is None else f", ETA {eta_s:.0f}s"


def eval_line(done: int, total: int, accuracy: float | None = None, eta_s: float | None = None) -> str:
    """`eval progress: done/total episodes, accuracy A, ETA Ns`; `, starting` while no accuracy is known."""
    said = STARTING if accuracy is None else f"accuracy {accuracy:.3f}"
    return f"{EVAL_LABEL}: {done}/{counted(total, 'episode')}, {said}{_eta(eta_s)}"


def counted_line(label: str, done: int, total: int, what: str, eta_s: float | None = None) -> str:
    """`<label>: done/total <what>, ETA Ns` (a data preparation's phase, `t3rl score`'s lines)."""
    return f"{label}: {done}/{total} {what}{_eta(eta_s)}"


EVAL_LINE = re.compile(
    rf"^{EVAL_LABEL}: {_COUNTS} episodes?, (?:accuracy (?P<accuracy>\d+\.\d+)|{STARTING}){_ETA}"
)
DATA_LINE = re.compile(rf"^{DATA_LABEL}: {_COUNTS} (?P<what>[^,\n]+){_ETA}")
