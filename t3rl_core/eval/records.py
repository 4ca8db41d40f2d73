"""What an eval evaluated, recorded next to its numbers: the model (path or URL, the id the server
reports, a fingerprint of the checkpoint's files, or the run dir and stage that produced it), the
sampling, the dataset file's sha256 and the code's git state.

The checkpoint fingerprint is cheap on purpose (file names, sizes and mtimes; no weight is read): it
tells two checkpoints apart and notices a rewritten one, which is what comparing results needs.
"""

from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import Any

from t3rl_core.eval.compared import ENGINES
from t3rl_core.secret import mask_text


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint(path: Path) -> dict[str, Any] | None:
    """`{"fingerprint", "files", "bytes"}` of a checkpoint dir or file from names, sizes and mtimes;
    None when nothing is there (a remote model id, a path on another machine)."""
    if not path.exists():
        return None
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    digest = hashlib.sha256()
    total = 0
    for file in files:
        stat = file.stat()
        total += stat.st_size
        name = file.relative_to(path).as_posix() if path.is_dir() else file.name
        digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return {"fingerprint": "sha256:" + digest.hexdigest(), "files": len(files), "bytes": total}


def run_stage_of(path: Path) -> dict[str, str] | None:
    """The pipeline run dir and stage a path lies in (`<run dir>/stages/<stage>/…`), if any."""
    resolved = path.resolve()
    for parent in (resolved, *resolved.parents):
        if parent.parent.name == "stages":
            return {"run_dir": str(parent.parent.parent), "stage": parent.name}
    return None


def checkpoint_record(path: str | Path | None) -> dict[str, Any] | None:
    """A local checkpoint's path, fingerprint and producing stage; None when there is no local path."""
    if not path:
        return None
    local = Path(path).expanduser()
    record: dict[str, Any] = {"path": str(path)}
    found = fingerprint(local)
    if found is None:
        return record | {"fingerprint": None, "note": "not a local path: the model id is all there is"}
    return record | found | ({"produced_by": stage} if (stage := run_stage_of(local)) else {})


def git_state(root: Path) -> dict[str, Any]:
    """`{"sha", "dirty"}` of the checkout holding t3rl (None values outside a git checkout)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout.strip()

    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no") if sha else None
    return {"sha": sha, "dirty": None if status is None else bool(status)}


def model_record(engine: Any, served: dict[str, Any], checkpoint: Path | None) -> dict[str, Any]:
    """The evaluated model: engine name, URL (credentials masked) or path, served id, checkpoint."""
    name = engine.name
    record: dict[str, Any] = {"engine": name}
    if name == "sglang":
        record["url"] = mask_text(engine.url) if engine.url else None
        record["served_model"] = served.get("served_model")
        local = checkpoint or served.get("served_model")
        record["checkpoint"] = checkpoint_record(local)
        if checkpoint is not None:
            record["served_checkpoint"] = str(checkpoint)
    elif name == "hf":
        record["model_path"] = served.get("model_path") or engine.model_path
        record["checkpoint"] = checkpoint_record(record["model_path"])
    else:
        record["policy"] = f"scripted {name} policy (no model)"
    # Every other setting declared to change what answers (compared.ENGINES: the HF engine's dtype and
    # device, the reference policy's faults and their seed), as the config gives it.
    for field, declared in ENGINES.get(name, {}).items():
        if declared == "model" and field not in ("name", "model_path"):
            value = getattr(engine, field, None)
            record[field] = dict(value) if isinstance(value, dict) else value
    return record
