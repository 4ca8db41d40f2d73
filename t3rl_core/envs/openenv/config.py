"""Config of an OpenEnv environment as a t3rl world (pydantic only; openenv is imported by the env)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from t3rl_core.config import EnvConfig, StartedServer
from t3rl_core.fields import (
    Argv,
    ContainerImage,
    Corrected,
    DockerRun,
    HttpUrl,
    Identifier,
    SplitName,
    StartupSeconds,
    Text,
)
from t3rl_core.strict import StrictModel

# The endpoints an OpenEnv server (openenv-core's create_app) serves under its root.
_ENDPOINTS = ("/schema", "/health", "/ws", "/reset", "/step", "/state", "/metadata", "/mcp")
OUTCOME = frozenset({"reward", "metrics", "truncated", "error", "turn_rewards", "turn_steps"})


class OpenEnvDataConfig(StrictModel):
    """OpenEnv environments have no dataset: a task is a reset of the environment with its own seed."""

    # Name of the prepared split file (<split>.jsonl) of the train resets.
    train_split: SplitName = "openenv_train"
    # Name of the prepared split file of the eval resets.
    eval_split: SplitName = "openenv_eval"
    train_episodes: int = Field(64, ge=1)
    eval_episodes: int = Field(16, ge=1)
    # reset(seed=seed + i) for the i-th train task; the eval tasks follow the train ones.
    seed: int = Field(0, ge=0)


class OpenEnvEnvConfig(EnvConfig):
    """A running OpenEnv server (`url`), one this world starts (`url` + `command`), or a Docker image."""

    OUTCOME_FIELDS = OUTCOME
    SIZE_FIELDS = ("data.train_episodes", "data.eval_episodes")
    # Where its server runs and how it is started, and a limit that only fails an episode (unscored: the
    # coverage part), not what the env is: left out of an eval's benchmark identity
    # (t3rl_core.eval.identity.env_record: the same server at another port measures the same).
    WHERE_FIELDS: ClassVar[tuple[str, ...]] = ("url", "command", "startup_timeout_s", "max_observation_chars")

    name: Literal["openenv"] = "openenv"
    # The server's base URL (http://host:port); with `command`, where the started server listens.
    url: HttpUrl | None = None
    # Docker image of the environment, started with OpenEnv's own LocalDockerProvider (`docker run -p
    # PORT:8000`) by the daemon of the machine that builds the world; a server given by URL replaces it.
    image: Annotated[ContainerImage, DockerRun((("url", "http://127.0.0.1:8000"),), 8000)] | None = None
    # argv that starts the server at `url` (e.g. uvicorn my_env.server.app:app --port 8001): started
    # when the world is built, stopped when it closes.
    command: Argv | None = None
    # Seconds a started server or container gets to answer /health.
    startup_timeout_s: StartupSeconds = 120.0
    # The system message of every task (the environment's first observation follows as a user message).
    system_prompt: Text = "You act in an environment through its tool. Call it until the episode ends."
    # The one tool the model acts with; its parameters are the environment's action schema.
    tool_name: Identifier = "step"
    # An action field a plain-text answer fills (chat-like environments); None = a text answer ends the
    # episode.
    text_field: Identifier | None = None
    data: OpenEnvDataConfig = Field(default_factory=OpenEnvDataConfig)
    # Characters of an observation's text (as the model reads it) past which the episode fails as the
    # environment's: OpenEnv's client takes messages up to 100 MB, whose tokens no context holds.
    max_observation_chars: int = Field(200_000, ge=1)

    def gold_missing(self, row: Mapping[str, Any] | None) -> str | None:
        """An OpenEnv server keeps no gold actions: the reference engine has nothing to play."""
        return "an OpenEnv environment keeps no gold actions (Env.oracle() is None for every task)"

    @field_validator("url")
    @classmethod
    def _root(cls, value: str | None) -> str | None:
        """The server's root: OpenEnv's client appends its endpoints (and /ws for the session)."""
        if value is None:
            return None
        path = value.split("?", 1)[0].rstrip("/")
        for endpoint in _ENDPOINTS:
            if path.endswith(endpoint) and "://" in path[: -len(endpoint)]:
                root = path[: -len(endpoint)]
                raise Corrected(f"env.url is the server's root: the client appends {endpoint} itself", root)
        return value

    @model_validator(mode="after")
    def _one_server(self) -> OpenEnvEnvConfig:
        if (self.url is None) == (self.image is None):
            raise ValueError("give the environment's server as exactly one of env.url and env.image")
        if self.command is not None and self.url is None:
            raise ValueError("env.command starts the server at env.url: set env.url (http://127.0.0.1:PORT)")
        return self

    def split_names(self) -> list[str]:
        """The JSONL files prepare_data writes."""
        return [self.data.train_split, self.data.eval_split]

    def split_sizes(self) -> dict[str, int]:
        """One task per reset: train_episodes and eval_episodes of them."""
        return {
            self.data.train_split: self.data.train_episodes,
            self.data.eval_split: self.data.eval_episodes,
        }

    def started_server(self) -> StartedServer | None:
        """The server `command` starts, which must listen where `url` says."""
        if self.command is None or self.url is None:
            return None
        return StartedServer("url", self.url, "command", tuple(self.command))
