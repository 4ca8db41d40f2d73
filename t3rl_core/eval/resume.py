"""Resuming an eval that stopped (engine death, Ctrl-C, preemption): finished episodes are kept only when
their record verifies, everything else runs again.

Beside `trajectories.jsonl`, `trajectories.index.jsonl` holds one line per written record: its key
(task, sample, repeat), the sha256 of the record's line, the fingerprint of the job that produced it (the
dataset row, the seed, the settings an episode depends on) and the attempt that wrote it. On resume a
record is kept when its line hashes to the indexed digest (not torn, not edited), its job fingerprint
equals the planned job's (same row, seed and settings) and the engine answered it (not `aborted`).
The files are rewritten with the kept lines verbatim, so a record's digest stays valid across attempts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from t3rl_core.atomic_files import atomic_write_text
from t3rl_core.os_errors import naming
from t3rl_core.outside_json import read_file

INDEX_FILE = "trajectories.index.jsonl"
# Engine settings that say how to reach or pace the engine, not what it answers.
OPERATIONAL = frozenset(
    {
        "url",
        "api_key",
        "concurrency",
        "timeout_s",
        "max_attempts",
        "backoff_s",
        "health_timeout_s",
        "latency_s",
    }
)

Key = tuple[str, int, int]


def digest(value: Any) -> str:
    """sha256 of a JSON value (keys sorted; anything not JSON as its str)."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str)
    except TypeError:  # keys that are not strings
        text = json.dumps(value, sort_keys=True, default=str).encode()
    return hashlib.sha256(text).hexdigest()


def settings_digest(runtime: Any, config: Any) -> str:
    """What every episode of the eval depends on besides its row and seed."""
    # The eval's record-writing child imports this module for `write` alone.
    # lazy: the benchmark identity's imports were ~17 ms of that child's start-up
    from t3rl_core.eval.identity import budget_of, decoding_of, scorer_record

    engine = {k: v for k, v in config.engine.model_dump(mode="json").items() if k not in OPERATIONAL}
    return digest(
        {
            "engine": engine,
            # What the engine is asked for and the episode's limits, as the benchmark identity records
            # them (the rollout's top_p under eval.top_p None, the context and response caps included).
            "sampling": decoding_of(runtime, config),
            "limits": budget_of(runtime.rollout),
            "parsers": runtime.parsers.model_dump(mode="json"),
            # An episode scored by another checker version (or t3rl scorer source) is another episode.
            "scorer": scorer_record(runtime.env, runtime.reward),
            "env": runtime.env.model_dump(mode="json"),
            "reward": runtime.reward.model_dump(mode="json"),
            "chat": runtime.chat.model_dump(mode="json"),
        }
    )


def line_digest(line: str | bytes) -> str:
    """sha256 of a line as written (UTF-8): a line read back as text, or the bytes the eval writes."""
    return hashlib.sha256(line if isinstance(line, bytes) else line.encode()).hexdigest()


@dataclass
class Resumed:
    """What an earlier attempt left: the kept records, how many episodes each attempt gave, and why
    the others run again."""

    records: dict[Key, dict[str, Any]] = field(default_factory=dict)
    attempt: int = 1
    rerun: Counter[str] = field(default_factory=Counter)
    # The t3rl commit each earlier attempt ran (its summary.json's `attempts.commits`, or `git` of one
    # written before they were kept); an attempt whose summary was never written (killed) is absent.
    commits: dict[str, str | None] = field(default_factory=dict)
    # The model the kept records were played by (the earlier summary.json's `model`; None: not known).
    model: dict[str, Any] | None = None

    def another_model(self, model: Mapping[str, Any] | None, out_dir: Path) -> str | None:
        """Why this attempt may not add episodes to the kept ones: its engine serves another model than
        the one that played them (compared as every comparison shows a model: not where it is served,
        compared.ACROSS_HIDDEN), so the result would average two models' episodes under one name.
        None when nothing is kept, either model is not known, or they are the same."""
        from t3rl_core.eval.compared import ACROSS_HIDDEN  # lazy: see settings_digest

        if not self.records or self.model is None or model is None:
            return None
        sides = [{k: v for k, v in side.items() if k not in ACROSS_HIDDEN} for side in (self.model, model)]
        if sides[0] == sides[1]:
            return None
        return (
            f"not resumed: the {len(self.records)} episode(s) kept here were played by {_shown(sides[0])}, "
            f"and this attempt's engine serves {_shown(sides[1])}; one result would average two models' "
            "episodes. Serve the model the kept episodes were played by again, or evaluate this one into "
            f"another --out (or without --resume; a pipeline's eval stage, which always resumes: remove "
            f"{out_dir} and run the stage again)"
        )


