"""A user simulator named with the route in front of its model (LiteLLM's `openai/gpt-4.1-mini`,
`litellm_proxy/…`, `openrouter/openai/…`) is the same simulator as its bare model: the runs' identities
and the verdict against a published result compared the names as written, and counted two simulators
(t3rl_core.model_routes.denoted_model). A hub organisation stays part of the name. A name only LiteLLM's
client reads (litellm_proxy/, hosted_vllm/) is refused: t3rl's OpenAI client sends it as written."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from t3rl_core.envs.tau2.users import LLMUserConfig
from t3rl_core.eval.identity import differences, user_simulator_of
from t3rl_core.eval.published import PublishedConfig
from t3rl_core.eval.verdict import verdicts
from t3rl_core.model_routes import CLIENT_ROUTES, ROUTE_PREFIXES, denoted_model
from tests.support.refusals import errors, fixed

MODELS = st.sampled_from(
    ["gpt-4.1-mini", "gpt-4.1", "claude-3-5-sonnet-20241022", "Qwen/Qwen3-4B-Instruct-2507"]
)
ROUTES = st.lists(st.sampled_from(sorted(ROUTE_PREFIXES)), min_size=1, max_size=2)


def _identity(model: str) -> dict[str, Any]:
    user = LLMUserConfig(base_url="http://127.0.0.1:30001/v1", model=model, temperature=0.7)
    return {"user_simulator": user_simulator_of(SimpleNamespace(name="tau2", user=user))}


def _why(eval_model: str, published_model: str) -> list[str]:
    published = PublishedConfig.model_validate(
        {
            "results": [
                {
                    "label": "tau2",
                    "model": "some model",
                    "benchmark": "a benchmark",
                    "split": "bfcl_test",
                    "values": [{"scope": "overall", "value": 0.5}],
                    "source": "a test",
                    "user_simulator": {"model": published_model, "temperature": 0.7},
                }
            ]
        }
    )
    summary = {
        "complete": True,
        "split": "bfcl_test",
        "pass_k": [1],
        "temperature": 0.0,
        "identity": {"user_simulator": {"name": "llm", "model": eval_model, "temperature": 0.7}},
        "overall": {"tasks": 8, "accuracy": 0.5},
        "categories": {},
    }
    (verdict,) = verdicts(summary, published)
    return [reason for reason in verdict.get("why", []) if "user simulator" in reason]


@settings(max_examples=120, deadline=None, derandomize=True)
@given(model=MODELS, routes=ROUTES, upper=st.booleans())
def test_a_routed_name_is_its_models_simulator(model: str, routes: list[str], upper: bool) -> None:
    routed = "/".join([*(r.upper() if upper else r for r in routes), model])
    assert denoted_model(routed) == model
    if routes[0] not in CLIENT_ROUTES:  # a config refuses those (below); a published name may hold one
        assert differences(_identity(routed), _identity(model)) == []
    assert _why(routed, model) == [] and _why(model, routed) == []


@settings(max_examples=60, deadline=None, derandomize=True)
@given(one=MODELS, other=MODELS, routes=ROUTES)
def test_routed_names_of_two_models_are_two_simulators(one: str, other: str, routes: list[str]) -> None:
    if one == other:
        return
    routed = "/".join([*routes, one])
    if routes[0] not in CLIENT_ROUTES:
        assert differences(_identity(routed), _identity(other))
    assert _why(routed, other)


def test_a_hub_organisation_and_a_bare_route_stay_in_the_name() -> None:
    assert denoted_model("Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert denoted_model("hosted_vllm/Qwen/Qwen3-8B") == "Qwen/Qwen3-8B"
    assert denoted_model("openai/") == "openai/" and denoted_model("openai") == "openai"
    assert differences(_identity("Qwen/Qwen3-8B"), _identity("Qwen3-8B"))


# ------------------------------------------------------------------- names only LiteLLM's client reads

LINE = ["+experiment=tau2_pipeline", "user_sim=llm"]


@pytest.mark.parametrize(
    "name", ["litellm_proxy/gpt-4o", "hosted_vllm/Qwen/Qwen3-8B", "LiteLLM_Proxy/gpt-4.1-mini"]
)
def test_a_client_side_route_is_refused_with_the_name_the_server_knows(name: str) -> None:
    """t3rl's OpenAI client sent `litellm_proxy/gpt-4o` as the model: no server serves that name, and every
    customer turn failed (the episodes the user simulator's) hours into a run."""
    line = [*LINE, f"env.user.model={name}"]
    refused = errors(line)
    assert [p.key for p in refused] == ["env.user.model"], refused
    assert "LiteLLM" in refused[0].message and f"set env.user.model={name.split('/', 1)[1]}" in refused[0].fix
    assert errors(fixed(line, refused[0])) == []


@settings(max_examples=60, deadline=None, derandomize=True)
@given(model=MODELS, routes=ROUTES)
def test_a_name_is_sent_as_written_unless_only_litellms_client_reads_it(
    model: str, routes: list[str]
) -> None:
    name = "/".join([*routes, model])
    config = {"base_url": "http://127.0.0.1:30001/v1", "model": name}
    if routes[0] in CLIENT_ROUTES:
        with pytest.raises(ValidationError, match="client-side route"):
            LLMUserConfig.model_validate(config)
    else:
        assert LLMUserConfig.model_validate(config).model == name  # what the server is asked for
