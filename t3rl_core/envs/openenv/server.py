"""Where the environment's server is: a URL given, a local command this world starts and stops, or a
Docker image started through OpenEnv's own provider."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from typing import Any

from t3rl_core import outside_json
from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.eval.server import ServerStartError, _healthy, stop_group
from t3rl_core.lifetime import die_with_parent
from t3rl_core.outside_json import OutsideJsonError
from t3rl_core.secret import log_tail, mask_url
from t3rl_core.secret_env import environment_for_untrusted

# Seconds /schema may take: a server that answered /health answers it at once.
SCHEMA_TIMEOUT_S = 30.0
# Seconds a started server's processes have to end on SIGTERM before they are SIGKILLed.
STOP_GRACE_S = 10.0


class EnvServerError(ServerStartError, WorldUnavailable):
    """The server did not start, answered nothing, or answered what no OpenEnv server answers."""


class EnvServer:
    """The server of one run's episodes: `url` to connect to, `close()` to stop what was started."""

    def __init__(self, config: OpenEnvEnvConfig) -> None:
        self.config = config
        self._process: subprocess.Popen[bytes] | None = None
        self._provider: Any = None
        if config.image is not None:
            self.url = self._start_container(config.image)
        else:
            assert config.url is not None
            self.url = config.url.rstrip("/")
            if config.command is not None:
                self._start_command(config.command)

    def schema(self) -> dict[str, Any]:
        """The environment's JSON schemas (`/schema`: action, observation, state), refused with what the
        server answered when it is no OpenEnv server's (the tool the model acts with is built from it)."""
        where = f"the OpenEnv server at {mask_url(self.url)}"
        try:
            with urllib.request.urlopen(f"{self.url}/schema", timeout=SCHEMA_TIMEOUT_S) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            raise EnvServerError(
                f"{where} answered /schema with HTTP {exc.code} {exc.reason}: the server is up but failing "
                "or is not an OpenEnv server (check its log; env.url must be the environment's root)"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise EnvServerError(
                f"{where} cannot be reached ({reason}): start it (env.command, a service) or fix env.url"
            ) from None
        try:
            published = outside_json.loads(body, f"{where}'s /schema")
        except OutsideJsonError as exc:
            raise EnvServerError(f"{exc}: env.url must be an OpenEnv environment's root") from None
        except ValueError:
            raise EnvServerError(
                f"{where} answered /schema with no JSON ({log_tail(body[:80].decode(errors='replace'))!r}…): "
                "env.url must be the environment's root, not a proxy's page or another service"
            ) from None
        action = published.get("action") if isinstance(published, dict) else None
        if not isinstance(action, dict) or action.get("type", "object") != "object":
            keys = sorted(published) if isinstance(published, dict) else type(published).__name__
            raise EnvServerError(
                f"{where} publishes no action schema (an object under 'action' of /schema; got {keys}): "
                "it is not an OpenEnv environment server (openenv-core's create_app serves one)"
            )
        return published

    def release(self) -> dict[str, Any]:
        """The environment's name and version as its server publishes them (`/metadata`; create_app
        serves the environment's get_metadata()); {} when it publishes none (the endpoint is optional)."""
        try:
            with urllib.request.urlopen(f"{self.url}/metadata", timeout=SCHEMA_TIMEOUT_S) as response:
                published = outside_json.loads(response.read(), "/metadata")
        except (OSError, ValueError):  # urllib's errors are OSErrors; no JSON: ValueError
            return {}
        if not isinstance(published, dict):
            return {}
        return {key: published.get(key) for key in ("name", "version") if isinstance(published.get(key), str)}

    def close(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            # The whole group (a server's workers may outlive it), as the eval's SGLang server.
            stop_group(process.pid, STOP_GRACE_S, reap=process.poll)
        if self._provider is not None:
            self._provider.stop_container()
            self._provider = None

    def _start_command(self, argv: list[str]) -> None:
        if _healthy(self.url):
            raise EnvServerError(
                f"something already answers at {mask_url(self.url)}: env.command would not be used"
            )
        self._process = subprocess.Popen(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
            # An environment's server runs what the model asks (a coding environment runs its code): it
            # gets none of t3rl's credentials, as a `command` service does not.
            env=environment_for_untrusted(argv, os.environ),
            preexec_fn=functools.partial(die_with_parent, os.getpid()),
        )
        deadline = time.monotonic() + self.config.startup_timeout_s
        while not _healthy(self.url):
            process = self._process
            if process.poll() is not None:
                code = process.returncode
                # Its group first: what it forked ends with it, and the read below waits for every
                # holder of its stderr (a forked worker's copy kept it open, and the start hung with it).
                self.close()
                tail = (process.stderr.read() if process.stderr else b"").decode(errors="replace")
                raise EnvServerError(
                    f"env.command exited with {code}: {log_tail(tail)[-2000:]} (its program {argv[0]!r} is "
                    f"{shutil.which(argv[0]) or 'not on PATH'}: give the path of the Python the environment "
                    "is installed in, e.g. the venv's bin/python3, or run from that venv)"
                )
            if time.monotonic() > deadline:
                self.close()
                raise EnvServerError(
                    f"no /health at {mask_url(self.url)} within {self.config.startup_timeout_s:.0f} s"
                )
            time.sleep(0.2)

    def _start_container(self, image: str) -> str:
        # Lazy: OpenEnv's Docker provider is needed only for env.image.
        from openenv.core.containers.runtime import LocalDockerProvider

        self._provider = LocalDockerProvider()
        url = self._provider.start_container(image)
        self._provider.wait_for_ready(url, timeout_s=self.config.startup_timeout_s)
        return str(url).rstrip("/")