def load(out_dir: Path, trajectories: Path, jobs: Mapping[Key, str]) -> Resumed:
    """The verified records of `jobs` (key → job fingerprint) in `trajectories`; both files rewritten
    to hold only those."""
    index_path = out_dir / INDEX_FILE
    index: dict[Key, dict[str, Any]] = {}
    attempts = [0]
    for _, entry in _objects(index_path):
        key = _key(entry.get("key")) if entry is not None else None
        if entry is not None and key is not None:
            index[key] = entry
            attempt = entry.get("attempt")
            attempts.append(attempt if type(attempt) is int else 0)
    earlier = _earlier_summary(out_dir / "summary.json")
    model = earlier.get("model")
    resumed = Resumed(
        attempt=max(attempts) + 1,
        commits=_earlier_commits(earlier),
        model=model if isinstance(model, dict) else None,
    )
    kept_lines, kept_index = [], []
    for line, record in _objects(trajectories):
        if record is None:
            resumed.rerun["torn"] += 1
            continue
        key = _key([record.get("task_id"), record.get("sample"), record.get("repeat", 0)])
        if key is None or key not in jobs:
            continue  # another plan's episode: not part of this eval
        entry = index.get(key)
        if entry is None or entry.get("sha256") != line_digest(line + "\n"):
            resumed.rerun["unverified"] += 1
        elif entry.get("job") != jobs[key]:
            resumed.rerun["changed"] += 1
        elif record.get("status") == "aborted":
            resumed.rerun["engine_failed"] += 1
        elif (record.get("attribution") or {}).get("party") == "infrastructure":
            # Its world, sandbox or user model failed it, not the model: played again, as the engine's.
            resumed.rerun["infrastructure_failed"] += 1
        else:
            resumed.records[key] = record
            kept_lines.append(line + "\n")
            kept_index.append(json.dumps(entry) + "\n")
    # Rewritten whole or not at all: stopped here, the finished episodes must still be there.
    atomic_write_text(trajectories, "".join(kept_lines))
    atomic_write_text(index_path, "".join(kept_index))
    return resumed


def start(out_dir: Path, trajectories: Path) -> None:
    """A fresh eval: no earlier record."""
    trajectories.write_text("")
    (out_dir / INDEX_FILE).write_text("")


def index_line(key: Key, line: str | bytes, job: str, attempt: int) -> str:
    return json.dumps({"key": list(key), "sha256": line_digest(line), "job": job, "attempt": attempt}) + "\n"


def write(sink: IO[Any], index: IO[str], key: Key, line: str | bytes, job: str, attempt: int) -> None:
    """Append one record and its index entry, both flushed (the record first: an index entry without
    its record never verifies anything). `line` is text for a text `sink`, bytes (UTF-8) for a binary
    one, as the eval writes it."""
    with naming(sink):
        sink.write(line)
        sink.flush()
    with naming(index):
        index.write(index_line(key, line, job, attempt))
        index.flush()


def attempts_summary(
    records: list[Mapping[str, Any]], resumed: Resumed, git: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """How many scored episodes each attempt gave, why episodes of earlier attempts ran again, and the
    t3rl commit of each attempt that gave them (`git` is this attempt's; None: not known)."""
    counts = Counter(str(r.get("attempt", 1)) for r in records)
    by_attempt = dict(sorted(counts.items(), key=lambda item: int(item[0])))
    commits = resumed.commits | {str(resumed.attempt): commit_of(git)}
    return {
        "this": resumed.attempt,
        "episodes_by_attempt": by_attempt,
        "rerun": dict(resumed.rerun),
        # A resume keeps an earlier attempt's episodes when their settings are equal, whatever t3rl ran
        # them: an eval whose episodes came from two commits says so (compared.ACROSS shows it).
        "commits": {attempt: commits.get(attempt) for attempt in by_attempt},
    }


def commit_of(git: Mapping[str, Any] | None) -> str | None:
    """`<sha>` or `<sha> (dirty)` of a summary's `git`; None when not in a git checkout."""
    sha = git.get("sha") if isinstance(git, Mapping) else None
    return f"{sha}{' (dirty)' if git.get('dirty') else ''}" if isinstance(sha, str) and git else None


def _earlier_summary(summary: Path) -> dict[str, Any]:
    """An earlier attempt's summary.json; empty when it is missing or damaged (what it would say of the
    earlier attempts is then not known)."""
    try:
        earlier = read_file(summary, encoding="utf-8")
    except (OSError, ValueError):
        return {}
    return earlier if isinstance(earlier, dict) else {}


def _shown(model: Mapping[str, Any]) -> str:
    checkpoint = model.get("checkpoint")
    if isinstance(checkpoint, Mapping) and checkpoint.get("fingerprint"):
        return f"checkpoint {str(checkpoint['fingerprint'])[:12]}… ({checkpoint.get('path')})"
    named = model.get("served_model") or model.get("model_path") or model.get("policy") or model.get("engine")
    return f"{model.get('engine')} {named}" if named != model.get("engine") else str(named)


def _earlier_commits(earlier: Mapping[str, Any]) -> dict[str, str | None]:
    """The commits of the attempts an earlier summary records."""
    attempts = earlier.get("attempts")
    if not isinstance(attempts, dict):
        return {}
    kept = attempts.get("commits")
    if isinstance(kept, dict):
        return {str(k): v if isinstance(v, str) else None for k, v in kept.items()}
    return {str(attempts.get("this", 1)): commit_of(earlier.get("git"))}


def _key(value: Any) -> Key | None:
    if not isinstance(value, list) or len(value) != 3:
        return None
    task, sample, repeat = value
    if not isinstance(task, str) or not isinstance(sample, int) or not isinstance(repeat, int):
        return None
    return task, sample, repeat


def _objects(path: Path) -> list[tuple[str, dict[str, Any] | None]]:
    """Each line of `path` with the JSON object it holds, None for a line that holds none: torn by a
    crash mid-write, or past it (the rest of a disk block, bytes that are no UTF-8), or another JSON
    value. A resume read such a file whole as UTF-8 and each line's value as an object: one byte
    0xff, or a line `[1, 2]`, raised out of `--resume` and the eval could not go on at all."""
    if not path.exists():
        return []
    # Bytes that are no UTF-8 become U+FFFD: their line no longer hashes to its digest, and every
    # line t3rl wrote (ASCII JSON) reads as it was written. On "\n" only: a record's line is JSON,
    # whose escapes keep every other line break inside strings.
    found: list[tuple[str, dict[str, Any] | None]] = []
    for line in path.read_bytes().decode("utf-8", "replace").split("\n"):
        if not line:
            continue
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            value = None
        found.append((line, value if isinstance(value, dict) else None))
    return found
