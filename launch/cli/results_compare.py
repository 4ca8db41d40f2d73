"""Eval results side by side only when they measured the same benchmark (t3rl_core.eval.identity).

`t3rl runs` shows each eval stage's metric and the verdict on its recipe's published result; a result
whose benchmark identity differs from its stage's reference (the identity most of the listed results of
that eval stage share, the newest run's on a tie) is not shown beside the others: its cell names the part
that differs, and `--mixed-identity` shows its value anyway, marked. `t3rl runs diff A B` compares the
two runs' eval results stage by stage, and refuses (exit 1) when their identities differ, naming the part.

A summary written before identities were recorded has none: beside recorded ones it is not ranked (`runs`)
or refused (`runs diff`), since what it measured is unknown; two such summaries are compared, marked so. A
summary.json that cannot be read, an eval stage only one run has, and a pass@k the eval did not measure are
named, never left out or shown as a bare '–'.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.markup import escape
from rich.table import Table

from launch.cli.runs_filter import BadFilter, check_metric, lookup
from launch.run.record_files import DEFAULT_METRIC, EVAL_RECORD, RunDirError, read_json
from t3rl_core import outside_json

if TYPE_CHECKING:
    from rich.console import Console

# The eval summary key `t3rl runs` and `runs diff` show unless --metric names another.

# t3rl_core's identity and verdict modules are imported where used: `launch.cli.app` imports this module
# (through launch.cli.runs) for every command, and they load importlib.metadata and statistics.

MIXED_FLAG = "--mixed-identity"
MIXED_HELP = "Show results of differing benchmark identity side by side anyway, marked with what differs."
# Marks a result whose summary and the other's both predate identities: nothing tells whether they compare.
NEITHER_RECORDED = (
    "not recorded: neither summary records what its eval measured (both written before t3rl kept a "
    "benchmark identity), so nothing tells whether they compare"
)
_PASS_K = re.compile(r"pass[@^](\d+)")


def reference_identity(
    summaries: Iterable[Mapping[str, Any]], metric: str = DEFAULT_METRIC
) -> Mapping[str, Any] | None:
    """The identity most recorded summaries share for a comparison on `metric` (the first one's on a
    tie), among those that hold a number there: an eval that did not select a category has none of it,
    and as the newest it made the one eval that did 'not ranked'. None when none is recorded."""
    # lazy: importlib.metadata (installed versions), only when results are compared
    from t3rl_core.eval.identity import reference

    holding = [s for s in summaries if metric_value(s, metric) is not None]
    return reference((s.get("identity") for s in holding), metric)


def differing(
    summary: Mapping[str, Any], reference: Mapping[str, Any] | None, metric: str = DEFAULT_METRIC
) -> list[str]:
    """How `summary`'s identity differs from the reference for a comparison on `metric` (empty when
    equal, or when no listed summary records one)."""
    own = summary.get("identity")
    if reference is None:
        return []
    # An older summary has none: beside recorded ones, what it measured is unknown (named as such).
    return all_differences(reference, own if isinstance(own, Mapping) else None, metric)


def all_differences(
    a: Mapping[str, Any] | None, b: Mapping[str, Any] | None, metric: str = DEFAULT_METRIC
) -> list[str]:
    """identity.differences on `metric` (a part this t3rl does not know included: it is never taken for
    equal), with a `data:` part of two splits named by the splits."""
    # lazy: importlib.metadata (installed versions), only when results are compared
    from t3rl_core.eval import identity as identities

    if a is None or b is None:
        return identities.differences(a, b)
    return [_split_named(part, a, b) for part in identities.differences(a, b, metric)]


def _split_named(part: str, a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """`data:` of two evals of different splits as the splits' names (it read "bfcl_test c50eca… vs
    null; bfcl_val null vs d683f3…")."""
    splits = [
        set(side.get("data") or {}) if isinstance(side.get("data"), Mapping) else None for side in (a, b)
    ]
    if not part.startswith("data:") or None in splits or splits[0] == splits[1]:
        return part
    return f"data: another split: {', '.join(sorted(splits[0]))} vs {', '.join(sorted(splits[1]))}"


