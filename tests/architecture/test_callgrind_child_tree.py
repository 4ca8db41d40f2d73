"""The callgrind benchmarks' child imports the tree it is given, not the directory it was started from.

`benchmarks/eval_instructions.py --pythonpath <snapshot>` (and `bfcl_loop_instructions.py`) run a
`python -c` child with PYTHONPATH=<tree> through `callgrind_window.counted`; such a child puts its
working directory first on sys.path, so started from the checkout it imported the checkout's modules
and an A/B of a snapshot against the checkout counted the checkout twice. The child runs in its
scratch directory."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

# Stands in for a counted child: writes ready (its pid), waits for go, writes where `t3rl_core` came
# from, then done, and waits for end.
CHILD = r"""
import os, sys, time
from pathlib import Path
scratch = Path(sys.argv[1])
def put(name, text):
    (scratch / (name + ".tmp")).write_text(text)
    os.replace(scratch / (name + ".tmp"), scratch / name)
def wait(name):
    while not (scratch / name).exists():
        time.sleep(0.01)
put("ready", str(os.getpid()))
wait("go")
import t3rl_core
put("imported", t3rl_core.__file__)
put("done", "")
wait("end")
"""


def test_the_counted_child_imports_the_tree_on_its_pythonpath(tmp_path: Path, monkeypatch: Any) -> None:
    spec = importlib.util.spec_from_file_location("callgrind_window", ROOT / "benchmarks/callgrind_window.py")
    assert spec is not None and spec.loader is not None
    window = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(window)
    run = subprocess.run

    def no_callgrind(command: list[str], **kwargs: Any) -> Any:
        if command[0] == "callgrind_control":  # no valgrind here: the child is a plain process
            return subprocess.CompletedProcess(command, 0)
        return run(command, **kwargs)

    monkeypatch.setattr(window.subprocess, "run", no_callgrind)
    tree = tmp_path / "tree"
    (tree / "t3rl_core").mkdir(parents=True)
    (tree / "t3rl_core" / "__init__.py").write_text("")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.chdir(ROOT)  # started from the checkout, as the benchmarks are
    env = {"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"}
    with window.counted([sys.executable, "-c", CHILD, str(scratch)], env, scratch):
        imported = Path((scratch / "imported").read_text())
    assert imported == tree / "t3rl_core" / "__init__.py", imported
