"""Comparable results, round twelve: kinds no earlier round listed.

- A published declaration whose parts contradict each other (accuracy with k 4: the k was never read;
  pass@4 from 2 samples; a scope given two values: two verdicts on one number; a category named twice,
  never equal to an eval's) was accepted and gave verdicts on something no eval measures.
- What a source declares was compared as written, not by meaning: a scorer named `bfcl_eval` (its module's
  name) or `BFCL-Eval`, a version `26.3.0` of the installed 26.3, a greedy result's top-p (which greedy
  decoding ignores and the identity records as 1.0) made every eval `not comparable`.
- A value that no count of its tasks gives (0.571 over 20 tasks when each task is one success or failure:
  11.42 tasks; tau2's overall value typed against a domain's count) or a scope over more tasks than the
  overall was accepted, and its verdict compared the eval with a number of another scope.
- Repeats over different tasks: a task the engine failed in one repeat (within the failure rate) was in
  the other repeats' values only, so `repeats` showed a spread the seeds never made (0.5 and 1.0 with
  every task agreeing). Each repeat's value is now over the tasks every repeat scored.
- A sweep ranked by a category's rate drew each point's interval over the overall's task count (400 for
  a category of 100): twice too narrow, so points it cannot tell apart were marked below best; `t3rl
  runs` and `t3rl runs diff --metric` of a category's rate showed the overall's n beside it.
- tau2's LLM customer was recorded by its model and temperature only: evals whose customer thought or not
  (extra_body's chat_template_kwargs) or had another reply budget (max_tokens) were one benchmark. Every
  user field is now recorded but those its config declares say where it is served (WHERE_FIELDS).
- One benchmark judged two ways: `t3rl runs` read eval.categories as a set, sweep.md, sweep.png and a
  search's objective by their order ([a, b] vs [b, a]: not ranked), and the reference identity was the
  digest of the text (temperature 1 and 1.0 two benchmarks, for `differences` one). Every comparison now
  reads identity.canonical, and the reference groups by `differences`.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from launch.cli.results_compare import compare_results
from launch.cli.runs import why_no_result
from launch.run.sweep import Point, SweepSummary
from launch.run.sweep_compare import count, marks
from launch.run.sweep_plot import point_scores
from t3rl_core.envs.tau2.users import LLMUserConfig
from t3rl_core.eval import identity
from t3rl_core.eval.identity import differences, reference, user_simulator_of
from t3rl_core.eval.metrics import EpisodeScore
from t3rl_core.eval.published import MetricDefinition, PublishedConfig
from t3rl_core.eval.repeats import repeat_stats
from t3rl_core.eval.report_sections import repeats_section
from t3rl_core.eval.verdict import verdicts


def _result(**kw: Any) -> dict[str, Any]:
    return {
        "label": "a result",
        "model": "some model",
        "benchmark": "a benchmark",
        "split": "bfcl_test",
        "values": [{"scope": "overall", "value": 0.5}],
        "source": "a test",
        **kw,
    }


_METRICS = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["accuracy", "pass@k", "pass^k"]),
        "k": st.integers(1, 5),
        "estimator": st.sampled_from(["unbiased", "first_attempt", "any_of_k"]),
        "samples": st.none() | st.integers(1, 6),
        "categories": st.none() | st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4),
    }
)


def _summary_measuring(metric: MetricDefinition) -> dict[str, Any]:
    """A complete eval that measured what `metric` defines: its k, enough samples, its categories."""
    categories = metric.categories or ["a"]
    block = {"tasks": 4, "accuracy": 0.5, f"pass@{metric.k}": 0.5, f"pass^{metric.k}": 0.5}
    return {
        "complete": True,
        "split": "bfcl_test",
        "pass_k": sorted({1, metric.k}),
        "samples": max(metric.k, metric.samples or 1),
        "overall": dict(block),
        "categories": {name: dict(block) for name in categories},
    }


@settings(max_examples=400, deadline=None)
@given(_METRICS)
def test_an_accepted_metric_means_one_thing_an_eval_can_measure(fields: dict[str, Any]) -> None:
    """Every definition accepted reads its k, was computable from its samples, and compares with an eval
    that measured it; the others are refused when declared."""
    try:
        metric = MetricDefinition.model_validate(fields)
    except ValidationError:
        return
    assert metric.k == 1 or str(metric.k) in metric.key()  # the k is read
    assert metric.estimator != "first_attempt" or metric.k == 1
    assert metric.estimator != "any_of_k" or metric.name != "pass^k"
    assert metric.samples is None or metric.samples >= metric.k
    published = PublishedConfig.model_validate({"results": [_result(metric=fields)]})
    (verdict,) = verdicts(_summary_measuring(metric), published)
    assert verdict["status"] != "not comparable", verdict["why"]


@pytest.mark.parametrize(
    ("metric", "words"),
    [
        ({"name": "accuracy", "k": 4}, "accuracy is pass@1"),
        ({"name": "pass@k", "k": 4, "estimator": "first_attempt"}, "first attempt"),
        ({"name": "pass^k", "k": 2, "estimator": "any_of_k"}, "all k samples"),
        ({"name": "pass@k", "k": 4, "samples": 2}, "needs k=4 samples"),
        ({"name": "pass@k", "k": 4, "estimator": "any_of_k", "samples": 8}, "exactly k=4"),
        ({"categories": ["a", "b", "a"]}, "more than once"),
    ],
)
def test_a_contradictory_metric_is_refused(metric: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        PublishedConfig.model_validate({"results": [_result(metric=metric)]})


def test_a_scope_given_two_values_is_refused() -> None:
    values = [{"scope": "overall", "value": 0.5}, {"scope": "overall", "value": 0.6}]
    with pytest.raises(ValidationError, match=r"\['overall'\] more than one value"):
        PublishedConfig.model_validate({"results": [_result(values=values)]})


def test_a_data_hash_pinned_without_a_split_is_refused() -> None:
    with pytest.raises(ValidationError, match="of no split"):
        PublishedConfig.model_validate({"results": [_result(split=None, data_sha256="0" * 64)]})


def _summary_scored_by(package: str, version: str, decoding: dict[str, Any] | None = None) -> dict[str, Any]:
    identity = {"scorer": {"package": package, "version": version}}
    identity["decoding"] = decoding or {"temperature": 0.0, "top_p": 1.0, "top_k": -1}
    return {
        "complete": True,
        "split": "bfcl_test",
        "pass_k": [1],
        "identity": identity,
        "overall": {"tasks": 4, "accuracy": 0.5},
        "categories": {},
    }


def _why(summary: dict[str, Any], **result: Any) -> list[str]:
    (verdict,) = verdicts(summary, PublishedConfig.model_validate({"results": [_result(**result)]}))
    return verdict.get("why") or []


_SEPARATOR = st.sampled_from(["-", "_", ".", "--", "_-"])


@settings(max_examples=200, deadline=None)
@given(
    words=st.lists(st.sampled_from(["bfcl", "eval", "nvidia", "tau2", "x"]), min_size=1, max_size=3),
    separators=st.lists(_SEPARATOR, min_size=2, max_size=2),
    upper=st.lists(st.booleans(), min_size=3, max_size=3),
)
def test_a_scorer_named_as_pip_names_it_is_the_same_scorer(
    words: list[str], separators: list[str], upper: list[bool]
) -> None:
    """Any spelling pip reads as one distribution (PEP 503) names the scorer; another name does not."""

    def spelt(separator: str) -> str:
        return separator.join(w.upper() if up else w for w, up in zip(words, upper, strict=False))

    assert (
        _why(_summary_scored_by(spelt(separators[0]), "1.0"), scorer={"package": spelt(separators[1])}) == []
    )
    other = _why(_summary_scored_by(spelt("-"), "1.0"), scorer={"package": spelt("-") + "-other"})
    assert other and other[0].startswith("another scorer:")


@settings(max_examples=200, deadline=None)
@given(
    release=st.lists(st.integers(0, 2030), min_size=1, max_size=3),
    zeros=st.integers(0, 2),
    padded=st.booleans(),
)
def test_a_scorer_version_is_compared_as_pip_reads_it(release: list[int], zeros: int, padded: bool) -> None:
    """26.3 is 26.3.0 and 2026.03.23 is 2026.3.23 (PEP 440); another release is another version."""
    installed = ".".join(map(str, release))
    written = ".".join([f"{n:02d}" if padded else str(n) for n in release] + ["0"] * zeros)
    assert (
        _why(_summary_scored_by("bfcl-eval", installed), scorer={"package": "bfcl-eval", "version": written})
        == []
    )
    later = ".".join(map(str, [*release[:-1], release[-1] + 1]))
    refused = _why(
        _summary_scored_by("bfcl-eval", installed), scorer={"package": "bfcl-eval", "version": later}
    )
    assert refused and refused[0].startswith("another scorer version:")


@given(top_p=st.floats(0.01, 1.0))
def test_a_greedy_results_top_p_is_not_compared(top_p: float) -> None:
    """Greedy decoding ignores top-p (the identity records 1.0): a greedy source stating one compares with a
    greedy eval; a sampled source's top-p still counts."""
    greedy = _summary_scored_by("bfcl-eval", "1.0")
    assert _why(greedy, metric={"temperature": 0.0, "top_p": top_p}) == []
    sampled = _summary_scored_by("bfcl-eval", "1.0", {"temperature": 0.8, "top_p": 1.0, "top_k": -1})
    why = _why(sampled, metric={"temperature": 0.8, "top_p": top_p})
    assert (why == []) == (top_p == 1.0)


