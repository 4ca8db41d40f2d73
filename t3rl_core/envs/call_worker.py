"""A tool-call worker process: runs pure tool calls for the episode loop, which can kill it.

`python -m t3rl_core.envs.call_worker MODULE…` imports the modules (an entry `module:name` calls that
function of its module too, the world's own preparation), writes `ready`, then answers each
request line (JSON `[fn, args]`, fn as `module:name`) with one JSON line: the text `fn(*args)` returns.
A call that raises is a bug of its function (a world's call function turns its own errors into
texts): the worker writes nothing and exits, and the caller reports the call's worker as lost.
On Linux the kernel kills a worker when the process that started it dies, even SIGKILLed mid-call
(`PARENT_ENV` names that process): a call the model made costly would otherwise run on for minutes.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from t3rl_core import module_help
from t3rl_core.lifetime import die_with_parent

# The pid of the process that started this worker (from the environment: by the time the worker reads
# its parent's pid, the parent may be gone already).
PARENT_ENV = "T3RL_CALL_WORKER_PARENT"


def _function(path: str, cache: dict[str, Callable[..., Any]]) -> Callable[..., Any]:
    function = cache.get(path)
    if function is None:
        module, _, name = path.partition(":")
        function = cache[path] = getattr(importlib.import_module(module), name)
    return function


def main(preload: list[str]) -> None:
    usage = "usage: python -m t3rl_core.envs.call_worker MODULE[:FUNCTION]..."
    if module_help.asked(preload, usage, __doc__):
        return
    parent = os.environ.get(PARENT_ENV)
    if parent is not None:
        die_with_parent(int(parent))
    functions: dict[str, Callable[..., Any]] = {}
    for entry in preload:
        if ":" in entry:
            _function(entry, functions)()
        else:
            importlib.import_module(entry)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    for line in sys.stdin:
        path, args = json.loads(line)
        text = _function(path, functions)(*args)
        sys.stdout.write(json.dumps(text) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main(sys.argv[1:])
