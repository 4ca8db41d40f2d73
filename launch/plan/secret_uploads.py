"""What Ray must not upload with a job's code.

A job's `working_dir` (`executor.working_dir`) and `py_modules` (a plugin's package) are uploaded to
the cluster's object store, where every job of the cluster can read them: a `.env`, a key file or a
credentials file lying next to the code would leave the machine with it. `with_upload_excludes` adds
Ray's `excludes` (gitignore syntax, applied to both uploads) for the files credentials are kept in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def with_upload_excludes(runtime_env: Mapping[str, Any]) -> dict[str, Any]:
    """`runtime_env` with `excludes` for credential files when it uploads code; as it is otherwise."""
    env = dict(runtime_env)
    if "working_dir" in env or "py_modules" in env:
        # The files credentials are kept in: one list, which a sandbox's readable paths are searched by too.
        from t3rl_core.secret_files import SECRET_FILES  # lazy: only a plan that uploads code loads it

        excludes = list(env.get("excludes", ()))
        env["excludes"] = excludes + [pattern for pattern in SECRET_FILES if pattern not in excludes]
    return env
