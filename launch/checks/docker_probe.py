"""The Docker daemon of this machine, probed for a declared image (`t3rl_core.fields.DockerRun`: OpenEnv's
`env.image`) by `launch.checks.probes.docker_daemon_answers`, and imported only then. The probe is local
and cheap: the `docker` command on PATH, and one `GET /_ping` on the daemon's unix socket (DOCKER_HOST's,
else /var/run/docker.sock). A daemon reached over the network (`DOCKER_HOST=tcp://…`) or through a docker
context is not probed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from t3rl_core import outside_json

# The socket a Docker daemon listens on when DOCKER_HOST names none.
DEFAULT_SOCKET = "/var/run/docker.sock"
# Seconds the daemon has to answer /_ping (it answers at once when it runs).
PING_TIMEOUT_S = 2.0


def docker_unreachable() -> str | None:
    """Why no Docker daemon answers here, or None (it answers, or it is not one this probe can reach)."""
    if shutil.which("docker") is None:
        return "the docker command is not installed here (OpenEnv runs it to start the container)"
    host = os.environ.get("DOCKER_HOST", "")
    if host and not host.startswith("unix://"):
        return None  # a daemon over the network: not probed (no network at pre-flight)
    if not host and _context_chosen():
        return None  # a docker context names the daemon: not probed
    path = host.removeprefix("unix://") or DEFAULT_SOCKET
    return _ping(path)


def _context_chosen() -> bool:
    """A docker context other than the default chooses the daemon (DOCKER_CONTEXT, or the CLI's config)."""
    if os.environ.get("DOCKER_CONTEXT", "default") != "default":
        return True
    config = Path(os.environ.get("DOCKER_CONFIG") or Path.home() / ".docker") / "config.json"
    try:
        current = outside_json.loads(config.read_text(), str(config)).get("currentContext")
    except (OSError, ValueError, AttributeError):
        return False
    return current not in (None, "", "default")


def _ping(path: str) -> str | None:
    """Why the daemon at the unix socket `path` does not answer GET /_ping, or None."""
    import socket  # lazy: only when a config runs a Docker image here

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(PING_TIMEOUT_S)
        try:
            sock.connect(path)
            sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            status = sock.recv(64).split(b"\r\n", 1)[0].decode(errors="replace")
        except FileNotFoundError:
            return f"no Docker daemon listens here: {path} does not exist (the daemon is not running)"
        except ConnectionRefusedError:
            return f"nothing accepts connections at {path} (the Docker daemon is not running)"
        except PermissionError:
            return f"this user may not use {path} (permission denied: add the user to the docker group)"
        except TimeoutError:
            return f"the Docker daemon at {path} did not answer within {PING_TIMEOUT_S:g} s"
        except OSError as error:
            return f"the Docker daemon at {path} cannot be reached ({error.strerror or error})"
    if status.split(" ")[1:2] != ["200"]:
        return f"{path} answered GET /_ping with {status or 'nothing'!r}, not a Docker daemon's 200 OK"
    return None
