"""The `ray start` / `ray stop` commands that bracket train stages on one machine."""

from __future__ import annotations

from launch.config.schema import LocalExecutorConfig
from t3rl_core.records import Record

# The ports are the executor's settings: a plan without one (executor=dry, whose plan.sh is run by hand)
# takes the local executor's defaults, declared there only.
_LOCAL = LocalExecutorConfig.model_fields


class RayHead(Record):
    """The Ray head a local run (or plan.sh run by hand) starts around train stages."""

    port: int = _LOCAL["ray_port"].default
    dashboard_port: int = _LOCAL["dashboard_port"].default

    def start_argv(self, gpus: int, temp_dir: str | None = None) -> list[str]:
        """`temp_dir`: the head's own session files (its address, sockets, logs), apart from another
        head's on this machine: Ray's default, /tmp/ray, is one for every head of the machine."""
        return [
            "ray",
            "start",
            "--head",
            "--port",
            str(self.port),
            "--dashboard-port",
            str(self.dashboard_port),
            "--num-gpus",
            str(gpus),
            *(["--temp-dir", temp_dir] if temp_dir is not None else []),
            "--disable-usage-stats",
        ]

    @staticmethod
    def stop_argv() -> list[str]:
        """plan.sh's, run by hand: `ray stop` stops every head of the machine (t3rl's local executor
        stops its own head's processes alone, found by the execution id they carry)."""
        return ["ray", "stop"]
