"""Small real pieces for the hook and eval tests: BFCL rows, a runtime YAML, the tiny offline model,
and a local server speaking SGLang's /generate protocol in front of it."""

from __future__ import annotations

import atexit
import copy
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.support.once_per_run import once_per_run


def bfcl_rows(per_category: int, split: str | None = "test") -> list[dict[str, Any]]:
    """The first `per_category` rows of each multi-turn category in a split (None: of any split), in
    category order (copies: a caller may change its own)."""
    counts: dict[str, int] = {}
    kept = []
    for row in _all_bfcl_rows():
        metadata = row["metadata"]
        if split in (None, metadata["split"]) and counts.get(metadata["data_source"], 0) < per_category:
            counts[metadata["data_source"]] = counts.get(metadata["data_source"], 0) + 1
            kept.append(copy.deepcopy(row))
    return kept


@cache  # asked for by a dozen modules
def _all_bfcl_rows() -> tuple[dict[str, Any], ...]:
    return tuple(built_bfcl_rows())


def built_bfcl_rows() -> list[dict[str, Any]]:
    """Every row of BFCL's default config, built once for the test run (~1.8 s of CPU) by the first
    process that asks and read back by the others (~0.8 s: tests/support/once_per_run.py); each call
    after the first gives its own copy."""
    return once_per_run("bfcl-rows", _build_bfcl_rows)


def _build_bfcl_rows() -> list[dict[str, Any]]:
    from t3rl_core.envs.bfcl.config import BFCLEnvConfig
    from t3rl_core.envs.bfcl.data import build_rows

    return build_rows(BFCLEnvConfig())


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def runtime_dict(tokenizer_dir: Path, **rollout: Any) -> dict[str, Any]:
    """A BFCL runtime config (progress reward, Qwen3 chat format) as the mapping under `t3rl`."""
    return {
        "env": {"name": "bfcl_multi_turn"},
        "reward": {"name": "progress"},
        "chat": {"tokenizer": str(tokenizer_dir), "chat_template": "qwen3"},
        "parsers": {"tool_call_parser": "qwen25"},
        "rollout": rollout,
    }


def write_runtime_yaml(path: Path, tokenizer_dir: Path, **rollout: Any) -> Path:
    """The file launch passes with --custom-config-path: one top-level key, `t3rl`."""
    path.write_text(yaml.safe_dump({"t3rl": runtime_dict(tokenizer_dir, **rollout)}))
    return path


def build_tiny_model(out_dir: Path, corpus: Path) -> Path:
    """The quickstart's tiny Qwen3 model (tokenizer trained on `corpus`), built in a subprocess."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "t3rl_core.chat.tiny",
            "--family",
            "qwen3",
            "--out",
            str(out_dir),
            "--corpus",
            str(corpus),
        ],
        check=True,
        capture_output=True,
    )
    return out_dir


@cache
def shared_tiny_stack() -> tuple[Path, Path]:
    """(data dir with bfcl_test.jsonl of one test task per category, tiny model trained on it), built
    once per test run: in the run's shared directory (tests/conftest.py), by the first process that
    asks, while the others wait on its lock (~8 s of CPU a build); readers must not change it. Outside
    the suite, once per process in a temporary directory removed at exit."""
    shared = os.environ.get("T3RL_TEST_SHARED_DIR")
    if shared is None:
        root = Path(tempfile.mkdtemp(prefix="t3rl-tiny-stack-"))
        atexit.register(shutil.rmtree, root, True)
        return _build_tiny_stack(root)
    root = Path(shared) / "tiny-stack"
    with (Path(shared) / "tiny-stack.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if this process dies
        if not (root / "built").exists():
            shutil.rmtree(root, ignore_errors=True)  # a build an ended process left half done
            _build_tiny_stack(root)
            (root / "built").touch()
    return root / "data", root / "model"


def _build_tiny_stack(root: Path) -> tuple[Path, Path]:
    data = write_jsonl(bfcl_rows(per_category=1), root / "data" / "bfcl_test.jsonl").parent
    return data, build_tiny_model(root / "model", data)


# The environment of every process a test starts to serve the tiny model: torch decodes on one thread.
# Its default is a thread per core, and on the suite's 2 shared cores (3 xdist workers, other processes)
# the extra thread mostly spins in OpenMP's wait: a served eval of 4 episodes took 10 s of the server's
# CPU with it, 6.5 s without (load ~10). Nothing a test asserts depends on the thread count.
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


def one_thread_env() -> dict[str, str]:
    """This process's environment with ONE_THREAD, for a tiny-model server's Popen."""
    return {**os.environ, **ONE_THREAD}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def generate_server(model_dir: Path, timeout: float = 60.0) -> Iterator[tuple[str, int]]:
    """The tiny model behind `python -m t3rl_core.engines.serve`; yields (host, port)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "t3rl_core.engines.serve", "--model", str(model_dir), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=one_thread_env(),
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"serve exited: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        yield "127.0.0.1", port
    finally:
        process.terminate()
        process.wait(timeout=20)
