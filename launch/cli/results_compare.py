"""Eval results side by side only when they measured the same benchmark (t3rl_core.eval.identity).

`t3rl runs` shows each eval stage's metric and the verdict on its recipe's published result; a result
whose benchmark identity differs from the listing's reference (the identity most of the listed results
share, the newest run's on a tie) is not shown beside the others: its cell names the part that differs,
and `--mixed-identity` shows its value anyway, marked. `t3rl runs diff A B` compares the two runs' eval
results stage by stage, and refuses (exit 1) when their identities differ, naming the part.

Summaries written before identities were recorded have none: they are shown as before, unmarked.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

if TYPE_CHECKING:
    from rich.console import Console

# t3rl_core's identity and verdict modules are imported where used: `launch.cli.app` imports this module
# (through launch.cli.runs) for every command, and they load importlib.metadata and statistics.

MIXED_FLAG = "--mixed-identity"
MIXED_HELP = "Show results of differing benchmark identity side by side anyway, marked with what differs."


def reference_identity(summaries: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The identity most recorded summaries share (the first one's on a tie); None when none is recorded."""
    # lazy: importlib.metadata (installed versions), only when results are compared
    from t3rl_core.eval.identity import reference

    return reference(s.get("identity") for s in summaries)


def differing(summary: Mapping[str, Any], reference: Mapping[str, Any] | None) -> list[str]:
    """How `summary`'s identity differs from the reference (empty when equal or not recorded)."""
    # lazy: importlib.metadata (installed versions), only when results are compared
    from t3rl_core.eval import identity as identities

    own = summary.get("identity")
    if reference is None or not isinstance(own, Mapping):
        return []
    return identities.differences(reference, own)


def verdict_line(summary: Mapping[str, Any]) -> str | None:
    """The verdict on the recipe's target published result, in one line; None without a declaration."""
    from t3rl_core.eval.verdict import headline, one_line  # lazy: only when results are compared

    found = (summary.get("published") or {}).get("verdicts")
    if not found:
        return None
    target = headline(found)
    if target is None:
        labels = ", ".join(dict.fromkeys(v["label"] for v in found))
        return f"published (reference only, no target for this model): {labels}"
    return one_line(target)


def result_lines(
    stage: str,
    value: float | None,
    tasks: int | None,
    summary: Mapping[str, Any],
    reference: Mapping[str, Any] | None,
    *,
    mixed: bool,
) -> list[str]:
    """One eval stage's lines in `t3rl runs`' metric column (plain text: the caller escapes markup)."""
    shown = "–" if value is None else f"{value:.3f}"
    head = f"{stage} {shown}" + (f" (n={tasks})" if tasks else "")
    parts = differing(summary, reference)
    if parts:
        parts_text = "; ".join(parts)
        head = f"{head} [other benchmark: {parts_text}]" if mixed else f"{stage} not ranked: {parts_text}"
    verdict = verdict_line(summary)
    return [head, *([verdict] if verdict else [])]


def hidden_note(count: int) -> str | None:
    if not count:
        return None
    return (
        f"{count} result(s) measured another benchmark than the rest (identity differs, named in the "
        f"cell) and are not shown beside them; {MIXED_FLAG} shows their values, marked"
    )


def summaries_of(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Eval stage → summary.json of a run dir (a `t3rl eval` record: its own summary, as stage `eval`)."""
    found: dict[str, dict[str, Any]] = {}
    candidates = [("eval", run_dir / "summary.json")]
    candidates += [(p.parent.name, p) for p in sorted((run_dir / "stages").glob("*/summary.json"))]
    for stage, path in candidates:
        try:
            summary = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(summary, dict) and "overall" in summary:
            found[stage] = summary
    return found


def compare_results(
    a: Path, b: Path, console: Console, *, mixed: bool, metric: str = "overall.accuracy"
) -> int:
    """`runs diff`'s results section: each eval stage both runs have, side by side, when their
    benchmark identities are equal; 1 (refused, the differing parts named) when one pair's differ."""
    # lazy: importlib.metadata (installed versions), only when results are compared
    from t3rl_core.eval import identity as identities

    left, right = summaries_of(a), summaries_of(b)
    shared = [stage for stage in left if stage in right]
    if not shared:
        return 0
    refused = 0
    table = Table(title=f"eval results ({metric})", title_justify="left", show_lines=True)
    for column in ("stage", "A", "B", "B − A", "benchmark"):
        table.add_column(column, overflow="fold")
    for stage in shared:
        ids = [left[stage].get("identity"), right[stage].get("identity")]
        recorded = all(isinstance(i, Mapping) for i in ids)
        parts = identities.differences(*ids) if recorded else []
        if parts:
            console.print(
                f"[red]refused:[/] {escape(stage)}: the two evals measured different benchmarks, so their "
                f"results are not compared: {escape('; '.join(parts))} (A: {escape(str(a))}, B: "
                f"{escape(str(b))}); {escape(identities.remedy(parts))}",
                soft_wrap=True,
            )
            refused += 1
            if not mixed:
                continue
        numbers = [_metric(side[stage], metric) for side in (left, right)]
        delta = f"{numbers[1] - numbers[0]:+.3f}" if None not in numbers else "–"
        mark = (
            "[red]differs (shown by --mixed-identity)[/]" if parts else "same" if recorded else "not recorded"
        )
        cells = [_cell(number, side[stage]) for number, side in zip(numbers, (left, right), strict=True)]
        table.add_row(escape(stage), *cells, delta, mark)
    if table.rows:
        console.print(table)
    if refused and not mixed:
        console.print(f"{MIXED_FLAG} shows them side by side anyway, marked", soft_wrap=True)
        return 1
    return 0


def _metric(summary: Mapping[str, Any], metric: str) -> float | None:
    from launch.run.sweep import read_metric  # lazy: the sweep module, only for a sweep's metric

    try:
        return read_metric(summary, metric)
    except (KeyError, ValueError):
        return None


def _cell(value: float | None, summary: Mapping[str, Any]) -> str:
    tasks = (summary.get("overall") or {}).get("tasks")
    text = "–" if value is None else f"{value:.3f}" + (f" (n={tasks})" if tasks else "")
    verdict = verdict_line(summary)
    return escape(text + (f"\n{verdict}" if verdict else ""))