def remedy_of(parts: list[str]) -> str:
    """What makes two results of these differing parts comparable (identity.remedy), and for a part this
    t3rl does not know, the t3rl that wrote it."""
    from t3rl_core.eval import identity as identities  # lazy: see all_differences

    known = [part for part in parts if not part.endswith(identities.NEWER_PART)]
    fixes = [identities.remedy(known)] if known else []
    if len(known) < len(parts):
        fixes.append(
            "compare them with the t3rl that wrote them (a newer one: `pip install -e .` of its commit)"
        )
    return "; ".join(fixes)


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
    metric: str = DEFAULT_METRIC,
) -> list[str]:
    """One eval stage's lines in `t3rl runs`' metric column (plain text: the caller escapes markup)."""
    missing = unmeasured(summary, metric) if value is None else None
    shown = "–" if value is None else f"{value:.3f}"
    head = f"{stage} {missing}" if missing else f"{stage} {shown}" + (f" (n={tasks})" if tasks else "")
    # A result with no number there, and why, is said as such: there is nothing of it to rank.
    parts = [] if missing else differing(summary, reference, metric)
    if parts:
        parts_text = "; ".join(parts)
        head = f"{head} [other benchmark: {parts_text}]" if mixed else f"{stage} not ranked: {parts_text}"
    verdict = verdict_line(summary)
    return [head, *([verdict] if verdict else [])]


def unmeasured(summary: Mapping[str, Any], metric: str) -> str | None:
    """Why a pass@k / pass^k the summary lacks was not measured (its k and samples), e.g. "pass@4 not
    measured: the eval measured k = 1 with 1 sample(s) per task (eval.samples >= 4 measures it)", or a
    category's number (the eval has no task of it); None for another metric."""
    name = metric.rpartition(".")[2]
    try:
        metric_value(summary, metric, strict=True)
    except ValueError as error:  # NaN, infinity, a text: named, never shown as a number ('nan', '+nan')
        return f"{name} not shown: {error}"
    except KeyError:
        pass
    category = metric.split(".")[1] if metric.startswith("categories.") and metric.count(".") >= 2 else None
    if category is not None and category not in (summary.get("categories") or {}):
        selected = (summary.get("identity") or {}).get("selection", {}).get("categories")
        return f"{name} not measured: this eval has no task of category {category}" + (
            f" (eval.categories: {', '.join(map(str, selected))})" if isinstance(selected, list) else ""
        )
    match = _PASS_K.fullmatch(name)
    if match is None:
        return None
    ks = summary.get("pass_k")
    measured = "k = " + ", ".join(str(k) for k in ks) if isinstance(ks, list) and ks else "no k"
    samples = summary.get("samples", "?")
    k = int(match[1])
    # Enough samples but k not asked (`--k 5` reports pass@1 and pass@5): the list of k is what is missing.
    asks = f"eval.pass_k with {k}" if isinstance(samples, int) and samples >= k else f"eval.samples >= {k}"
    return (
        f"{name} not measured: the eval measured {measured} with {samples} sample(s) per task ({asks} "
        "measures it)"
    )


def hidden_note(count: int) -> str | None:
    if not count:
        return None
    return (
        f"{count} result(s) measured another benchmark than the rest (identity differs, named in the "
        f"cell) and are not shown beside them; {MIXED_FLAG} shows their values, marked"
    )


