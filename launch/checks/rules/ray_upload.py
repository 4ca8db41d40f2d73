"""The size of what Ray uploads as a job's working dir (`executor.working_dir`), probed before the run.

Ray zips the directory (leaving out what its `.gitignore` and `.rayignore` files name, at every depth, and
the runtime env's `excludes`: `launch.plan.secret_uploads`) and refuses a package of
`RAY_max_grpc_message_size` bytes or more (512 MiB unless that variable, read where t3rl submits, says
otherwise: Ray 2.60's `packaging.GCS_STORAGE_MAX_SIZE`), when the train stage is submitted, after the
stages before it ran. The probe walks the directory as Ray does and adds up the files' sizes, stopping at
the limit. Zipping shrinks them by an unknown amount, so:

- files of formats that do not shrink (weights, archives, already compressed data) holding twice the limit
  are refused: Ray's deflate does not halve them;
- files holding the limit before compression are warned about;

each with the largest entries named and the ignore file that leaves them out as the fix (or no
working dir). A `.zip` working dir is uploaded as it is: refused at the limit.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from launch.checks.context import Context
from launch.config.errors import Problem
from launch.config.schema import RayExecutorConfig

if TYPE_CHECKING:
    from pathspec import PathSpec

KEY = "executor.working_dir"
_DEFAULT_LIMIT = 512 * 1024 * 1024  # Ray 2.60: GRPC_CPP_MAX_MESSAGE_SIZE
# Formats whose bytes deflate cannot halve: model weights (floats) and data that is compressed already.
_DENSE = (
    *(".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".npy", ".npz", ".distcp"),
    *(".zip", ".gz", ".tgz", ".xz", ".bz2", ".zst", ".7z", ".parquet", ".arrow", ".jpg", ".png", ".mp4"),
)
_MIB = 1024 * 1024


def limit() -> int:
    """The largest package Ray uploads, as the submitting process reads it."""
    try:
        return int(os.environ.get("RAY_max_grpc_message_size", _DEFAULT_LIMIT))  # noqa: SIM112  (Ray spells it so)
    except ValueError:
        return _DEFAULT_LIMIT


def _spec(lines: Iterable[str]) -> PathSpec:
    """Patterns read as Ray reads them: pathspec's "gitwildmatch" (deprecated by pathspec 1.x, which
    warns on every pattern; Ray 2.60 still uses it, and the probe matches what Ray matches)."""
    from pathspec import PathSpec  # lazy: only to probe an upload

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return PathSpec.from_lines("gitwildmatch", lines)


def _ignore_file(where: Path, name: str) -> Callable[[Path], bool] | None:
    """Ray's matcher of an ignore file in `where` (gitignore patterns, relative to `where`)."""
    try:
        lines = (where / name).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    spec = _spec(lines)
    return lambda p: spec.match_file(str(p.relative_to(where)))


def uploaded_sizes(root: Path, stop_at: int) -> tuple[int, int, list[tuple[int, str]]]:
    """(bytes of every file Ray would upload, of those in formats that do not shrink, the largest top-level
    entries as (bytes, name)), walking as Ray's `_dir_travel` does until the total reaches `stop_at`."""
    from t3rl_core.secret_files import SECRET_FILES  # lazy: t3rl's upload excludes, only to probe

    secret = _spec(SECRET_FILES)
    excludes: list[Callable[[Path], bool]] = [lambda p: secret.match_file(str(p.relative_to(root)))]
    total = dense = 0
    by_entry: dict[str, int] = {}

    def travel(path: Path) -> None:
        nonlocal total, dense
        added = [m for m in (_ignore_file(path, ".gitignore"), _ignore_file(path, ".rayignore")) if m]
        excludes.extend(added)
        try:
            if path == root or not any(e(path) for e in excludes):
                if path.is_dir() and not path.is_symlink():
                    for sub in sorted(path.iterdir()):
                        if total >= stop_at:
                            break
                        travel(sub)
                elif path.is_file():
                    size = path.stat().st_size
                    total += size
                    dense += size if path.suffix.lower() in _DENSE else 0
                    top = path.relative_to(root).parts[0]
                    by_entry[top] = by_entry.get(top, 0) + size
        finally:
            del excludes[len(excludes) - len(added) :]

    travel(root)
    return total, dense, sorted(((n, e) for e, n in by_entry.items()), reverse=True)[:3]


def working_dir_fits_an_upload(ctx: Context) -> Iterator[Problem]:
    """`executor.working_dir` zips to less than the largest package Ray uploads (module docstring)."""
    executor = ctx.run.executor
    if not isinstance(executor, RayExecutorConfig) or executor.working_dir is None:
        return
    root, most = Path(executor.working_dir).expanduser(), limit()
    fix = f"set {KEY}=null, or list the large entries in {root}/.rayignore (gitignore patterns)"
    if root.is_file():
        if root.stat().st_size >= most:
            yield Problem(
                KEY,
                f"{root} holds {root.stat().st_size / _MIB:.0f} MiB, and Ray uploads no package of "
                f"{most / _MIB:.0f} MiB or more: the train stage's submission fails",
                fix=f"set {KEY}=null (or a smaller archive)",
            )
        return
    if not root.is_dir():
        return  # local_dirs refuses a working dir that does not exist
    total, dense, largest = uploaded_sizes(root, 2 * most)
    if total < most:
        return
    named = ", ".join(f"{name} {size / _MIB:.0f} MiB" for size, name in largest)
    refused = dense >= 2 * most
    yield Problem(
        KEY,
        f"Ray would upload {'more than ' if total >= 2 * most else ''}{total / _MIB:.0f} MiB of {root} "
        f"(largest: {named}; .gitignore and .rayignore applied), and it uploads no package of "
        f"{most / _MIB:.0f} MiB or more zipped: "
        + (
            "weights and compressed files alone are twice that, so the train stage's submission fails"
            if refused
            else "the train stage's submission fails unless zipping shrinks it below that"
        ),
        fix=fix,
        severity="error" if refused else "warning",
    )


RULES = (working_dir_fits_an_upload,)
