"""Score trajectories you already have (from another framework, or logs of a live model), one at a time,
with the same code the environments and rewards use in training and eval.

    from t3rl_core import score

    verdict = score.bfcl([[["cd(folder='document')", "mkdir(dir_name='temp')"]], [["ls()"]]],
                         task_id="multi_turn_base_0", mode="eval")
    verdict.success, verdict.details["failed_turn"], verdict.details["error_type"]

    score.toolrl(response, ground_truth, step=10, variant="coarse").reward
    score.retool(response, answer="42").reward
    score.tau2(messages, domain="airline", task_id="0").reward

Each returns a `Verdict` (`reward`, `success`, `details`, `to_json()`). Rows are looked up by id without
building whole splits (`score.bfcl_row`, `score.tau2_task`). Every function works inside a running
event loop too (it then runs on a worker thread); `abfcl` and `atau2` are the coroutine forms.
`t3rl score WORLD FILE.jsonl` scores a whole file.
"""

from t3rl_core.score.bfcl import abfcl, bfcl, bfcl_row
from t3rl_core.score.single_turn import retool, toolrl, toolrl_config
from t3rl_core.score.tau2 import atau2, tau2, tau2_task
from t3rl_core.score.verdict import Verdict

__all__ = [
    "Verdict",
    "abfcl",
    "atau2",
    "bfcl",
    "bfcl_row",
    "retool",
    "tau2",
    "tau2_task",
    "toolrl",
    "toolrl_config",
]