def _binary(value: float, tasks: int, **metric: Any) -> dict[str, Any]:
    metric = {"name": "pass@k", "k": 4, "estimator": "any_of_k", "samples": 4} | metric
    return _result(metric=metric, values=[{"scope": "overall", "value": value, "tasks": tasks}])


@settings(max_examples=300, deadline=None)
@given(tasks=st.integers(1, 400), data=st.data(), digits=st.integers(1, 4))
def test_a_whole_number_of_tasks_written_to_any_digit_is_accepted(
    tasks: int, data: st.DataObject, digits: int
) -> None:
    solved = data.draw(st.integers(0, tasks))
    value = round(solved / tasks, digits)
    PublishedConfig.model_validate({"results": [_binary(value, tasks)]})
    cut = int(solved / tasks * 10**digits) / 10**digits  # a source that cuts instead of rounding
    PublishedConfig.model_validate({"results": [_binary(cut, tasks)]})


@settings(max_examples=300, deadline=None)
@given(tasks=st.integers(2, 200), data=st.data())
def test_a_value_between_two_counts_of_its_tasks_is_refused(tasks: int, data: st.DataObject) -> None:
    """Half a task off, written to a digit fine enough to tell (its unit under a quarter of a task)."""
    digits = next(d for d in range(1, 8) if 10.0**-d * tasks < 0.25)
    solved = data.draw(st.integers(0, tasks - 1))
    value = round((solved + 0.5) / tasks, digits)
    assume(-Decimal(repr(value)).as_tuple().exponent == digits)  # 0.10 is written 0.1: a coarser digit
    with pytest.raises(ValidationError, match="no whole number"):
        PublishedConfig.model_validate({"results": [_binary(value, tasks)]})
    # The same value from several samples a task (a mean of rates) is any number: accepted.
    PublishedConfig.model_validate({"results": [_binary(value, tasks, estimator="unbiased", samples=8)]})


