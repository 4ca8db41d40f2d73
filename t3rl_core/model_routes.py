"""The model a served model's name denotes, without the route in front of it.

LiteLLM (which tau2-bench's own user simulator calls) and the proxies built on it name a model with the
provider that routes the request in front: `openai/gpt-4.1-mini`, `anthropic/claude-3-5-sonnet-20241022`,
`litellm_proxy/gpt-4.1-mini`, `openrouter/openai/gpt-4.1-mini`, `hosted_vllm/Qwen/Qwen3-8B`. The prefix
says where the request goes, as a base URL does, not which model answers: an eval whose customer was
`openai/gpt-4.1-mini` behind a LiteLLM proxy and a published result's `gpt-4.1-mini` had one simulator,
yet the verdict and the runs' identities counted two. A name is compared by what it denotes: its leading
route prefixes (LiteLLM's provider names, not an organisation of the Hugging Face hub: `Qwen/` stays)
taken off, the name itself untouched (the server is sent what the config says).
"""

from __future__ import annotations

# LiteLLM's provider routes (its `provider/model` names). A hub organisation spelled the same
# (`openai/gpt-oss-20b`, `databricks/dbrx-instruct`) names the same model without it.
ROUTE_PREFIXES = frozenset(
    {
        "ai21", "anthropic", "anyscale", "azure", "azure_ai", "bedrock", "cerebras", "cloudflare", "cohere",
        "cohere_chat", "custom_openai", "dashscope", "databricks", "deepinfra", "deepseek", "fireworks_ai",
        "friendliai", "gemini", "github", "groq", "hosted_vllm", "huggingface", "hyperbolic", "lambda_ai",
        "litellm_proxy", "lm_studio", "mistral", "moonshot", "nebius", "novita", "nvidia_nim", "ollama",
        "ollama_chat", "openai", "openrouter", "perplexity", "replicate", "sagemaker", "sambanova",
        "text-completion-openai", "together_ai", "vertex_ai", "vllm", "volcengine", "watsonx", "xai",
    }
)  # fmt: skip


def denoted_model(name: str) -> str:
    """`name` without its leading route prefixes (`openrouter/openai/gpt-4.1-mini` → `gpt-4.1-mini`); a
    name that is a route alone (`openai/`) or holds none stays as it is."""
    while True:
        route, slash, rest = name.partition("/")
        if not slash or not rest or route.lower() not in ROUTE_PREFIXES:
            return name
        name = rest


# LiteLLM's routes that only its client reads: it sends the server the name after them (a LiteLLM proxy
# is asked for `gpt-4o`, a vLLM server for `Qwen/Qwen3-8B`). t3rl's user client is the openai client,
# which sends a name as it is: no server knows `litellm_proxy/gpt-4o`, and every request would fail.
CLIENT_ROUTES = ("litellm_proxy", "hosted_vllm")


def served_model_name(name: str) -> str:
    """`name` as an OpenAI-compatible server is asked for it; a name in LiteLLM's client-side form is
    refused with the name the server knows (`Corrected`: pre-flight's fix)."""
    from t3rl_core.fields import Corrected  # lazy: the module stays importable without pydantic's types

    route, slash, rest = name.partition("/")
    if slash and rest and route.lower() in CLIENT_ROUTES:
        raise Corrected(
            f"{route}/ is LiteLLM's client-side route: LiteLLM strips it and asks the server for {rest!r}, "
            f"but t3rl's OpenAI client sends the name as it is, which no server serves (base_url says where "
            f"the server is)",
            rest,
        )
    return name
