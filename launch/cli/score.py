"""`t3rl score WORLD FILE.jsonl [OVERRIDES…]`: score trajectories you already have, one JSON per line.

Line formats (other keys are ignored):
  bfcl    {"id": "multi_turn_base_3", "decoded": [[["cd(folder='x')"], …], …], "mode": "eval"}
  toolrl  {"id": …, "response": "<think>…</think>\\n<tool_call>…", "ground_truth": "…", "step": 0}
  retool  {"id": …, "response": "… <answer>\\boxed{42}</answer>", "answer": "42"}
  tau2    {"id": "0", "domain": "airline", "messages": [tau2 messages], "termination_reason": "agent_stop"}
  verifiers {"id": …, "prompt": [messages], "completion": [messages], "answer": "…", "info": {…}} (verifiers'
          results format), scored by the rubric of env=verifiers env.id=… (t3rl_core.envs.verifiers.rescore)
The env and reward configs come from the composed config, so overrides choose them as for a run
(`reward=toolrl_coarse`, `env.eval_max_step_limit=20`); a config that names another world's env or
reward leaves that world's defaults.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.progress import Progress

from launch.cli import completion
from launch.cli.out_option import check_writable, writable_out
from launch.config.errors import ConfigError, render_problems
from launch.config.resolved import composed_plain
from launch.config.schema_errors import problems_from_validation
from launch.config.secrets import scrub_text
from launch.files import LockHeld, atomic_write_text, exclusive_lock
from launch.run.exit_codes import EXIT_CONFIG
from t3rl_core import outside_json, registries, score
from t3rl_core.counts import counted
from t3rl_core.data.jsonl_lines import NotJsonl, numbered_lines
from t3rl_core.data.progress import ProgressLines
from t3rl_core.envs.base import Mode
from t3rl_core.eval.runner import load_rows, task_id
from t3rl_core.progress_format import SCORE_LABEL

if TYPE_CHECKING:
    from pydantic import BaseModel

    from t3rl_core.score import Verdict

# The worlds whose checkers score a line, and bfcl's two verdicts (the official one, T3RL's progress; the
# episode modes of t3rl_core.envs.base, which score.bfcl takes): declared on WORLD and --mode, so `--help`
# lists them and Typer refuses another before anything runs.
World = Literal["bfcl", "toolrl", "retool", "tau2", "verifiers"]
WORLDS: tuple[str, ...] = get_args(World)


def register(app: typer.Typer) -> None:
    app.command("score")(score_command)


def score_command(
    world: Annotated[
        World,
        typer.Argument(
            metavar="WORLD",
            help=f"one of {', '.join(WORLDS)}",
            show_default=False,
            autocompletion=completion.choices(WORLDS),
        ),
    ],
    file: Annotated[
        Path, typer.Argument(metavar="FILE", help="JSONL of trajectories, one per line", show_default=False)
    ],
    overrides: Annotated[
        list[str] | None,
        completion.overrides_argument(
            "Hydra overrides choosing env/reward configs, e.g. reward=toolrl_coarse"
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="output dir for verdicts.jsonl and summary.json (default: next to FILE, its name with "
            ".scored for .jsonl or .jsonl.gz: runs/r.jsonl → runs/r.scored/)",
            callback=writable_out,
        ),
    ] = None,
    mode: Annotated[
        Mode, typer.Option(help="bfcl: eval (official verdict) or train (T3RL progress)")
    ] = "eval",
    config_dir: Annotated[
        list[Path] | None,
        typer.Option(
            "--config-dir", metavar="DIR", help="Extra config dir searched after t3rl's (repeatable)."
        ),
    ] = None,
    progress: Annotated[bool, typer.Option(help="show a progress bar")] = True,
    data: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="a prepared split (JSONL rows): lines give only their id (as `t3rl eval` names tasks) "
            "and take the ground truth / answer / tau2 task from the row",
        ),
    ] = None,
) -> None:
    """Score a JSONL of trajectories with the worlds' own checkers; writes verdicts.jsonl + summary.json.

    FILE may be gzip-compressed (read whatever its name) and may start with a UTF-8 byte-order mark.

    One JSON object per line:

    bfcl: {"id": "multi_turn_base_3", "decoded": turns of steps of call strings, "mode": "eval"}

    toolrl: {"id": …, "response": "<think>…</think>…", "ground_truth": "…", "step": 0}

    retool: {"id": …, "response": "… <answer>\\boxed{42}</answer>", "answer": "42"}

    tau2: {"id": "0", "domain": "airline", "messages": tau2's messages, "termination_reason": "agent_stop"}

    Examples:

      t3rl score bfcl trajectories.jsonl

      t3rl score toolrl answers.jsonl reward=toolrl_coarse --out scored/
    """
    if not file.is_file():
        raise typer.BadParameter(f"{file} is not a file", param_hint="FILE")
    try:
        lines = numbered_lines(file)
    except (NotJsonl, OSError) as err:
        raise typer.BadParameter(str(err), param_hint="FILE") from None
    if not lines:
        raise typer.BadParameter(f"{file} has no line to score (it is empty)", param_hint="FILE")
    if data is not None and not data.is_file():
        raise typer.BadParameter(f"{data} is not a file", param_hint="--data")
    scorer = _scorer(world, _section(world, overrides or [], [str(d) for d in config_dir or []]), mode)
    if data is not None:
        scorer = _with_rows(world, scorer, data)
    refused = _not_of_world(world, file, lines, scorer)
    if refused is not None:
        raise typer.BadParameter(refused, param_hint="FILE")
    # The default, next to FILE, is checked as a given --out is (`writable_out`).
    scored = file.name.removesuffix(".gz").removesuffix(".jsonl") + ".scored"
    out = out or check_writable(file.with_name(scored))
    if (out / "config.yaml").is_file():  # its summary.json would replace an eval's, beside a run's record
        raise typer.BadParameter(
            f"{out} holds a run's or an eval's record; verdicts go into a dir of their own",
            param_hint="--out",
        )
    out.mkdir(parents=True, exist_ok=True)
    try:
        with exclusive_lock(out):  # two scorings into one dir would write one partial file
            summary = score_file(world, file, lines, out, scorer, show_progress=progress)
    except LockHeld:
        typer.echo(
            f"error: {out} is in use by another t3rl score (wait for it, or choose another --out)", err=True
        )
        raise typer.Exit(1) from None
    typer.echo(
        f"{summary['scored']} scored, {summary['errors']} failed to score; mean reward "
        f"{_fmt(summary['mean_reward'])}, success {_fmt(summary['success_rate'])} → {out}"
    )
    if summary["errors"]:
        _name_failed_lines(out / "verdicts.jsonl", file)
        raise typer.Exit(1)


# Lines named on stderr when some fail to score; verdicts.jsonl has every one.
_SHOWN_FAILURES = 20


def _name_failed_lines(verdicts: Path, file: Path) -> None:
    failed = [r for r in map(json.loads, verdicts.read_text(encoding="utf-8").splitlines()) if "error" in r]
    for record in failed[:_SHOWN_FAILURES]:
        typer.echo(f"{file}:{record['line']}: {record['error']}", err=True)
    if len(failed) > _SHOWN_FAILURES:
        typer.echo(f"… and {len(failed) - _SHOWN_FAILURES} more lines: see {verdicts}", err=True)


def score_file(
    world: str,
    file: Path,
    lines: list[tuple[int, bytes]],
    out: Path,
    scorer: Callable[[Mapping[str, Any]], Verdict],
    *,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Score every line of `file` (`lines`: `numbered_lines`, each decoded alone so a line that is not
    UTF-8 fails by itself) into `out`/verdicts.jsonl and `out`/summary.json. A line that cannot be
    scored becomes a verdict with its `error`; it never stops the others. The verdicts are written (and
    flushed per line) to `verdicts.jsonl.partial` and renamed once every line is scored, then the
    summary is written: a scoring stopped half-way leaves an earlier scoring in `out` whole, never new
    verdicts beside an old summary."""
    out.mkdir(parents=True, exist_ok=True)
    records: list[dict[str, Any]] = []
    started = time.monotonic()
    verdicts = out / "verdicts.jsonl"
    partial = out / "verdicts.jsonl.partial"
    # A bar on a terminal; in a log or CI (nothing redrawn) a line every few seconds on stderr.
    on_terminal = Console(stderr=True).is_terminal
    lines_shown = ProgressLines(sys.stderr, label=SCORE_LABEL) if show_progress and not on_terminal else None
    with (
        Progress(disable=not show_progress or not on_terminal, transient=True) as bar,
        partial.open("w", encoding="utf-8") as sink,
    ):
        task = bar.add_task(f"score {world}", total=len(lines))
        for done, (number, raw) in enumerate(lines, 1):
            record = _score_line(world, raw, number, scorer)
            records.append(record)
            # A line's text (a model's output, an error quoting it) may hold a credential.
            sink.write(scrub_text(json.dumps(record, default=str)) + "\n")
            sink.flush()
            bar.advance(task)
            if lines_shown is not None:
                lines_shown(done, len(lines), "lines scored")
    summary = _summary(world, file, records, time.monotonic() - started)
    (out / "summary.json").unlink(missing_ok=True)  # until the new one is written: no summary, not the old
    partial.replace(verdicts)
    atomic_write_text(out / "summary.json", scrub_text(json.dumps(summary, indent=2)) + "\n")
    return summary


# Keys each world's lines must have (the others are optional).
REQUIRED = {
    "bfcl": ("id", "decoded"),
    "toolrl": ("response", "ground_truth"),
    "retool": ("response", "answer"),
    "tau2": ("id", "domain", "messages"),
    "verifiers": ("prompt", "completion"),
}


# How many of FILE's first lines are read for its form before anything is written.
_PROBED = 50
# What every line of a t3rl eval's records holds (t3rl_core/eval/runner: the episode's tokens, whose fault).
EVAL_RECORD_KEYS = ("prompt_ids", "response_ids", "attribution")


def _has(world: str, item: Mapping[str, Any]) -> bool:
    return all(key in item or (key == "id" and "task_id" in item) for key in REQUIRED[world])


def _not_of_world(
    world: str, file: Path, lines: list[tuple[int, bytes]], scorer: Callable[[Mapping[str, Any]], Verdict]
) -> str | None:
    """Why FILE is no file of `world`'s lines, read from its first lines before anything is written: none
    has the keys a line of the world has (with --data, once filled from its row). A t3rl eval's own
    records (`t3rl score bfcl trajectories.jsonl`, the example's very name) failed each line as
    `missing decoded` and wrote a `.scored` dir into the run's record; another world's lines failed
    each the same way. None when some line is one, or none is a JSON object (each line says why)."""
    items = []
    for number, raw in lines[:_PROBED]:
        try:
            item = outside_json.loads(raw.decode("utf-8"), f"line {number}")
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(item, dict):
            items.append(item)
    if not items:
        return None
    fill = getattr(scorer, "fill", None)
    for item in items:
        try:
            if _has(world, fill(dict(item)) if fill is not None else item):
                return None
        except Exception:  # a row --data does not hold: that line's own error says so when scored
            continue
    form = f"a {world} line has {', '.join(REQUIRED[world])}"
    if all(key in items[0] for key in EVAL_RECORD_KEYS):
        return (
            f"{file} holds the episodes of a t3rl eval (its records: {', '.join(EVAL_RECORD_KEYS)}, …), "
            "scored by the world's own checker as they ran: their verdicts are in the summary.json and "
            f"report.md beside it. `t3rl score` reads another system's outputs, one JSON object per line "
            f"({form}; t3rl score --help shows each world's)"
        )
    keys = sorted({key for item in items for key in item})
    fits = [other for other in REQUIRED if other != world and any(_has(other, item) for item in items)]
    mean = f": did you mean t3rl score {fits[0]} {shlex.quote(str(file))}?" if fits else ""
    which = "its one line" if len(items) == 1 else f"the first {counted(len(items), 'line')}"
    return (
        f"{file} has no {world} line ({which} read: {form}; {'it has' if len(items) == 1 else 'they have'} "
        f"{', '.join(keys[:10])}{', …' if len(keys) > 10 else ''}){mean}"
    )


def _score_line(
    world: str, raw: bytes, number: int, scorer: Callable[[Mapping[str, Any]], Verdict]
) -> dict[str, Any]:
    try:
        item = outside_json.loads(raw.decode("utf-8"), f"line {number}")
        if not isinstance(item, dict):
            raise ValueError("a line must be a JSON object")
        item = getattr(scorer, "fill", lambda x: x)(item)
        missing = [
            key for key in REQUIRED[world] if key not in item and not (key == "id" and "task_id" in item)
        ]
        if missing:
            raise ValueError(
                f"missing {', '.join(missing)} (a {world} line has {', '.join(REQUIRED[world])})"
            )
        return {"line": number, **scorer(item).to_json()}
    except Exception as exc:
        return {"line": number, "world": world, "error": f"{type(exc).__name__}: {exc}"}


def _summary(world: str, file: Path, records: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    scored = [r for r in records if "error" not in r]
    groups: dict[str, list[dict[str, Any]]] = {}
    for record in scored:
        details = record.get("details") or {}
        groups.setdefault(str(details.get("category") or details.get("domain") or "all"), []).append(record)
    return {
        "world": world,
        "file": str(file),
        "lines": len(records),
        "scored": len(scored),
        "errors": len(records) - len(scored),
        # Scored with a value that is no grade (ReTool's answer past its grading budget): in the means
        # as the reference scores it, counted here so that a rate lowered by them says so.
        "not_graded": sum(bool((r.get("details") or {}).get("ungraded")) for r in scored),
        "mean_reward": _mean([r["reward"] for r in scored]),
        "success_rate": _mean([float(r["success"]) for r in scored]),
        "groups": {
            name: {
                "scored": len(group),
                "mean_reward": _mean([r["reward"] for r in group]),
                "success_rate": _mean([float(r["success"]) for r in group]),
            }
            for name, group in sorted(groups.items())
        },
        "wall_time_s": round(seconds, 3),
    }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


# ------------------------------------------------------------------------------------------ configs

_SECTION = {
    "bfcl": ("env", "bfcl_multi_turn"),
    "toolrl": ("reward", "toolrl"),
    "retool": ("reward", "retool_outcome"),
    "verifiers": ("env", "verifiers"),
}


def _section(world: str, overrides: list[str], config_dirs: list[str]) -> BaseModel | None:
    """The composed env/reward section of the world, validated with provenance; None when the composed
    config names another world's section (its defaults are used) or the world takes none (tau2)."""
    if world not in _SECTION:
        if overrides:
            raise typer.BadParameter(f"{world} takes no config overrides", param_hint="OVERRIDES")
        return None

    key, name = _SECTION[world]
    try:
        composed = composed_plain(overrides, config_dirs)
        data = composed.data.get(key) or {}
        if data.get("name") != name:
            return None
        registry = registries.ENVS if key == "env" else registries.REWARDS
        try:
            return registry.validate(data)
        except ValidationError as error:
            raise ConfigError(
                problems_from_validation(error, data, composed.provenance, prefix=key, root=composed.data)
            ) from None
    except ConfigError as error:
        render_problems([*error.problems, *error.warnings], Console(stderr=True))
        raise typer.Exit(EXIT_CONFIG) from None


def _scorer(world: str, section: Any, mode: str) -> Callable[[Mapping[str, Any]], Verdict]:
    if world == "bfcl":
        return lambda item: score.bfcl(
            item["decoded"], task_id=_id(item), mode=item.get("mode", mode), config=section
        )
    if world == "toolrl":
        return lambda item: score.toolrl(
            item["response"],
            item["ground_truth"],
            step=int(item.get("step", 0)),
            variant=section,
            id=_id(item),
        )
    if world == "retool":
        return lambda item: score.retool(item["response"], str(item["answer"]), config=section, id=_id(item))
    if world == "verifiers":
        if section is None:
            raise typer.BadParameter(
                "the rubric is the environment's: give env=verifiers env.id=…", param_hint="OVERRIDES"
            )
        # Here: verifiers' import tree loads only when a verifiers file is scored.
        from t3rl_core.envs.verifiers.rescore import rescore  # lazy: verifiers, only for the verifiers world

        return lambda item: rescore(item, section)
    return lambda item: score.tau2(
        item["messages"],
        domain=item["domain"],
        task_id=None if item.get("task") else _id(item),
        task=item.get("task"),
        termination_reason=item.get("termination_reason", "agent_stop"),
    )


class _WithRows:
    """A scorer whose lines take what they lack from the prepared row of the same task id."""

    def __init__(
        self, world: str, scorer: Callable[[Mapping[str, Any]], Verdict], rows: dict[str, Any]
    ) -> None:
        self.world, self.scorer, self.rows = world, scorer, rows

    def fill(self, item: dict[str, Any]) -> dict[str, Any]:
        row = self.rows.get(_id(item) or "")
        if row is None:
            return item
        metadata = row.get("metadata") or {}
        if self.world in ("toolrl", "retool"):
            return {"ground_truth" if self.world == "toolrl" else "answer": row.get("label"), **item}
        if self.world == "tau2":
            return {
                **item,
                "domain": item.get("domain", metadata.get("domain")),
                "task": metadata.get("task"),
            }
        return item

    def __call__(self, item: Mapping[str, Any]) -> Verdict:
        return self.scorer(item)


def _with_rows(world: str, scorer: Callable[[Mapping[str, Any]], Verdict], data: Path) -> _WithRows:
    try:
        rows = load_rows(data)
    except ValueError as err:
        raise typer.BadParameter(str(err), param_hint="--data") from None
    if not rows:  # every line would be scored without its row: refused as `t3rl eval --data` refuses it
        raise typer.BadParameter(f"{data} holds no row (it is empty)", param_hint="--data")
    return _WithRows(world, scorer, {task_id(row): row for row in rows})


def _id(item: Mapping[str, Any]) -> str | None:
    value = item.get("id", item.get("task_id"))
    return None if value is None else str(value)
