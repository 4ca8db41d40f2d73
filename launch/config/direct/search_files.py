"""The search path's files as the direct composition reads them, and the config groups and options
they hold: what composing, listing (`t3rl ls`) and explaining a refused key (its group guessed, the
option choosing a section's kind) read without Hydra, apart from the composition itself so that the
refusals it words can read them too."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from launch.config.direct.config_files import Repository
from launch.config.direct.nodes import plain
from launch.config.direct.unsupported import Unsupported
from launch.config.search_path import PACKAGE_SOURCE, roots

# What Hydra itself stores in its ConfigStore (the search path's last entry); anything else in it could
# be a config the direct composition does not see.
_HYDRA_STORE = frozenset({"hydra", "_dummy_empty_config_.yaml"})


def repository(config_dirs: Sequence[str]) -> Repository:
    """The search path's files; Unsupported when it holds anything but plain directories."""
    dirs = [os.path.abspath(os.path.expanduser(d)) for d in config_dirs]
    found = roots(dirs)
    if found is None or len(found) != len(dirs) + 1:
        raise Unsupported("a search path entry that is not a plain directory")
    store = sys.modules.get("hydra.core.config_store")
    if store is not None and set(store.ConfigStore.instance().repo) - _HYDRA_STORE:
        raise Unsupported("configs registered in Hydra's ConfigStore")
    return Repository([(PACKAGE_SOURCE, found[0]), *((f"file://{d}", d) for d in dirs)])


def groups(config_dirs: Sequence[str]) -> list[str] | None:
    """The top-level config groups as launch.config.compose.groups lists them, or None to ask Hydra."""
    try:
        return repo_groups(repository(config_dirs))
    except Unsupported:
        return None


def repo_groups(repo: Repository) -> list[str]:
    return [g for g in repo.groups() if g != "hydra"]  # Hydra's own group is never listed


def group_options(group: str, config_dirs: Sequence[str]) -> list[str] | None:
    """The options of `group` as Hydra's loader lists them, or None to ask Hydra."""
    try:
        return repo_options(repository(config_dirs), group)
    except Unsupported:
        return None


def repo_options(repo: Repository, group: str) -> list[str]:
    """`repo.options(group)`; Unsupported where Hydra lists otherwise: it skips an `x.yaml` that is not a
    file (a directory, a link to nothing), and lists an option `a` for an entry `a.b` beside a file
    `a.b.yaml` (it cuts the name at its last dot)."""
    for directory in repo.directories(group):
        for entry in os.listdir(directory):
            path = os.path.join(directory, entry)
            if entry.endswith(".yaml") and not os.path.isfile(path):
                raise Unsupported(f"{path}: not a file")
            if "." in entry and not entry.endswith(".yaml") and os.path.isfile(f"{path}.yaml"):
                raise Unsupported(f"{path}: a name Hydra lists otherwise")
    return repo.options(group)


def option_kinds(group: str) -> dict[str, str]:
    """Each shipped option of `group` → the registry name its file sets, else the option itself
    (`launch.config.compose.option_kinds` without Hydra); Unsupported where Hydra could read otherwise."""
    repo = repository(())
    kinds = {}
    for option in repo_options(repo, group):
        loaded = repo.load(f"{group}/{option}")
        name = plain(loaded.content).get("name") if loaded is not None else None
        if isinstance(name, str) and "${" in name:  # Hydra's load gives it resolved
            raise Unsupported(f"{group}/{option}: an interpolated name")
        kinds[option] = name if isinstance(name, str) and name else option
    return kinds