def summaries_of(run_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """Eval stage → summary.json of a run dir (a `t3rl eval` record: its own summary, as stage `eval`),
    and eval stage → why its summary.json cannot be read (not JSON, or of no format t3rl knows)."""
    found: dict[str, dict[str, Any]] = {}
    unreadable: dict[str, str] = {}
    candidates = [("eval", run_dir / "summary.json")]
    candidates += [(p.parent.name, p) for p in sorted((run_dir / "stages").glob("*/summary.json"))]
    for stage, path in candidates:
        summary, damage = read_summary(path)
        if summary is not None and isinstance(summary.get("overall"), Mapping):
            found[stage] = summary
        elif summary is not None:
            unreadable[stage] = f"{path} has no 'overall' block (not an eval summary this t3rl can read)"
        elif damage:
            unreadable[stage] = damage
    return found, unreadable


def read_summary(path: Path) -> tuple[dict[str, Any] | None, str]:
    """An eval's summary.json, as every command that shows results reads it: (its mapping, "");
    (None, "") when there is none; (None, what is wrong) for one that cannot be read or is no JSON
    mapping (edited by hand, cut short: a list there raised AttributeError out of `t3rl runs`)."""
    try:
        summary = outside_json.read_file(path)
    except FileNotFoundError:
        return None, ""
    except (OSError, ValueError) as error:
        return None, f"{path} is not valid JSON" if isinstance(error, ValueError) else str(error)
    if not isinstance(summary, dict):
        return None, f"{path} is not the JSON mapping an eval writes"
    return summary, ""


def compare_results(
    a: Path,
    b: Path,
    console: Console,
    *,
    mixed: bool,
    why_missing: Callable[[Path, str], str],
    metric: str = DEFAULT_METRIC,
) -> int:
    """`runs diff`'s results section: each eval stage both runs have, side by side, when their
    benchmark identities are equal; 1 (refused, the differing parts named) when one pair's differ or a
    summary cannot be read. A stage only one run has is named, with `why_missing(run, stage)`: why the
    other run has none (launch.cli.runs reads its record: handed in, as runs imports this module)."""
    (left, left_bad), (right, right_bad) = summaries_of(a), summaries_of(b)
    try:
        check_metric(metric, [*left.values(), *right.values()])
    except BadFilter as error:
        console.print(f"[red]error:[/] {error.argument}: {escape(str(error))}", soft_wrap=True)
        return 2
    note = None
    if is_eval_record(b) and not is_eval_record(a):
        note = _pair_a_lone_eval(left, right, metric, _evaluated_stage(b))
    elif is_eval_record(a) and not is_eval_record(b):
        note = _pair_a_lone_eval(right, left, metric, _evaluated_stage(a), "A", "B")
    if note:
        console.print(escape(note), soft_wrap=True)
    stages = list(dict.fromkeys([*left, *left_bad, *right, *right_bad]))
    refused = broken = 0
    table = Table(title=f"eval results ({metric})", title_justify="left", show_lines=True)
    for column in ("stage", "A", "B", "B − A", "benchmark"):
        table.add_column(column, overflow="fold")
    for stage in stages:
        why = [f"{side}'s {bad[stage]}" for side, bad in (("A", left_bad), ("B", right_bad)) if stage in bad]
        if why:
            console.print(
                f"[red]error:[/] {escape(stage)}: not compared: {escape('; '.join(why))}; rerun that eval "
                "(`t3rl run --run-dir DIR`, or `t3rl eval --resume --out DIR` for an eval record)",
                soft_wrap=True,
            )
            broken += 1
            continue
        if stage not in left or stage not in right:
            side, other, run = ("A", "B", b) if stage in left else ("B", "A", a)
            why = escape(f"{other}'s {why_missing(run, stage)}")
            only = f"{escape(stage)}: only {side} has this eval stage's result ({why})"
            console.print(only, soft_wrap=True)
            continue
        parts = _identity_differences(left[stage], right[stage], metric)
        if parts:
            _refusal(console, stage, parts, a, b)
            refused += 1
            if not mixed:
                continue
        table.add_row(escape(stage), *_pair(left[stage], right[stage], metric, parts))
    if table.rows:
        console.print(table)
    if refused and not mixed:
        console.print(f"{MIXED_FLAG} shows them side by side anyway, marked", soft_wrap=True)
    return 1 if broken or (refused and not mixed) else 0


def is_eval_record(path: Path) -> bool:
    """Whether `path` is a `t3rl eval` record (its manifest says so; a pipeline may name a stage eval)."""
    manifest = path / "manifest.json"
    try:
        return manifest.is_file() and read_json(manifest, dict).get("record") == EVAL_RECORD
    except RunDirError:
        return False


def _evaluated_stage(path: Path) -> str | None:
    """The stage of its experiment a `t3rl eval` record evaluated (`--stage S`, its manifest's
    eval.stage), if any."""
    try:
        stage = (read_json(path / "manifest.json", dict).get("eval") or {}).get("stage")
    except (RunDirError, AttributeError):
        return None
    return stage if isinstance(stage, str) else None


def _pair_a_lone_eval(
    runs: dict[str, Any],
    record: dict[str, Any],
    metric: str,
    evaluated: str | None,
    side: str = "B",
    other: str = "A",
) -> str | None:
    """A `t3rl eval` record's one result (`record`, on `side`) beside a pipeline run's eval stages
    (`runs`): stages pair by name, so the record's `eval` was never compared with the stage it
    reproduces (`t3rl eval +experiment=X --stage S`). It is renamed in `record` to the stage it
    evaluated (`evaluated`, its manifest's) when `runs` has it (its identity is then compared as any
    pair's), else to the one stage of `runs` whose benchmark identity is its own, and the note says so;
    with none or several, the note names the stages, and nothing is paired."""
    if set(record) != {EVAL_RECORD} or EVAL_RECORD in runs or not runs:
        return None
    if evaluated in runs:
        record[evaluated] = record.pop(EVAL_RECORD)
        return (
            f"{side} is a `t3rl eval` record of stage {evaluated} (--stage): its result is compared with "
            f"{other}'s eval stage {evaluated}"
        )
    if not isinstance(record[EVAL_RECORD].get("identity"), Mapping):
        return None  # no identity to pair by (a summary older than identities): left to the names
    same = [
        stage
        for stage, summary in runs.items()
        if not _identity_differences(summary, record[EVAL_RECORD], metric)
    ]
    if len(same) == 1:
        record[same[0]] = record.pop(EVAL_RECORD)
        return (
            f"{side} is a `t3rl eval` record: its result is compared with {other}'s eval stage {same[0]}, "
            "the one that measured the same benchmark"
        )
    if same:
        why = f"{', '.join(same)} each measured its benchmark"
    else:
        firsts = (_identity_differences(summary, record[EVAL_RECORD], metric) for summary in runs.values())
        why = "none measured its benchmark: " + "; ".join(
            f"{stage}: {parts[0]}" for stage, parts in zip(runs, firsts, strict=True)
        )
    return f"{side} is a `t3rl eval` record: its result pairs with no eval stage of {other} ({why})"


def _identity_differences(left: Mapping[str, Any], right: Mapping[str, Any], metric: str) -> list[str]:
    """The parts two summaries' identities differ in for a comparison on `metric`; one recorded and one
    not differ ("identity: not recorded…"); two unrecorded ones are left to the table's mark."""
    ids = [s.get("identity") for s in (left, right)]
    recorded = [i if isinstance(i, Mapping) else None for i in ids]
    return [] if recorded == [None, None] else all_differences(*recorded, metric)


def _refusal(console: Console, stage: str, parts: list[str], a: Path, b: Path) -> None:
    console.print(
        f"[red]refused:[/] {escape(stage)}: the two evals measured different benchmarks, so their results "
        f"are not compared: {escape('; '.join(parts))} (A: {escape(str(a))}, B: {escape(str(b))}); "
        f"{escape(remedy_of(parts))}",
        soft_wrap=True,
    )


def _pair(left: Mapping[str, Any], right: Mapping[str, Any], metric: str, parts: list[str]) -> list[str]:
    """The A, B, B − A and benchmark cells of one eval stage."""
    numbers = [metric_value(side, metric) for side in (left, right)]
    bounds = [interval(side, metric, number) for side, number in zip((left, right), numbers, strict=True)]
    delta = f"{numbers[1] - numbers[0]:+.3f}" if None not in numbers else "–"
    if bounds[0] and bounds[1] and bounds[0][0] <= bounds[1][1] and bounds[1][0] <= bounds[0][1]:
        # As sweep.md marks points: overlapping 95 % intervals are not told apart.
        delta += "\nwithin both intervals: not told apart"
    recorded = all(isinstance(side.get("identity"), Mapping) for side in (left, right))
    same = "same" if recorded else NEITHER_RECORDED
    marks = ["[red]differs (shown by --mixed-identity)[/]" if parts else same]
    if left == right:
        marks.append("the same eval: B's summary is A's (the same run, or a copy of it)")
    marks += [escape(f"compared across {line}") for line in across(left, right)]
    for side, summary, number in zip("AB", (left, right), numbers, strict=True):
        missing = unmeasured(summary, metric) if number is None else None
        if missing:
            marks.append(escape(f"{side}: {missing}"))
    cells = [_cell(n, side, metric, b) for n, side, b in zip(numbers, (left, right), bounds, strict=True)]
    return [*cells, delta, "\n".join(marks)]


def metric_value(summary: Mapping[str, Any], metric: str, *, strict: bool = False) -> float | None:
    """The number at `metric` as every comparison reads it (launch.run.sweep.read_metric: a finite
    number, never NaN, infinity or a bool); None when there is none, or with `strict` the KeyError /
    ValueError saying why."""
    from launch.run.sweep import read_metric  # lazy: the sweep module, only for a sweep's metric

    try:
        return read_metric(summary, metric)
    except (KeyError, ValueError):
        if strict:
            raise
        return None


def across(left: Mapping[str, Any], right: Mapping[str, Any]) -> list[str]:
    """What two results of one benchmark were compared across, where they differ (compared.ACROSS: the
    model and engine, seed, samples, repeats, the t3rl commit), each as "label: what differs"."""
    from t3rl_core.eval.compared import ACROSS, ACROSS_HIDDEN  # lazy: see all_differences
    from t3rl_core.eval.identity import differences

    found = []
    for label, key in ACROSS.items():
        sides = [_without(_across_value(side, key), ACROSS_HIDDEN) for side in (left, right)]
        if sides[0] != sides[1]:
            # identity's own spelling of a difference ("key a vs b", a sha256 shortened)
            shown = differences({"scorer": sides[0]}, {"scorer": sides[1]})[0].partition(": ")[2]
            found.append(f"{label}: {shown}")
    return found


def _across_value(summary: Mapping[str, Any], key: str) -> Any:
    """The value at dotted `key`; the t3rl commits (`attempts.commits`, attempt → commit) as the sorted
    set of them, so that an eval resumed at its own commit equals one that ran once, and from `git` in a
    summary written before they were kept."""
    value = lookup(summary, key)
    if key != "attempts.commits":
        return value
    if isinstance(value, Mapping):
        return sorted({str(commit or "unknown") for commit in value.values()})
    from t3rl_core.eval.resume import commit_of  # lazy: only when results are compared

    return [commit_of(summary.get("git")) or "unknown"]


def _without(value: Any, hidden: frozenset[str]) -> Any:
    return {k: v for k, v in value.items() if k not in hidden} if isinstance(value, Mapping) else value


def interval(summary: Mapping[str, Any], metric: str, value: float | None) -> tuple[float, float] | None:
    """The 95 % Wilson interval of a rate (accuracy, pass@k, pass^k) over the tasks of the block that
    holds it, as sweep.md ranks points by (launch.run.sweep_compare); None for another metric or no
    count."""
    from launch.run.sweep_compare import count, is_rate  # lazy: only when results are compared
    from t3rl_core.eval.metrics import wilson_interval

    n = count(summary, metric)
    if value is None or n is None or not is_rate(metric) or not 0 <= value <= 1:
        return None
    return wilson_interval(round(value * n), n)


def tasks_key(metric: str) -> str:
    """The task count of the block holding `metric` ("categories.a.tasks" for "categories.a.accuracy"):
    a category's metric was shown with the overall's n, four times its own in a BFCL eval."""
    return f"{metric.rpartition('.')[0] or 'overall'}.tasks"


def shown_count(summary: Mapping[str, Any], metric: str) -> int | None:
    """The n shown beside a number: for a rate, the tasks it averages over (its interval's n, as
    sweep_compare.count reads it: tasks the engine left unscored are not among them); for another
    number, the block's tasks."""
    from launch.run.sweep_compare import count, is_rate  # lazy: only when results are compared

    if is_rate(metric):
        return count(summary, metric)
    tasks = lookup(summary, tasks_key(metric))
    return tasks if isinstance(tasks, int) and not isinstance(tasks, bool) else None


def _cell(
    value: float | None, summary: Mapping[str, Any], metric: str, bounds: tuple[float, float] | None
) -> str:
    tasks = shown_count(summary, metric)
    text = "–" if value is None else f"{value:.3f}" + (f" (n={tasks})" if tasks else "")
    if bounds is not None:
        text += f"\n95 % [{bounds[0]:.3f}, {bounds[1]:.3f}]"
    verdict = verdict_line(summary)
    return escape(text + (f"\n{verdict}" if verdict else ""))
