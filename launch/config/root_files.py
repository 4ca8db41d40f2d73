"""Config files at the top of a config dir of one's own, which t3rl never reads: a config dir holds group
folders (`experiment/`, `model/`, `local/`, …) and only their files are options. A copy of t3rl's primary
`conf/config.yaml` edited there (`seed: 7`), or an experiment saved beside the folders, changed nothing and
said nothing: `t3rl show --explain seed` still named t3rl's own file."""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from pathlib import Path

from launch.config.errors import Problem
from launch.config.hidden_options import shown_path

# The group the primary config mounts at the top for one's own settings (conf/config.yaml's
# `optional local@_global_: default`).
_LOCAL = "local/default.yaml"


def root_file_warnings(config_dirs: Sequence[str]) -> Iterator[Problem]:
    """A warning per config file at the top of a config dir, with where it would be read."""
    for directory in config_dirs:
        root = Path(directory).expanduser()
        try:
            files = sorted(p for p in root.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
        except OSError:
            continue
        for path in files:
            yield Problem(
                "--config-dir",
                f"{shown_path(path)} is never read: a config dir holds group folders (experiment/, "
                "model/, local/, …) and t3rl reads only the files in them",
                shown_path(path),
                _fix(path, root),
                severity="warning",
            )


def _fix(path: Path, root: Path) -> str:
    if path.stem == "config":  # a copy of the primary config: its changes are one's own settings
        local = shlex.quote(shown_path(root / _LOCAL))
        return (
            f"put the keys you changed in {local} (the primary config reads it at the top) and delete "
            f"{shlex.quote(shown_path(path))}"
        )
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    if "@package _global_" in text or "\ndefaults:" in f"\n{text}":  # an experiment's shape
        target = shlex.quote(shown_path(root / "experiment" / f"{path.stem}.yaml"))
        return (
            f"mkdir -p {shlex.quote(shown_path(root / 'experiment'))} && mv {shlex.quote(shown_path(path))} "
            f"{target}, then choose it with +experiment={path.stem}"
        )
    return f"move it into the folder of its config group ({shown_path(root)}/<group>/{path.name})"
