"""What a service's server is and where it answers: the fields the run's `services.<name>`
(launch.config.schema.ServiceConfig) and the spec a stage's command.sh starts it from
(t3rl_core.services.ServiceSpec) share, each with its domain and default said once. Its own module and a
light one: every plan validates the run's services, and t3rl_core.services, the process manager, is the
stage's."""

from typing import Annotated, Literal

from pydantic import Field

from t3rl_core.fields import (
    Argv,
    Distinct,
    GpuId,
    Hostname,
    ModelRef,
    NodeGpus,
    Port,
    StartupSeconds,
    UrlPath,
)
from t3rl_core.strict import StrictModel, empty_list


class ServiceFields(StrictModel):
    """A server some stages need while they run: what it serves, its GPUs, where it answers."""

    # "sglang": an SGLang server of `model_path`; "command": any HTTP server `command` starts (an OpenEnv
    # environment's server), `{host}` and `{port}` in it replaced by this service's.
    kind: Literal["sglang", "command"] = "sglang"
    # HF dir of the served model (kind sglang).
    model_path: ModelRef | None = None
    # The server's argv (kind command).
    command: Argv | None = None
    # Path a healthy server answers 200 on.
    health_path: UrlPath = "/health"
    # Tensor parallel size of the server; its GPUs, outside the stage's own (CUDA_VISIBLE_DEVICES).
    tp: NodeGpus = 1
    # GPU ids the server sees (its CUDA_VISIBLE_DEVICES); empty = those the stage sees.
    gpus: Annotated[list[GpuId], Distinct()] = Field(default_factory=empty_list)
    # Address the server listens on and the stage reaches it at.
    host: Hostname = "127.0.0.1"
    # Port of that address; `{port}` in a command service's argv.
    port: Port = 30001
    # Seconds the server has to answer `health_path` before the stage fails.
    startup_timeout_s: StartupSeconds = 900.0
    # Flags appended to the SGLang server's argv (kind sglang).
    extra_args: Argv = Field(default_factory=empty_list)
