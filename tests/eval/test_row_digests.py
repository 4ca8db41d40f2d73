"""The rows an eval hands its worlds are compared with their digests as each row's last episode ends,
not all after the last model call (t3rl_core.eval.runner.RowDigests; docs/explanation/performance.md,
issue 26 row 1): a changed row is still found, and a row whose episodes did not all end is compared at
the end, as before. In a whole eval: tests/eval/test_repeats_and_resume.py."""

from __future__ import annotations

import pytest

from t3rl_core.eval import resume
from t3rl_core.eval.runner import plan_jobs
from tests.support.eval_runs import reference_config


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every value `resume.digest` is asked for, in order."""
    asked: list[object] = []
    digest = resume.digest

    def counting(value: object) -> str:
        asked.append(value)
        return digest(value)

    monkeypatch.setattr(resume, "digest", counting)
    return asked


def test_each_row_is_compared_when_its_last_episode_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = [{"metadata": {"index": name}, "prompt": []} for name in ("a", "b", "c")]
    config = reference_config(concurrency=2, samples=2)
    jobs = plan_jobs(rows, config, "settings")
    digests = jobs[0].row_digests
    assert digests is not None
    digests.to_play(jobs[:-1])  # c's second sample is not played by this eval (resumed)
    for row in rows:
        digests.of(row)
    asked = _counting(monkeypatch)
    digests.ended(rows[0])
    assert asked == []  # a's second sample has not ended: a world may still change a
    rows[0]["prompt"].append({"role": "user", "content": "changed by its world"})
    digests.ended(rows[0])
    digests.ended(rows[1])
    digests.ended(rows[1])
    assert asked == [rows[0], rows[1]]
    rows[1]["prompt"].append({"role": "user", "content": "changed after its last episode ended"})
    digests.ended(rows[2])  # c's one episode here ended: c is compared now
    rows[2]["prompt"].append({"role": "user", "content": "changed after its last episode ended"})
    del asked[:]
    assert digests.changed() == [rows[0]]
    assert asked == []  # every row was compared as its episodes ended: nothing is digested again


def test_a_row_whose_episodes_did_not_all_end_is_compared_at_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rows = [{"metadata": {"index": name}, "prompt": []} for name in ("a", "b")]
    jobs = plan_jobs(rows, reference_config(concurrency=2), "settings")
    digests = jobs[0].row_digests
    assert digests is not None
    digests.to_play(jobs)
    for row in rows:
        digests.of(row)
    digests.ended(rows[0])
    rows[1]["prompt"].append({"role": "user", "content": "changed by a world stopped midway"})
    asked = _counting(monkeypatch)
    assert digests.changed() == [rows[1]]
    assert asked == [rows[1]]
