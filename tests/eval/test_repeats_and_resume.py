"""Whole-eval repeats (seeds, statistics, the report) and resuming an eval: only missing, engine-failed or
unverifiable episodes run again, and the summary says how many episodes each attempt gave."""

from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from t3rl_core.eval import repeats
from t3rl_core.eval.config import EvalConfig
from t3rl_core.eval.metrics import EpisodeScore, summarize
from t3rl_core.eval.repeats import repeat_stats
from t3rl_core.eval.report import render_markdown
from t3rl_core.eval.resume import INDEX_FILE
from t3rl_core.eval.runner import TRAJECTORIES_FILE, plan_jobs, run_eval
from tests.support.eval_runs import bfcl_runtime, count_episodes, read_records, reference_config
from tests.support.tiny_stack import bfcl_rows


@pytest.fixture(scope="module")
def rows():
    return bfcl_rows(per_category=1)


@pytest.fixture(scope="module")
def runtime():
    return bfcl_runtime()


def _config(**kw) -> EvalConfig:
    return reference_config(concurrency=4, **kw)


def test_repeat_r_is_the_eval_with_seed_plus_r(rows) -> None:
    jobs = plan_jobs(rows, _config(repeats=3, seed=5))
    assert len(jobs) == 3 * len(rows)
    by_repeat = {r: [j.seed for j in jobs if j.repeat == r] for r in range(3)}
    for repeat in range(3):
        alone = plan_jobs(rows, _config(seed=5 + repeat))
        assert [j.seed for j in alone] == by_repeat[repeat]
    assert len({j.key for j in jobs}) == len(jobs)


def test_statistics_across_repeats() -> None:
    def s(task: str, success: bool) -> EpisodeScore:
        return EpisodeScore(task, "cat", success, float(success))

    scored = [(0, s("a", True)), (0, s("b", True)), (1, s("a", True)), (1, s("b", False))]
    stats = repeat_stats(scored, 2, [1])
    assert stats["overall"]["accuracy"]["values"] == [1.0, 0.5]
    assert stats["overall"]["accuracy"]["mean"] == 0.75
    assert stats["overall"]["accuracy"]["std"] == pytest.approx(0.3535533905932738)
    assert stats["overall"]["agreement"] == 0.5  # a agreed, b did not
    assert repeat_stats(scored[:2], 1, [1])["overall"]["accuracy"]["std"] is None


SCORES = st.lists(
    st.builds(
        EpisodeScore,
        task_id=st.sampled_from("abcd"),
        category=st.sampled_from(["x", "y"]),
        success=st.booleans(),
        reward=st.floats(0, 1),
        status=st.sampled_from(["completed", "aborted", "failed"]),
    ),
    max_size=12,
)


@settings(max_examples=100, deadline=None)
@given(scores=SCORES, repeats=st.integers(1, 3), shifted=st.booleans())
def test_the_pooled_summary_stands_for_the_one_repeat_only(
    scores: list[EpisodeScore], repeats: int, shifted: bool
) -> None:
    scored = [((i % repeats) + shifted, score) for i, score in enumerate(scores)]
    pooled = summarize([score for _, score in scored], [1, 2])
    assert repeat_stats(scored, repeats, [1, 2], pooled=pooled) == repeat_stats(scored, repeats, [1, 2])


def test_one_repeat_is_not_summarized_again(monkeypatch: pytest.MonkeyPatch) -> None:
    scored = [(0, EpisodeScore("a", "x", True, 1.0)), (0, EpisodeScore("b", "x", False, 0.0))]
    pooled = summarize([score for _, score in scored], [1])
    monkeypatch.setattr(repeats, "summarize", lambda *args: pytest.fail("summarized again"))
    assert repeat_stats(scored, 1, [1], pooled=pooled)["overall"]["accuracy"]["values"] == [0.5]


def test_an_eval_with_repeats_reports_their_spread(rows, runtime, tmp_path) -> None:
    config = _config(repeats=2, engine={"name": "reference", "faults": {"malformed_json": 0.5}, "seed": 1})
    summary = asyncio.run(run_eval(runtime, config, rows, tmp_path, show_progress=False))
    records = read_records(tmp_path)
    assert sorted({r["repeat"] for r in records}) == [0, 1] and len(records) == 2 * len(rows)
    assert summary["overall"]["episodes"] == 2 * len(rows) and summary["overall"]["tasks"] == len(rows)
    stats = summary["repeats"]["overall"]
    assert len(stats["accuracy"]["values"]) == 2 and stats["agreement"] is not None
    report = render_markdown(summary)
    assert "## Variance across 2 repeats" in report and "per-task agreement" in report
    assert "## Failures by whose fault" in report