def test_the_tau2_overall_value_against_a_domains_count_is_refused() -> None:
    with pytest.raises(ValidationError, match=r"0\.571 of 20 tasks is no whole number"):
        PublishedConfig.model_validate({"results": [_binary(0.571, 20)]})
    PublishedConfig.model_validate({"results": [_binary(0.571, 70)]})  # 40 of 70, as published


def test_a_scope_over_more_tasks_than_the_overall_is_refused() -> None:
    values = [{"scope": "overall", "value": 0.5, "tasks": 20}, {"scope": "a", "value": 0.5, "tasks": 40}]
    with pytest.raises(ValidationError, match="scope a over 40 tasks, more than the overall's 20"):
        PublishedConfig.model_validate({"results": [_result(values=values)]})


def _episode(task: str, success: bool, aborted: bool = False) -> EpisodeScore:
    status = "aborted" if aborted else "completed"
    return EpisodeScore(task, f"cat_{task[0]}", success and not aborted, float(success), status=status)


def test_a_task_the_engine_failed_in_one_repeat_makes_no_spread() -> None:
    """t1 passes and t2 fails in both repeats' scored episodes; repeat 1's t2 episode was aborted."""
    scored = [(0, _episode("a1", True)), (0, _episode("b2", False))]
    scored += [(1, _episode("a1", True)), (1, _episode("b2", False, aborted=True))]
    stats = repeat_stats(scored, 2, [1])
    overall = stats["overall"]
    assert overall["accuracy"]["values"] == [1.0, 1.0] and overall["accuracy"]["std"] == 0.0
    assert overall["agreement"] == 1.0 and overall["left_out"] == 1
    assert stats["categories"]["cat_b"]["accuracy"]["values"] == [None, None]
    section = "\n".join(repeats_section({"repeats": stats, "pass_k": [1]}))
    assert "1 task(s) were not scored in every repeat" in section


