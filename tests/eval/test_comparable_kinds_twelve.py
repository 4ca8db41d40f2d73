"""Comparable results, round twelve: kinds no earlier round listed.

- A published declaration whose parts contradict each other (accuracy with k 4: the k was never read;
  pass@4 from 2 samples; a scope given two values: two verdicts on one number; a category named twice,
  never equal to an eval's) was accepted and gave verdicts on something no eval measures.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from t3rl_core.eval.published import MetricDefinition, PublishedConfig
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
