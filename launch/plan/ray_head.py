"""The `ray start` / `ray stop` commands that bracket train stages on one machine."""

from __future__ import annotations

from t3rl_core.records import Record


class RayHead(Record):
    """The Ray head a local run (or plan.sh run by hand) starts around train stages."""

    port: int = 6379
    dashboard_port: int = 8265

    def start_argv(self, gpus: int) -> list[str]:
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
            "--disable-usage-stats",
        ]

    @staticmethod
    def stop_argv() -> list[str]:
        return ["ray", "stop"]
