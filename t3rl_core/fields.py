"""Typed string fields of the config models: the schema rejects a malformed value, naming the key.

Each type stays a plain `str` once validated (consumers join, quote and print them as text), so the
check lives in an AfterValidator and the error is pydantic's `value_error` with the reason.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

_DEVICE = re.compile(r"^(cpu|cuda|cuda:\d+|mps)$")
# SLURM's --time forms: M, M:S, H:M:S, D-H, D-H:M, D-H:M:S (sbatch(1), "-t, --time").
_SLURM_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$|^\d+-\d+$")
_PATH_COMPONENT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def _device(value: str) -> str:
    if not _DEVICE.match(value):
        raise ValueError("a torch device is 'cpu', 'cuda', 'cuda:N' or 'mps'")
    return value


def _url(schemes: tuple[str, ...]) -> AfterValidator:
    def check(value: str) -> str:
        scheme, sep, rest = value.partition("://")
        if not sep or scheme not in schemes or not rest.split("/", 1)[0]:
            raise ValueError(f"a URL with a scheme and a host is needed, e.g. {schemes[0]}://host:port")
        host_port = rest.split("/", 1)[0]
        port = host_port.rsplit(":", 1)[1] if ":" in host_port and not host_port.endswith("]") else None
        if port is not None and not (port.isdigit() and 0 < int(port) < 65536):
            raise ValueError(f"port {port!r} is not a number in 1..65535")
        return value

    return AfterValidator(check)


def _slurm_time(value: str) -> str:
    if value in ("infinite", "unlimited", "UNLIMITED", "INFINITE") or _SLURM_TIME.match(value):
        return value
    raise ValueError("a SLURM time limit is minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")


def _absolute(value: str) -> str:
    if not value.startswith("/"):
        raise ValueError("must be an absolute path on the cluster (it is read there, not here)")
    return value


def _path_component(value: str) -> str:
    if not _PATH_COMPONENT.match(value) or value in (".", ".."):
        raise ValueError(
            "becomes a directory name: use letters, digits, '_', '-', '+' and '.' only "
            "(no '/', no leading '.' or '-', not empty)"
        )
    return value


# A torch device string.
Device = Annotated[str, AfterValidator(_device)]
# An http(s) URL with a host (SGLang servers, SandboxFusion, a Ray dashboard).
HttpUrl = Annotated[str, _url(("http", "https"))]
# A Ray cluster address for the Job Submission SDK: its dashboard URL (http/https) or a ray:// client.
RayAddress = Annotated[str, _url(("http", "https", "ray"))]
# A SLURM `--time` value.
SlurmDuration = Annotated[str, AfterValidator(_slurm_time)]
# A path read on the GPU machines, where the launcher's working directory means nothing.
ClusterPath = Annotated[str, AfterValidator(_absolute)]
# A user string that becomes one directory or file name.
PathComponent = Annotated[str, AfterValidator(_path_component)]
