"""matplotlib as every t3rl chart draws with it (report.md's charts, sweep.png).

Their text is t3rl's and its users' names: a category from a hub dataset, a model path, a sweep point's
overrides. matplotlib reads text between two `$` as math and raises at savefig on what its parser
refuses (`x_{$y}$`, `$\\undefined$`): an eval with such a category ended in a ValueError after its
summary, with no report. Here math is never parsed: every text is drawn as written."""

from __future__ import annotations

from typing import Any


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend, with math text off."""
    import matplotlib  # lazy: matplotlib, only when a chart is drawn

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False
    import matplotlib.pyplot as plt  # lazy: matplotlib, only when a chart is drawn

    return plt