@settings(max_examples=300, deadline=None)
@given(
    outcomes=st.dictionaries(st.sampled_from(["a1", "a2", "b1", "b2"]), st.booleans(), min_size=1),
    repeats=st.integers(2, 3),
    data=st.data(),
)
def test_tasks_that_always_end_alike_make_no_spread(
    outcomes: dict[str, bool], repeats: int, data: st.DataObject
) -> None:
    """Each task's episodes all succeed or all fail, whichever of them the engine failed: no metric may
    differ between repeats (any spread would be the task set's, not the seeds')."""
    scored = []
    for repeat in range(repeats):
        for task, success in outcomes.items():
            scored += [(repeat, _episode(task, success)) for _ in range(data.draw(st.integers(0, 3)))]
            scored += [
                (repeat, _episode(task, success, aborted=True)) for _ in range(data.draw(st.integers(0, 2)))
            ]
    stats = repeat_stats(scored, repeats, [1, 2])
    for block in [stats["overall"], *stats["categories"].values()]:
        for key in ("accuracy", "pass@2", "pass^2"):
            known = [v for v in block[key]["values"] if v is not None]
            assert len(set(known)) <= 1, (key, block[key])
            assert len(known) in (0, repeats)  # every repeat measured it, or none did


def _category_sweep(root: Path, accuracies: list[float]) -> SweepSummary:
    """Points whose eval has 400 tasks overall and 100 in category `a`, ranked by `a`'s accuracy."""
    sweep = SweepSummary(sweep_dir=root / "sweep", name="s", metric_name="eval: categories.a.accuracy")
    for index, accuracy in enumerate(accuracies):
        stage = root / f"p{index}" / "stages" / "eval"
        stage.mkdir(parents=True)
        summary = {
            "overall": {"accuracy": 0.5, "tasks": 400},
            "categories": {"a": {"accuracy": accuracy, "tasks": 100}},
        }
        (stage / "summary.json").write_text(json.dumps(summary))
        sweep.add(Point(index, (f"lr={index}",), (f"lr={index}",)))
        sweep.update(index, run_dir=str(root / f"p{index}"), metric=accuracy, status="succeeded")
    return sweep


def test_a_sweep_by_a_categorys_rate_draws_intervals_over_its_tasks(tmp_path: Path) -> None:
    """50/100 and 40/100 cannot be told apart at 95 %; as 200/400 and 160/400 they could."""
    sweep = _category_sweep(tmp_path, [0.5, 0.4])
    found = marks(sweep)
    assert found[0] == "best [0.404, 0.596]" and found[1].startswith("overlaps best [0.309, 0.498]")
    assert [score.episodes for score in point_scores(sweep)] == [100, 100]  # sweep.png's whiskers


@given(
    scope=st.sampled_from(["overall", "categories.a", "categories.b"]),
    key=st.sampled_from(["accuracy", "pass@4", "pass^2"]),
)
def test_the_count_is_the_metrics_own_blocks(scope: str, key: str) -> None:
    summary = {"overall": {"tasks": 400}, "categories": {"a": {"tasks": 100}, "b": {"tasks": 7}}}
    expected = {"overall": 400, "categories.a": 100, "categories.b": 7}[scope]
    assert count(summary, f"eval: {scope}.{key}") == expected


_USER = {"base_url": "http://127.0.0.1:30001/v1", "model": "Qwen/Qwen3-4B-Instruct-2507"}
# Another value of every field of the LLM customer (a field added without one here fails the test below).
_OTHER_USER_VALUES = {
    "name": None,  # the simulator itself: its own registry entry
    "base_url": "http://10.0.0.7:30001/v1",
    "model": "gpt-4.1-mini",
    "temperature": 0.0,
    "max_tokens": 64,
    "api_key": "env:ANOTHER_KEY",
    "extra_body": {"chat_template_kwargs": {"enable_thinking": True}},
    "timeout_s": 5.0,
    "max_retries": 0,
    "concurrency": 1,
}


