"""Config models of the engines (pydantic only, cheap to import)."""

from typing import Literal

from pydantic import Field

from t3rl_core.fields import Delay, Device, ModelDir, Probability, RegistryName, Seconds, Seed, SGLangUrl
from t3rl_core.registries import ENGINES
from t3rl_core.registry import registered
from t3rl_core.secret import Secret
from t3rl_core.strict import StrictModel


class EngineConfig(StrictModel):
    """Base of every engine section."""

    name: RegistryName


class SGLangEngineConfig(EngineConfig):
    """A running SGLang server (or slime's router) spoken to over HTTP `/generate`."""

    name: Literal["sglang"] = "sglang"
    # Base URL, e.g. http://127.0.0.1:30000; None = the server the eval stage starts itself.
    url: SGLangUrl | None = None
    # The server's --api-key, by reference (env:NAME or file:PATH), sent as a Bearer token; None = none.
    api_key: Secret | None = None
    # Seconds the health check before the first episode waits for /health and /get_model_info.
    health_timeout_s: Seconds = 10.0
    # Requests in flight at once.
    concurrency: int = Field(64, ge=1)
    # Seconds per request before it is retried.
    timeout_s: Seconds = 600.0
    # Attempts per request (first try included) before the episode is ABORTED.
    max_attempts: int = Field(3, ge=1)
    # Back-off before the first retry, seconds: ceiling of a uniform draw (full jitter), doubling per retry.
    backoff_s: Delay = 1.0


class HFEngineConfig(EngineConfig):
    """A transformers model on CPU: any local HF model directory."""

    name: Literal["hf"] = "hf"
    # Local HF model dir; None = the run's tokenizer dir (the tiny offline model in the quickstart).
    model_path: ModelDir | None = None
    # torch device: cpu, cuda, cuda:N or mps.
    device: Device = "cpu"
    # Weights' number format on the device.
    dtype: Literal["float32", "bfloat16"] = "float32"
    # Generations run one at a time on CPU; this bounds queued requests.
    concurrency: int = Field(1, ge=1)


class ReferenceEngineConfig(EngineConfig):
    """A scripted policy that emits the env's gold actions in the family's tool-call text format."""

    name: Literal["reference"] = "reference"
    # Probability per model call of each injected fault (0 = a perfect policy).
    faults: dict[
        Literal["malformed_json", "wrong_argument", "extra_call", "premature_answer"], Probability
    ] = Field(default_factory=dict)
    # Seed of the fault draws, mixed with each call's input tokens and its sample's seed: a rerun injects
    # the same faults, each sample and repeat of a task its own.
    seed: Seed = 0
    # Simulated latency per call, for benchmarks of the loop against a fixed-latency engine.
    latency_s: Delay = 0.0


AnyEngineConfig = registered(EngineConfig, ENGINES)
