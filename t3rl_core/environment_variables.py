"""Every environment variable named T3RL_* that t3rl reads, and what reads it: the one list, so a name
set in a shell that nothing reads (`T3RL_RUN_DIR` for `T3RL_RUNS_DIR`) is told apart from one that does
(`t3rl validate` warns about it; tests/architecture/test_environment_variables.py finds every name the
sources read here). docs/reference/environment.md shows the list.
"""

from __future__ import annotations

VARIABLES: dict[str, str] = {
    "T3RL_RUNS_DIR": "paths.runs_dir's default (conf/paths/default.yaml), and where `t3rl runs` looks",
    "T3RL_PLANS_DIR": "paths.plans_dir's default: where `t3rl plan` writes",
    "T3RL_CHECKPOINTS_DIR": "paths.checkpoints_dir's default: the shared cache of converted checkpoints",
    "T3RL_MODELS_DIR": "paths.models_dir's default: downloaded HF checkpoints",
    "T3RL_CACHE_DIR": "paths.cache_dir's default (prepared data, tiny models), the composition cache's",
    "T3RL_CLUSTER_PYTHON": "paths.cluster_python's default: the interpreter of the t3rl_core stages",
    "T3RL_NO_CACHE": "1: compose every command line afresh, without the composition cache",
    "T3RL_COMPOSE_AHEAD": "0: compose in the command's own process, not in a child forked at start",
    "T3RL_TRACEBACK": "1: an unexpected error is raised with its traceback instead of one line",
    "T3RL_RAY_WAIT_S": "seconds a Slurm job's nodes wait for their Ray head (executor.ray_start_timeout_s)",
    "T3RL_RAY_POLL_S": "seconds between a Slurm train job's checks of its Ray cluster (default 5)",
    "T3RL_TEST_WORKERS": "scripts/test.sh: the number of pytest workers (0: none)",
    # Set by t3rl for the processes it starts; a user never sets these.
    "T3RL_STAGE_RUN": "set by the local executor in a stage's environment: the execution it belongs to",
    "T3RL_POINT_RESULT": "set by a sweep for each point's process: where it writes its result",
    "T3RL_SECRET_SINK": "set by the launcher for a stage: where a revealed credential is sent to be masked",
    "T3RL_CALL_WORKER_PARENT": "set for a tool-call worker: the process whose death ends it (Linux)",
}
