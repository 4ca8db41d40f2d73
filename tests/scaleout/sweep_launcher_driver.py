"""A sweep launcher over test points in its own process (a test kills it, children and all).

sweep_launcher_driver.py ADDRESS LINES RUN_DIR...
"""

from __future__ import annotations

import sys
from pathlib import Path

from launch.run.parallel import PointJob, PointScheduler

DRIVER = Path(__file__).parent / "sweep_point_driver.py"

if __name__ == "__main__":
    address, lines, *run_dirs = sys.argv[1:]
    jobs = [
        PointJob(
            i, Path(d), (sys.executable, str(DRIVER), "ray", address, d, lines, "0"), 1, Path(d) / "l.log"
        )
        for i, d in enumerate(run_dirs)
    ]
    progress = PointScheduler(jobs, poll_s=0.1).run()
    print({i: p.status for i, p in progress.items()}, flush=True)
