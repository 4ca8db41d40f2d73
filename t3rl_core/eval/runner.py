"""The standalone evaluation loop: k seeded samples per task, bounded concurrency, nothing lost.

Every finished episode is appended (and flushed) to `trajectories.jsonl` at once, so a crash or an
interrupt keeps all finished work; `resume=True` keeps the episodes already there whose records verify
against their index (t3rl_core.eval.resume) and runs the rest (engine-failed ones included) again. An
episode that raises is recorded as `failed` with its error instead of stopping the run. A failed
episode's record says whose fault it was (t3rl_core.eval.attribution). With `eval.repeats` > 1 the whole
eval runs that many times, repeat r with seed `eval.seed + r` (t3rl_core.eval.repeats).

`summary.json` is written at the end, also when the run stopped early (`complete: false` and the
`reason`), with what was evaluated (`model`, `sampling`, `dataset` with its sha256, `git`), the
benchmark's `identity` (t3rl_core.eval.identity), the verdict on each `published` result the recipe
declares (t3rl_core.eval.verdict), the `repeats` statistics and the episodes each `attempts` gave.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, closing, nullcontext
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

import t3rl_core
from t3rl_core.atomic_files import atomic_write_text
from t3rl_core.chat.format import ChatFormat
from t3rl_core.config import RuntimeConfig
from t3rl_core.data.rows import read_rows
from t3rl_core.engines.base import EngineUnavailable, SamplingParams
from t3rl_core.envs.base import StartsAhead
from t3rl_core.eval import record_writer
from t3rl_core.eval import resume as resuming
from t3rl_core.eval.attribution import attribute
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.identity import benchmark_identity, decoding_of
from t3rl_core.eval.metrics import OVERALL, EpisodeScore, summarize
from t3rl_core.eval.record_lock import record_lock
from t3rl_core.eval.records import file_sha256, git_state, model_record, run_stage_of
from t3rl_core.eval.repeats import repeat_stats
from t3rl_core.eval.schedule import start_order, tool_names
from t3rl_core.eval.slots import Slots, SlottedEngine, ahead_for
from t3rl_core.eval.verdict import verdicts
from t3rl_core.progress_format import eval_line
from t3rl_core.registries import ENGINES
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.secret import mask_revealed, mask_text

if TYPE_CHECKING:
    from rich.progress import TaskID

    from t3rl_core.engines.base import Engine

TRAJECTORIES_FILE = "trajectories.jsonl"
SUMMARY_FILE = "summary.json"


@dataclass(frozen=True)
class EpisodeJob:
    """One (task, sample) pair of the eval."""

    task_id: str
    category: str
    sample: int
    seed: int
    row: Mapping[str, Any]
    # Which whole-eval repeat (eval.repeats) the episode belongs to.
    repeat: int = 0
    # What every episode depends on besides its row and seed (resuming.settings_digest); "" for none.
    settings: str = ""
    # The rows' digests, shared by the jobs of one plan and made when a job's fingerprint is first read.
    row_digests: RowDigests | None = field(default=None, repr=False, compare=False)

    @property
    def key(self) -> resuming.Key:
        return self.task_id, self.sample, self.repeat

    @cached_property
    def fingerprint(self) -> str:
        """Of the row, seed and settings (t3rl_core.eval.resume): a resumed eval keeps a record only for
        it. Made when first read (a fresh eval: as the episode's record is written, not all before
        the first episode starts, ~20 ms for the 300 BFCL test rows; its row's digest as its first
        episode starts, which `rows_changed` compares with the row after the eval)."""
        if not self.settings or self.row_digests is None:
            return ""
        return resuming.digest([self.row_digests.of(self.row), self.seed, self.settings])


class RowDigests:
    """`resuming.digest` of each row, made once per row (a row's jobs: its samples and repeats).

    A row is digested again as the last of its episodes the eval plays ends (`to_play`, `ended`), not
    all rows after the last episode: that pass (~50-90 us a BFCL row, ~20-30 ms for the 300 test rows)
    held back the end of every eval, its CPU spent after the last model call, where nothing overlaps
    it. A row whose episodes did not all end (a stop, an episode without a record) is digested again
    at the end, as before."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[Mapping[str, Any], str]] = {}
        self._left: dict[int, int] = {}  # id of a row -> its episodes this eval plays that have not ended
        self._seen: dict[int, bool] = {}  # id of a row -> whether it hashed otherwise once they all ended

    def of(self, row: Mapping[str, Any]) -> str:
        made = self._made.get(id(row))
        if made is None:
            made = self._made[id(row)] = (row, resuming.digest(row))  # the row kept: its id stays its own
        return made[1]

    def to_play(self, jobs: Iterable[EpisodeJob]) -> None:
        """The episodes this eval plays (each row is held by its jobs: its id stays its own)."""
        for job in jobs:
            self._left[id(job.row)] = self._left.get(id(job.row), 0) + 1

    def ended(self, row: Mapping[str, Any]) -> None:
        """One episode of `row` ended: after its last one the row is compared with its digest now."""
        left = self._left.get(id(row))
        if left is None:
            return
        if left > 1:
            self._left[id(row)] = left - 1
            return
        del self._left[id(row)]
        made = self._made.get(id(row))
        if made is not None:
            self._seen[id(row)] = resuming.digest(row) != made[1]

    def changed(self) -> list[Mapping[str, Any]]:
        """The rows digested (each before its first episode) that hash otherwise now, or did once their
        episodes had all ended: a world changed the task it was handed, which every later sample and
        repeat of that row is handed too."""
        return [
            row
            for key, (row, made) in self._made.items()
            if (self._seen[key] if key in self._seen else resuming.digest(row) != made)
        ]


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The dataset rows of a prepared split, each checked; `DataError` names the file and line."""
    return read_rows(path)


def task_id(row: Mapping[str, Any]) -> str:
    """A row's id: its string `metadata.index` (BFCL: "multi_turn_base_5"), else "<data_source>/<index>"."""
    metadata = row.get("metadata") or {}
    index = metadata.get("index", "?")
    return index if isinstance(index, str) else f"{metadata.get('data_source', 'default')}/{index}"


def select_rows(rows: Iterable[Mapping[str, Any]], config: EvalConfig) -> list[Mapping[str, Any]]:
    """Keep the configured categories and the first `limit_per_category` rows of each, in file order."""
    kept: list[Mapping[str, Any]] = []
    per_category: dict[str, int] = {}
    for row in rows:
        category = (row.get("metadata") or {}).get("data_source", "default")
        if config.categories is not None and category not in config.categories:
            continue
        if (
            config.limit_per_category is not None
            and per_category.get(category, 0) >= config.limit_per_category
        ):
            continue
        per_category[category] = per_category.get(category, 0) + 1
        kept.append(row)
    return kept


def plan_jobs(rows: Iterable[Mapping[str, Any]], config: EvalConfig, settings: str = "") -> list[EpisodeJob]:
    """`config.samples` jobs per row and repeat, each with a seed that depends only on (eval seed +
    repeat, task, sample); `settings` (resuming.settings_digest) goes into each job's fingerprint."""
    listed = list(rows)
    digests = RowDigests()
    jobs = []
    for repeat in range(config.repeats):
        for row in listed:
            tid = task_id(row)
            category = (row.get("metadata") or {}).get("data_source", "default")
            for sample in range(config.samples):
                seed = zlib.crc32(f"{config.seed + repeat}/{tid}/{sample}".encode()) & 0x7FFFFFFF
                jobs.append(EpisodeJob(tid, category, sample, seed, row, repeat, settings, digests))
    if len({job.key for job in jobs}) != len(jobs):
        twice = sorted({task for task, n in Counter(task_id(row) for row in listed).items() if n > 1})
        raise ValueError(
            f"{len(twice)} task id(s) name more than one row ({', '.join(map(repr, twice[:5]))}): a row's "
            "id is its text metadata.index, else metadata.data_source/index, and task ids must be unique"
        )
    return jobs


def rows_changed(jobs: list[EpisodeJob], env: str) -> str | None:
    """Why the eval is incomplete when a world changed the rows it was handed (a factory appending to
    `task['prompt']`, popping a metadata key): the samples and repeats of a row share it, so those
    played after saw another task than the split's; None when every row is as planned."""
    digests = jobs[0].row_digests if jobs else None
    changed = digests.changed() if digests is not None else []
    if not changed:
        return None
    return (
        f"world {env} changed {len(changed)} task row(s) it was handed (e.g. {task_id(changed[0])}): the "
        "episodes of that row played after it saw another task than the split's; the world must copy "
        "what it changes (copy.deepcopy(task) in its factory) and the eval be run again"
    )


def apply_eval_limits(runtime: RuntimeConfig, config: EvalConfig) -> RuntimeConfig:
    """The runtime config with the eval's per-call token and per-episode step limits, when set."""
    update = {
        key: value
        for key, value in (("max_new_tokens", config.max_new_tokens), ("max_num_steps", config.max_num_steps))
        if value is not None
    }
    if not update:
        return runtime
    rollout = type(runtime.rollout).model_validate({**runtime.rollout.model_dump(), **update})
    return runtime.model_copy(update={"rollout": rollout})


async def run_eval(
    runtime: RuntimeConfig,
    config: EvalConfig,
    rows: list[Mapping[str, Any]],
    out_dir: Path,
    *,
    data_path: str | None = None,
    resume: bool = False,
    show_progress: bool = True,
    checkpoint: Path | None = None,
) -> dict[str, Any]:
    """Evaluate the selected `rows` into trajectories.jsonl and summary.json, and return the summary.

    The engine is checked before the first episode (EngineUnavailable propagates after summary.json
    says why). Episodes the engine fails (status `aborted`) are counted apart from wrong answers;
    once they exceed `max_engine_failure_rate` of the episodes, the eval stops and is incomplete.
    Another eval writing `out_dir` is refused with RecordsInUse before anything is written
    (t3rl_core/eval/record_lock.py)."""
    if any(k > config.samples for k in config.pass_k):
        raise ValueError(f"pass_k {config.pass_k} needs at most samples={config.samples} per task")
    out_dir.mkdir(parents=True, exist_ok=True)
    with record_lock(out_dir):
        return await _run_eval(
            runtime,
            config,
            rows,
            out_dir,
            data_path=data_path,
            resume=resume,
            show_progress=show_progress,
            checkpoint=checkpoint,
        )


async def _run_eval(
    runtime: RuntimeConfig,
    config: EvalConfig,
    rows: list[Mapping[str, Any]],
    out_dir: Path,
    *,
    data_path: str | None,
    resume: bool,
    show_progress: bool,
    checkpoint: Path | None,
) -> dict[str, Any]:
    runtime = apply_eval_limits(runtime, config)
    trajectories = out_dir / TRAJECTORIES_FILE
    jobs = plan_jobs(rows, config, resuming.settings_digest(runtime, config))
    if resume:
        resumed = resuming.load(out_dir, trajectories, {job.key: job.fingerprint for job in jobs})
    else:
        resuming.start(out_dir, trajectories)
        resumed = resuming.Resumed()
    done = resumed.records
    pending = [job for job in jobs if job.key not in done]

    sampling = SamplingParams(**decoding_of(runtime, config), max_new_tokens=runtime.rollout.max_new_tokens)
    chat = ChatFormat.from_config(runtime.chat, runtime.parsers)
    engine: Engine = ENGINES.build(config.engine, chat=chat)
    slots = Slots(config.concurrency, ahead_for(config.concurrency))
    runner = EpisodeRunner.from_runtime(runtime, SlottedEngine(engine, slots), chat=chat)
    if isinstance(runner.env_factory, StartsAhead):
        slots.on_first_wave = runner.env_factory.start_ahead
    pending = start_order(pending, runner.env_factory, config.concurrency, tool_names)
    if jobs and jobs[0].row_digests is not None:  # one for the plan's jobs (plan_jobs)
        jobs[0].row_digests.to_play(pending)
    records = [summarised(record) for record in done.values()]
    budget = FailureBudget(config.max_engine_failure_rate, len(jobs))
    # The checkout's git state for summary.json, read while the episodes run: two git commands that
    # would otherwise hold the summary back after the last episode.
    pool = ThreadPoolExecutor(1, thread_name_prefix="t3rl-eval-git")
    git = pool.submit(git_state, Path(t3rl_core.__file__).resolve().parents[1])
    pool.shutdown(wait=False)  # its one thread ends once the commands are done
    started = time.monotonic()
    outcome = Outcome(reason="stopped before every episode finished (interrupted or crashed)")
    # No bar (a pipeline stage, a log, not a terminal): plain progress lines, which the launcher
    # shows as a bar on its own terminal; the first at once, before the engine loads.
    show_progress = show_progress and sys.stderr.isatty()
    lines = None if show_progress else ProgressLines(len(jobs), len(done))
    if lines is not None:
        lines.start(records)
    runner_closed = False
    ready: dict[str, Any] | None = None  # the summary, made once every episode has ended
    try:
        try:
            served = await engine.check()
        except EngineUnavailable as error:
            outcome.reason = f"engine unavailable before the first episode: {error}"
            raise
        outcome.model = model_record(config.engine, served, checkpoint)
        mixed = resumed.another_model(outcome.model, out_dir)
        if mixed is not None:  # the kept records are the earlier model's: the summary stays theirs
            outcome.model, pending = resumed.model, []
        index_file = out_dir / resuming.INDEX_FILE
        with (
            _progress(show_progress) as progress,
            # Closed (every record sent written) before the summary, however the eval ends.
            closing(record_writer.writer(trajectories, index_file, len(pending))) as lines_out,
        ):
            bar = (
                progress.add_task("eval", total=len(jobs), completed=len(done), acc="") if progress else None
            )

            async def one(job: EpisodeJob) -> None:
                async with slots.episode():
                    if budget.exceeded:
                        return
                    if job.row_digests is not None:  # the row as planned, before its world sees it
                        job.row_digests.of(job.row)
                    record = await _run_episode(runner, job, sampling, resumed.attempt)
                # Its slot is free: the next episode's first call goes out before this record's JSON
                # (and, written on the loop, its masks, digest and write: t3rl_core.eval.record_writer),
                # which a cancellation here does not skip.
                try:
                    await asyncio.sleep(0)
                finally:
                    kept(job, record)

            def kept(job: EpisodeJob, record: dict[str, Any]) -> None:
                records.append(summarised(record))
                if job.row_digests is not None:
                    job.row_digests.ended(job.row)
                lines_out.write(job.key, record, job.fingerprint, resumed.attempt)
                if progress is not None and bar is not None:
                    _advance(progress, bar, records)
                if lines is not None:
                    lines.advance(records)
                if budget.add(record):
                    for task in tasks:  # the eval cannot pass any more: stop what is in flight
                        if task is not asyncio.current_task():
                            task.cancel()

            tasks: list[asyncio.Task[None]] = []
            try:
                for job in pending:
                    tasks.append(asyncio.create_task(one(job)))
                    # Started one by one: an episode whose first prompt is ready makes its first model
                    # call before the next one's set-up, not after every in-flight episode's set-up.
                    await asyncio.sleep(0)
            except BaseException:
                # Stopped (Ctrl-C) while starting them: an episode that has finished writes its record
                # as it is cancelled, so the files stay open until every task has ended.
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise
            results = await asyncio.gather(*tasks, return_exceptions=True)
            # Released before the record-writing child is waited for: the world's processes (BFCL's
            # tool-call workers, killed and reaped: ~10 ms) end while the child writes the last records.
            runner_closed = True
            await runner.aclose()  # closes the engine too
            for result in results:
                if isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                    raise result
            # Complete means a record of every episode selected: an episode task that ended without one
            # (anything that escaped it, a CancelledError nobody asked for) leaves the eval incomplete,
            # its missing episodes played again by --resume, never a summary over fewer tasks saying
            # complete.
            missing = len(jobs) - len(records)
            reason = (
                mixed
                or budget.reason(missing)
                or (f"{missing} episode(s) ended without a record; resume to play them" if missing else None)
                or world_failed(records, runtime.env.name)
                or rows_changed(jobs, runtime.env.name)
            )
            # The summary of that ending, made while the record-writing child writes the last records
            # (CPU that waited for it before); kept only once the records are all written, its wall
            # time set then. A writer that fails leaves the outcome as it was: the summary is made anew.
            ended = replace(outcome, reason=reason, complete=reason is None)
            prepared = _summary(
                runtime, config, records, data_path, 0.0, ended, out_dir, git.result(), resumed
            )
        outcome, ready = ended, prepared
    except (KeyboardInterrupt, asyncio.CancelledError, BrokenPipeError) as stop:
        # Stopped, not failed: Ctrl-C / SIGTERM, or the reader of its output went away (`| head`).
        # The summary says so (`stopped`), and `t3rl runs` shows the eval stopped, as a run's stage.
        why = STOPPED_READER_GONE if isinstance(stop, BrokenPipeError) else STOPPED_BY_USER
        outcome.reason, outcome.stopped = f"{why} before every episode finished; --resume goes on", True
        raise
    finally:
        if not runner_closed:
            await runner.aclose()
        wall_time_s = time.monotonic() - started
        if ready is None:
            summary = _summary(
                runtime, config, records, data_path, wall_time_s, outcome, out_dir, git.result(), resumed
            )
        else:
            summary = ready
            summary["wall_time_s"] = round(wall_time_s, 3)
        atomic_write_text(out_dir / SUMMARY_FILE, mask_revealed(json.dumps(summary, indent=2)) + "\n")
    return summary


@dataclass
class Outcome:
    """How the eval ended: complete, or the reason it is not; and the model it evaluated."""

    complete: bool = False
    reason: str | None = None
    model: dict[str, Any] | None = None
    # Ended by a stop (a signal, the reader of its output gone), not by a failure.
    stopped: bool = False


STOPPED_BY_USER = "stopped by the user (Ctrl-C or SIGTERM)"
STOPPED_READER_GONE = "stopped: the reader of its output went away (a pipe closed)"


@dataclass
class FailureBudget:
    """Engine failures allowed: at most `max_rate` of `total` episodes."""

    max_rate: float
    total: int
    failures: int = 0
    first_error: str | None = None

    @property
    def exceeded(self) -> bool:
        return self.failures > self.max_rate * self.total

    def add(self, record: Mapping[str, Any]) -> bool:
        """Count `record`; True when this one used up the budget."""
        if not record.get("engine_failure"):
            return False
        self.failures += 1
        self.first_error = self.first_error or record.get("error")
        return self.failures == math.floor(self.max_rate * self.total) + 1

    def reason(self, not_run: int) -> str | None:
        if not self.exceeded:
            return None
        stopped = f"; stopped early, {not_run} episode(s) not run" if not_run else ""
        return (
            f"the engine failed {self.failures} of {self.total} episode(s) "
            f"({self.failures / self.total:.1%} > eval.max_engine_failure_rate={self.max_rate:g}){stopped}; "
            f"first error: {self.first_error}"
        )


async def _run_episode(
    runner: Any, job: EpisodeJob, sampling: SamplingParams, attempt: int
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "task_id": job.task_id,
        "category": job.category,
        "index": (job.row.get("metadata") or {}).get("index"),
        "sample": job.sample,
        "repeat": job.repeat,
        "seed": job.seed,
        "attempt": attempt,
    }
    record = await _play(runner, job, sampling, record)
    # Only the engine ends an episode `aborted` (no answer, dropped connection, server abort).
    record["engine_failure"] = record["status"] == "aborted"
    return record | {"attribution": attribute(record, job.row)}


async def _play(
    runner: Any, job: EpisodeJob, sampling: SamplingParams, record: dict[str, Any]
) -> dict[str, Any]:
    try:
        episode, reward = await runner.run(job.row, "eval", sampling=replace(sampling, seed=job.seed), step=0)
    except Exception as error:  # one broken episode must not stop the eval
        return record | {
            "status": "failed", "success": False, "reward": 0.0, "progress": None,
            "error": f"{type(error).__name__}: {error}",
        }  # fmt: skip
    outcome = dict(episode.outcome or {})
    metrics = dict(reward.metrics)
    status = episode.status
    if episode.failure is not None and status != "aborted":
        # What broke it (the reward raised or returned no finite number; the world or t3rl raised) is
        # the infrastructure's: `failed`, as the attribution reads it, never the agent's wrong answer.
        status = "failed"
    # The episode's token lists and messages as they are, not copies: the result is this record's alone
    # (the runner keeps none of it), and copying a BFCL episode's ~25,000 ids cost ~60 µs a record.
    return record | {
        "status": status,
        # A failed episode is solved only by its world's own verdict, never by its reward; one the engine
        # did not finish (aborted) by nobody: a world whose check passes untouched (tau2's) made an engine
        # failure a success, which the attribution then left unattributed and the progress line counted.
        "success": status != "aborted"
        and (_success({}, outcome, 0.0) if status == "failed" else _success(metrics, outcome, reward.value)),
        "reward": reward.value,
        "progress": metrics.get("progress", outcome.get("progress")),
        "reward_metrics": metrics,
        "outcome": outcome,
        "num_model_calls": episode.num_model_calls,
        "format_repairs": episode.format_repairs,
        # Inserted tokens (tool outputs, turn closings) dropped at the context or response limit.
        "cut_tokens": episode.cut_tokens,
        # Tokens the engine answered past a turn's stop, dropped (slime's t3rl_metrics keeps the same).
        "after_stop_tokens": episode.after_stop_tokens,
        # The world's note on each env call (Transition.info), reset's first.
        "step_info": episode.step_info,
        # Whether the record's seed plays this episode again: the samplers it may not decide, and why.
        "reproducible": not episode.unseeded,
        "unseeded": episode.unseeded,
        "error": episode.error,
        "timings": dict(episode.timings or {}),
        "prompt_ids": episode.prompt_ids,
        "response_ids": episode.response_ids,
        "loss_mask": episode.loss_mask,
        "log_probs": episode.log_probs,
        "response_text": episode.response_text,
        "messages": episode.messages,
    }


def _success(metrics: Mapping[str, Any], outcome: Mapping[str, Any], reward: float) -> bool:
    """The env's own verdict (`accuracy`) when it reports one, else a full reward."""
    for source in (metrics, outcome):
        if "accuracy" in source and source["accuracy"] is not None:
            return float(source["accuracy"]) >= 1.0
    return reward >= 1.0


def world_failed(records: list[Mapping[str, Any]], env: str) -> str | None:
    """Why an eval whose every episode the infrastructure failed (its world, sandbox or user model
    raised: a plugin world's step that raises or returns no Transition) measured nothing; None when
    any episode was the model's to win or lose. Such an eval was complete with accuracy 0."""
    played = [r for r in records if r.get("status") != "aborted"]
    failed = [r for r in played if (r.get("attribution") or {}).get("party") == "infrastructure"]
    if not played or len(failed) < len(played):
        return None
    return (
        f"every episode failed in the infrastructure, not the model (env {env}): {failed[0].get('error')}; "
        "fix the world (its step, sandbox or user model: each record's `error`), then --resume plays "
        "these episodes again"
    )


# A record's per-token lists and conversation: most of its memory, and, kept to the end of the eval,
# most of what each collection walked while later episodes ran (a BFCL record holds ~10,000 prompt ids).
HEAVY_FIELDS = frozenset(
    {"prompt_ids", "response_ids", "loss_mask", "log_probs", "messages", "response_text"}
)


def summarised(record: Mapping[str, Any]) -> dict[str, Any]:
    """What summary.json reads of a record (its trajectory line keeps the rest): every field but the
    heavy ones, and the length of `response_ids` as `response_tokens`."""
    kept = {key: value for key, value in record.items() if key not in HEAVY_FIELDS}
    if "response_ids" in record:
        kept["response_tokens"] = len(record["response_ids"])
    return kept


def score_of(record: Mapping[str, Any]) -> EpisodeScore:
    attribution = record.get("attribution") or {}
    return EpisodeScore(
        task_id=record["task_id"],
        category=record["category"],
        success=bool(record["success"]),
        reward=float(record["reward"]),
        progress=record.get("progress"),
        status=record["status"],
        party=attribution.get("party"),
        kind=attribution.get("kind"),
    )


def _summary(
    runtime: RuntimeConfig,
    config: EvalConfig,
    records: list[dict[str, Any]],
    data_path: str | None,
    wall_time_s: float,
    outcome: Outcome,
    out_dir: Path,
    git: dict[str, Any],
    resumed: resuming.Resumed,
) -> dict[str, Any]:
    scored = [(int(r.get("repeat", 0)), score_of(r)) for r in records]
    scores = summarize((score for _, score in scored), config.pass_k)
    dataset = _dataset_record(config, data_path)
    response_lengths = [r["response_tokens"] for r in records if "response_tokens" in r]
    engine = config.engine.model_dump(mode="json")
    if engine.get("url"):
        engine["url"] = mask_text(engine["url"])
    summary: dict[str, Any] = {
        "split": config.split,
        "data": data_path,
        "engine": engine,
        "env": runtime.env.name,
        "reward_name": runtime.reward.name,
        "samples": config.samples,
        "repeats_count": config.repeats,
        "pass_k": list(config.pass_k),
        "temperature": config.temperature,
        "seed": config.seed,
        "max_new_tokens": runtime.rollout.max_new_tokens,
        "max_num_steps": runtime.rollout.max_num_steps,
        "complete": outcome.complete,
        "reason": outcome.reason,
        **({"stopped": True} if outcome.stopped else {}),
        "engine_failures": {
            "episodes": sum(bool(r.get("engine_failure")) for r in records),
            "max_rate": config.max_engine_failure_rate,
        },
        "model": outcome.model,
        "sampling": {
            **decoding_of(runtime, config),
            "max_new_tokens": runtime.rollout.max_new_tokens,
            "max_num_steps": runtime.rollout.max_num_steps,
            "samples": config.samples,
            "seed": config.seed,
        },
        "dataset": dataset,
        "identity": benchmark_identity(
            runtime, config, dataset["sha256"], records, complete=outcome.complete
        ),
        # The pipeline run and stage this eval belongs to (None for a standalone `t3rl eval`).
        "pipeline": run_stage_of(out_dir),
        "git": git,
        "wall_time_s": round(wall_time_s, 3),
        "mean_response_tokens": sum(response_lengths) / len(response_lengths) if response_lengths else None,
        **{
            key: {
                "episodes": sum(bool(r.get(key)) for r in records),
                "tokens": sum(int(r.get(key) or 0) for r in records),
            }
            for key in ("cut_tokens", "after_stop_tokens")
        },
        "attempts": resuming.attempts_summary(records, resumed, git),
        OVERALL: scores[OVERALL],
        "categories": scores["categories"],
        "repeats": repeat_stats(scored, config.repeats, config.pass_k, pooled=scores),
    }
    if config.published is not None:
        summary["published"] = {
            "tolerance": config.published.tolerance.model_dump(mode="json"),
            "verdicts": verdicts(summary, config.published),
        }
    return summary


def _dataset_record(config: EvalConfig, data_path: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {"split": config.split, "path": data_path, "sha256": None}
    if data_path and Path(data_path).is_file():
        record["sha256"] = file_sha256(Path(data_path))
    record |= {"categories": config.categories, "limit_per_category": config.limit_per_category}
    return record


class ProgressLines:
    """`eval progress: 12/40 episodes, accuracy 0.500, ETA 82s` on stdout (t3rl_core.progress_format),
    one at the start, then every 5 % of the episodes or 10 s (and at the end): readable in a log, and
    the line `launch` turns into a live bar."""

    def __init__(self, total: int, done: int, every_s: float = 10.0) -> None:
        self.total, self.done, self.every_s = total, done, every_s
        self.started, self.resumed_at = time.monotonic(), done
        self.last_shown, self.last_done = self.started, done
        self.step = max(1, total // 20)

    def advance(self, records: list[dict[str, Any]]) -> None:
        self.done += 1
        now = time.monotonic()
        pending = self.done < self.total
        if pending and self.done - self.last_done < self.step and now - self.last_shown < self.every_s:
            return
        self.last_shown, self.last_done = now, self.done
        accuracy = sum(bool(r["success"]) for r in records) / len(records)
        rate = (self.done - self.resumed_at) / max(now - self.started, 1e-9)
        eta = (self.total - self.done) / rate if self.done < self.total and rate > 0 else None
        print(eval_line(self.done, self.total, accuracy, eta), flush=True)

    def start(self, records: list[dict[str, Any]]) -> None:
        """The first line, at once: a pipe or a log shows the eval began (its first episode may take
        a minute); with kept episodes of a resume, their count and accuracy."""
        accuracy = sum(bool(r["success"]) for r in records) / len(records) if records else None
        print(eval_line(self.done, self.total, accuracy), flush=True)


def _progress(enabled: bool) -> AbstractContextManager[Progress | None]:
    if not enabled:
        return nullcontext()

    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[acc]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
    )


def _advance(progress: Progress, bar: TaskID, records: list[dict[str, Any]]) -> None:
    accuracy = sum(bool(r["success"]) for r in records) / len(records)
    progress.update(bar, advance=1, acc=f"acc {accuracy:.2f}")
