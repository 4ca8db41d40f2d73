"""Config of the standalone evaluation (the `eval` stage and `t3rl eval`)."""

from typing import Annotated

from pydantic import Field

from t3rl_core.engines.config import AnyEngineConfig, ReferenceEngineConfig
from t3rl_core.eval.published import PublishedConfig
from t3rl_core.fields import (
    CALL_TOKENS,
    Argv,
    Distinct,
    Hostname,
    Label,
    NodeGpus,
    Port,
    Seed,
    SplitName,
    StartupSeconds,
    Temperature,
    TopK,
)
from t3rl_core.secret import Secret
from t3rl_core.strict import StrictModel, empty_list

# Samples of one task (an eval's k, a training group): beyond it one task costs thousands of episodes,
# which a typo (10000 for 100) gives far more often than a plan does.
MAX_SAMPLES_PER_TASK = 1024
# Tasks of one category an eval takes: a category of an eval split holds hundreds of tasks (BFCL's
# multi-turn ones 200, tau2's domains fewer), and the whole split is the default (None), so a hundred
# thousand is a typo, not a limit.
MOST_TASKS_PER_CATEGORY = 100_000


class ServerConfig(StrictModel):
    """The SGLang server the eval stage starts on a converted checkpoint (unless engine.url is set)."""

    port: Port = 30000
    host: Hostname = "127.0.0.1"
    # The server's tensor parallel size (its GPUs, ids 0..tp-1 of the stage's node, or of this machine
    # for `t3rl eval --serve-checkpoint`, whose --tp sets it); None = the rollout engines'
    # hardware.gpus_per_engine in a pipeline's eval stage, one GPU in `t3rl eval`.
    tp: NodeGpus | None = None
    # Seconds to wait for /health before the stage fails.
    startup_timeout_s: StartupSeconds = 900.0
    # Extra `python -m sglang.launch_server` flags, e.g. ["--mem-fraction-static", "0.8"].
    extra_args: Argv = Field(default_factory=empty_list)
    # The server's `--api-key`, by reference (env:NAME or file:PATH, resolved where the stage runs);
    # the eval engine sends it as a Bearer token unless engine.api_key names another. None = no key.
    api_key: Secret | None = None


class EvalConfig(StrictModel):
    """What to evaluate and how."""

    # What answers the model calls, by `name`: reference (the env's gold actions), hf (a transformers
    # model), sglang (an SGLang server) or a plugin engine.
    engine: AnyEngineConfig = Field(default_factory=ReferenceEngineConfig)
    # Prepared split to evaluate (a file <split>.jsonl of the prepare_data stage).
    split: SplitName = "bfcl_test"
    # Samples per task; pass@k and pass^k are reported for every k in `pass_k` (each ≤ samples).
    samples: int = Field(1, ge=1, le=MAX_SAMPLES_PER_TASK)
    # Whole-eval repeats, repeat r with seed `seed + r`: the summary reports each metric's mean, standard
    # deviation and per-task agreement across them (its main numbers pool all repeats).
    repeats: int = Field(1, ge=1, le=100)
    pass_k: Annotated[list[Annotated[int, Field(ge=1)]], Distinct()] = Field(
        default_factory=lambda: [1], min_length=1
    )
    # Episodes at the engine at once (each from its first model call to its end); up to an eighth more
    # set up ahead of a free slot (t3rl_core/eval/slots.py).
    concurrency: int = Field(32, ge=1)
    # Tasks per category (data_source); None = all.
    limit_per_category: int | None = Field(None, ge=1, le=MOST_TASKS_PER_CATEGORY)
    # Categories (data_source values) to keep; None = all.
    categories: Annotated[list[Label], Distinct()] | None = Field(None, min_length=1)
    temperature: Temperature = 0.0
    # Nucleus and top-k sampling when temperature > 0: None = the runtime's rollout.top_p; -1 = no top-k.
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: TopK = -1
    seed: Seed = 0
    # Tokens per model call; None = the runtime config's rollout.max_new_tokens.
    max_new_tokens: Annotated[int, CALL_TOKENS] | None = Field(None, ge=1)
    # Model calls per episode; None = the runtime config's rollout.max_num_steps.
    max_num_steps: int | None = Field(None, ge=1)
    # Share of episodes the engine may fail (aborted: no answer, dropped connection, server abort)
    # before the eval stops as incomplete; 0 = any engine failure fails the eval.
    max_engine_failure_rate: float = Field(0.0, ge=0.0, le=1.0)
    server: ServerConfig = Field(default_factory=ServerConfig)
    # The published results this eval should reproduce (the recipe declares them; None = none):
    # summary.json, report.md, `t3rl runs` and `t3rl eval --published` give the verdict on each.
    published: PublishedConfig | None = None

    def with_server_key(self) -> "EvalConfig":
        """This config with the engine sending the server's key, when it has none of its own."""
        engine = self.engine
        if self.server.api_key is None or engine.name != "sglang" or getattr(engine, "api_key", None):
            return self
        return self.model_copy(update={"engine": engine.model_copy(update={"api_key": self.server.api_key})})