def test_resume_keeps_verified_episodes_and_reruns_the_rest(rows, runtime, tmp_path, monkeypatch) -> None:
    config = _config()
    out = tmp_path / "eval"
    full = asyncio.run(run_eval(runtime, config, rows, out, show_progress=False))
    head = full["attempts"].pop("commits")["1"]  # this checkout's (compared in test_comparable_hunt_wave2)
    assert full["attempts"] == {"this": 1, "episodes_by_attempt": {"1": 4}, "rerun": {}}
    lines = (out / TRAJECTORIES_FILE).read_text().splitlines(keepends=True)
    # Episode 0 stays as it is; 1 was edited after it was written; 2 is marked as an engine failure by a
    # matching index entry (as a real aborted episode is); 3 is missing.
    edited = lines[1].replace('"success": true', '"success": false')
    aborted = json.loads(lines[2]) | {"status": "aborted"}
    aborted_line = json.dumps(aborted) + "\n"
    index = [json.loads(line) for line in (out / INDEX_FILE).read_text().splitlines()]
    from t3rl_core.eval.resume import line_digest

    index[2]["sha256"] = line_digest(aborted_line)
    (out / TRAJECTORIES_FILE).write_text(lines[0] + edited + aborted_line)
    (out / INDEX_FILE).write_text("".join(json.dumps(entry) + "\n" for entry in index[:3]))

    played = count_episodes(monkeypatch)
    resumed = asyncio.run(run_eval(runtime, config, rows, out, resume=True, show_progress=False))
    assert sorted(played) == sorted(json.loads(line)["task_id"] for line in lines[1:])
    assert resumed["attempts"] == {
        "this": 2,
        "episodes_by_attempt": {"1": 1, "2": 3},
        "rerun": {"unverified": 1, "engine_failed": 1},
        "commits": {"1": head, "2": head},
    }
    assert resumed["overall"]["accuracy"] == full["overall"]["accuracy"] == 1.0
    assert [r["attempt"] for r in read_records(out)] == [1, 2, 2, 2]

    # Changed settings: a finished episode of another temperature is no episode of this eval.
    played.clear()
    changed = asyncio.run(
        run_eval(runtime, _config(temperature=0.5), rows, out, resume=True, show_progress=False)
    )
    assert len(played) == len(rows) and changed["attempts"]["rerun"] == {"changed": len(rows)}


def test_a_fresh_eval_digests_each_row_as_its_record_is_written_not_before_the_first_episode(
    rows, runtime, tmp_path, monkeypatch
):
    from t3rl_core.eval import resume, runner

    digested: list[int] = []
    at_first_episode: list[int] = []
    digest, run_episode = resume.digest, runner._run_episode

    def counting(value):
        digested.append(1)
        return digest(value)

    async def first(*args):
        at_first_episode.append(len(digested))
        return await run_episode(*args)

    after_the_episodes: list[int] = []
    rows_changed = runner.rows_changed

    def compared(*args):
        after_the_episodes.append(len(digested))
        reason = rows_changed(*args)
        after_the_episodes.append(len(digested))
        return reason

    monkeypatch.setattr(resume, "digest", counting)
    monkeypatch.setattr(runner, "_run_episode", first)
    monkeypatch.setattr(runner, "rows_changed", compared)
    config = reference_config(2)
    asyncio.run(run_eval(runtime, config, rows, tmp_path, show_progress=False))
    # The settings' digest and the first row's (taken as its first episode starts, so that a world
    # changing its row is found after: runner.rows_changed), never every row's before it.
    assert at_first_episode[0] <= 2
    # Each row was compared with its digest as its last episode ended (RowDigests.ended): none is
    # digested again after the last one, where nothing would overlap that CPU.
    assert after_the_episodes[0] == after_the_episodes[1]
    # Each record's index entry holds its job's fingerprint, as a resumed eval makes it.
    settings = resume.settings_digest(runner.apply_eval_limits(runtime, config), config)
    fingerprints = {job.key: job.fingerprint for job in plan_jobs(rows, config, settings)}
    entries = [json.loads(line) for line in (tmp_path / INDEX_FILE).read_text().splitlines()]
    assert len(entries) == len(rows)
    assert all(entry["job"] == fingerprints[tuple(entry["key"])] for entry in entries)
