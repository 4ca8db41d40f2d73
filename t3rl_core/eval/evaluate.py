"""One call for a whole evaluation: data selection, the engine (or a served checkpoint), the report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from t3rl_core import outside_json
from t3rl_core.config import RuntimeConfig
from t3rl_core.eval import loop
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.metrics import OVERALL
from t3rl_core.eval.report import STATUSES, write_report
from t3rl_core.eval.runner import SUMMARY_FILE, load_rows, run_eval, select_rows
from t3rl_core.eval.server import SERVER_LOG, SGLANG_LAUNCH, SGLangServer
from t3rl_core.yaml_text import safe_load


def load_eval_config(path: Path | None) -> EvalConfig:
    """An EvalConfig YAML file (its mapping at the top level or under `eval`); None = the defaults."""
    if path is None:
        return EvalConfig()
    data = safe_load(path.read_text()) or {}
    if set(data) == {"eval"}:
        data = data["eval"]
    return EvalConfig.model_validate(data)


def resolve_data(data: Path, split: str) -> Path:
    """The split file: `data` itself, or `<data>/<split>.jsonl` when `data` is a directory."""
    path = data / f"{split}.jsonl" if data.is_dir() else data
    if not path.is_file():
        raise FileNotFoundError(f"no eval data at {path} (run prepare_data, or pass the split file)")
    return path


def evaluate(
    runtime: RuntimeConfig,
    config: EvalConfig,
    data: Path,
    out_dir: Path,
    *,
    serve_checkpoint: Path | None = None,
    resume: bool = False,
    progress: bool = True,
    launch: Sequence[str] = SGLANG_LAUNCH,
) -> dict[str, Any]:
    """Run the eval into `out_dir` (trajectories, summary, report); returns the summary."""
    config = config.with_server_key()
    data_file = resolve_data(data, config.split)
    rows = select_rows(load_rows(data_file), config)
    if not rows:
        raise ValueError(f"no task of {data_file} matches categories={config.categories}")
    out_dir.mkdir(parents=True, exist_ok=True)

    def run(config: EvalConfig) -> dict[str, Any]:
        return loop.run(
            run_eval(
                runtime,
                config,
                rows,
                out_dir,
                data_path=str(data_file),
                resume=resume,
                show_progress=progress,
                checkpoint=serve_checkpoint,
            )
        )

    engine = config.engine
    if engine.name == "sglang" and getattr(engine, "url", None) is None:
        if serve_checkpoint is None:
            raise ValueError("engine sglang has no url: set eval.engine.url or pass --serve-checkpoint DIR")
        server = SGLangServer(
            serve_checkpoint,
            tp=config.server.tp or 1,  # unset: one GPU here (a pipeline's stage sizes its own server)
            tool_call_parser=runtime.parsers.tool_call_parser,
            # The server's parser would split on its own tags; t3rl parses the text itself anyway.
            reasoning_parser=None if runtime.parsers.think_tags else runtime.parsers.reasoning_parser,
            config=config.server,
            launch=launch,
            log_path=out_dir / SERVER_LOG,
        )
        with server:
            summary = _reported(
                out_dir,
                lambda: run(
                    config.model_copy(update={"engine": engine.model_copy(update={"url": server.url})})
                ),
            )
    else:
        summary = _reported(out_dir, lambda: run(config))
    _print(summary, out_dir)
    return summary


def _reported(out_dir: Path, run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """`run()`'s summary with report.md next to it, also when the run raised after writing one."""
    try:
        summary = run()
    except BaseException:
        if (out_dir / SUMMARY_FILE).is_file():
            write_report(outside_json.read_file(out_dir / SUMMARY_FILE), out_dir)
        raise
    write_report(summary, out_dir)
    return summary


def _print(summary: dict[str, Any], out_dir: Path) -> None:
    ks = summary["pass_k"]
    table = Table(
        title=f"{summary['split']} · engine {summary['engine']['name']}",
        caption="status: episodes " + "/".join(STATUSES),
    )
    columns = ["category", "tasks", "accuracy", "progress", *(f"pass@{k}" for k in ks), "status"]
    for column in columns:
        table.add_column(column, justify="left" if column == "category" else "right")
    for name, block in [*summary["categories"].items(), (OVERALL, summary[OVERALL])]:
        values = [block["accuracy"], block["progress"], *(block[f"pass@{k}"] for k in ks)]
        table.add_row(
            name,
            str(block["tasks"]),
            *("–" if v is None else f"{v:.3f}" for v in values),
            status_cell(block["statuses"]),
        )
    # A stage's log is read and grepped: a long line (the report's path) stays one line, not folded at 80.
    console = Console(soft_wrap=True)
    console.print(table)
    failures = summary[OVERALL].get("engine_failures", 0)
    if failures:
        console.print(
            f"[yellow]{failures} episode(s) failed in the engine[/] (not scored; "
            f"eval.max_engine_failure_rate={summary['engine_failures']['max_rate']:g})"
        )
    if not summary["complete"]:
        console.print(
            f"[red]eval incomplete[/]: {escape(summary.get('reason') or 'unknown')}", soft_wrap=True
        )
    console.print(f"report: {out_dir / 'report.md'}")


def status_cell(statuses: dict[str, int]) -> str:
    """Episode counts per status, in the caption's order: "7/1/0/0"."""
    return "/".join(str(statuses.get(name, 0)) for name in STATUSES)