@pytest.mark.parametrize("field", sorted(LLMUserConfig.model_fields))
def test_every_customer_setting_but_where_it_is_served_is_its_identity(field: str) -> None:
    assert field in _OTHER_USER_VALUES, f"give {field} another value here"
    if _OTHER_USER_VALUES[field] is None:
        return
    base = LLMUserConfig.model_validate(_USER)
    changed = LLMUserConfig.model_validate({**_USER, field: _OTHER_USER_VALUES[field]})
    found = differences(
        *(
            {"user_simulator": user_simulator_of(SimpleNamespace(name="tau2", user=user))}
            for user in (base, changed)
        )
    )
    if field in LLMUserConfig.WHERE_FIELDS:
        assert found == []
    else:
        assert found and found[0].startswith("user_simulator:"), field


_IDENTITY = {
    "scorer": {"package": "bfcl-eval", "version": "2026.3.23"},
    "data": {"bfcl_test": "a" * 64},
    "selection": {"categories": ["a", "b", "c"], "limit_per_category": None},
    "decoding": {"temperature": 1.0, "top_p": 1.0, "top_k": -1},
}


@given(order=st.permutations(["a", "b", "c"]), again=st.lists(st.sampled_from(["a", "b", "c"]), max_size=2))
def test_categories_in_any_order_are_one_benchmark_everywhere(order: list[str], again: list[str]) -> None:
    other = {**_IDENTITY, "selection": {"categories": [*order, *again], "limit_per_category": None}}
    assert differences(_IDENTITY, other) == [] and identity.key(_IDENTITY) == identity.key(other)
    assert reference([_IDENTITY, other, {**_IDENTITY, "data": {"bfcl_test": "b" * 64}}]) is _IDENTITY


def test_a_number_written_as_an_int_is_the_same_benchmark_for_the_reference() -> None:
    as_int = {**_IDENTITY, "decoding": {"temperature": 1, "top_p": 1, "top_k": -1}}
    other_data = {**_IDENTITY, "data": {"bfcl_test": "b" * 64}}
    assert reference([other_data, as_int, _IDENTITY]) is as_int  # two of three, not one each


def test_a_sweeps_points_of_one_selection_in_two_orders_are_ranked(tmp_path: Path) -> None:
    sweep = _category_sweep(tmp_path, [0.5, 0.4])
    for index, order in enumerate([["a", "b"], ["b", "a"]]):
        path = tmp_path / f"p{index}" / "stages" / "eval" / "summary.json"
        summary = json.loads(path.read_text())
        summary["identity"] = {**_IDENTITY, "selection": {"categories": order, "limit_per_category": None}}
        path.write_text(json.dumps(summary))
    found = marks(sweep)
    assert found[0].startswith("best") and found[1].startswith("overlaps best"), found


def test_runs_diff_of_a_categorys_rate_shows_its_own_task_count(tmp_path: Path) -> None:
    from rich.console import Console

    runs = []
    for name, accuracy in (("a", 0.5), ("b", 0.4)):
        stage = tmp_path / name / "stages" / "eval"
        stage.mkdir(parents=True)
        summary = {
            "overall": {"accuracy": 0.5, "tasks": 400},
            "categories": {"a": {"accuracy": accuracy, "tasks": 100}},
        }
        (stage / "summary.json").write_text(json.dumps(summary | {"identity": _IDENTITY}))
        runs.append(tmp_path / name)
    console = Console(record=True, width=200)
    assert (
        compare_results(
            *runs, console, mixed=False, why_missing=why_no_result, metric="categories.a.accuracy"
        )
        == 0
    )
    shown = console.export_text()
    assert "0.500 (n=100)" in shown and "0.400 (n=100)" in shown and "n=400" not in shown


def test_runs_lists_a_categorys_rate_with_its_own_task_count(tmp_path: Path) -> None:
    import yaml
    from rich.console import Console

    from launch.cli.runs import list_runs

    for name, accuracy in (("a", 0.5), ("b", 0.4)):
        path = tmp_path / name / "20260101-000000"
        (path / "stages" / "eval").mkdir(parents=True)
        (path / "config.yaml").write_text(
            yaml.safe_dump({"name": name, "stages": {"eval": {"kind": "eval"}}})
        )
        summary = {
            "overall": {"accuracy": 0.5, "tasks": 400},
            "categories": {"a": {"accuracy": accuracy, "tasks": 100}},
        }
        (path / "stages" / "eval" / "summary.json").write_text(json.dumps(summary | {"identity": _IDENTITY}))
    console = Console(record=True, width=300)
    assert list_runs(tmp_path, console, metric="categories.a.accuracy") == 0
    shown = console.export_text()
    assert "0.500 (n=100)" in shown and "0.400 (n=100)" in shown and "n=400" not in shown
