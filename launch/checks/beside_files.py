"""A relative path a config file of one's own wrote that names a file beside that file, not under the
directory t3rl starts in: `env: {data: {source: problems.jsonl}}` in mine/experiment/rel.yaml, the file in
mine/experiment/.

t3rl reads every relative path from the directory it was started in (the stages' files anchor it there:
`launch/plan/anchored_paths.py`), as Hydra does; a user who keeps the data beside the experiment file
means that file. The probe that found nothing under the start directory said "download it to
problems.jsonl"; when the file that wrote the key (or a config dir) holds one of that relative name, it is
named, and its absolute path is the fix.
"""

from __future__ import annotations

from pathlib import Path

from launch.checks.context import Context


def found_beside(ctx: Context, key: str, typed: str) -> Path | None:
    """The file `typed` (relative) names beside the config file that set `key`, or under a config dir."""
    if Path(typed).is_absolute() or typed.startswith("~"):
        return None
    origin = ctx.provenance.origin(key)
    written = origin.source.split(" (chosen by ")[0] if origin is not None else ""
    places = [Path(written).parent] if written.endswith(".yaml") else []
    places += [Path(d).expanduser() for d in ctx.config_dirs]
    return next((p / typed for p in places if (p / typed).is_file()), None)
