"""What `t3rl ls` shows of the search path, read without Hydra: its groups and their options, the option
each group's default chooses, each option's file and description, and the `name` it sets.

Importing Hydra for a listing cost more than the listing. `direct_listing` reads the same files as
Hydra's loader through the direct composition's `Repository`, all of them before anything is printed,
and gives None wherever Hydra could say otherwise (a search path that is not plain directories, a
default composition the direct one does not reproduce, a file it does not parse, a name Hydra would
resolve): `t3rl ls` then lists through Hydra, which also words every error.
`tests/cli/test_ls_without_hydra.py` checks both print the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.direct.compose import PRIMARY_CONFIG, compose_directly
from launch.config.direct.defaults import DefaultsList
from launch.config.direct.nodes import plain
from launch.config.direct.search_files import repo_groups, repo_options, repository
from launch.config.direct.unsupported import Unsupported
from launch.config.errors import ConfigError
from launch.config.search_path import display_path, first_comment, local_file


class DirectListing:
    """The listing of a search path, every file read when it is made."""

    def __init__(self, config_dirs: Sequence[str]) -> None:
        if compose_directly([], config_dirs, {}) is None:  # Hydra's composition is what fails, if one does
            raise Unsupported("a default composition the direct one does not reproduce")
        repo = repository(config_dirs)
        chosen = DefaultsList(repo, {}).build(PRIMARY_CONFIG)
        self._defaults: dict[str, str | None] = {
            c.override_key: c.config_path.rpartition("/")[2] for c in chosen if c.override_key is not None
        }
        self._groups = repo_groups(repo)
        self._options = {g: repo_options(repo, g) for g in self._groups}
        self._sources: dict[str, tuple[str, str]] = {}
        self._names: dict[str, str | None] = {}
        for group, options in self._options.items():
            for option in options:
                config_path = f"{group}/{option}"
                loaded = repo.load(config_path)  # parsed: a file Hydra's load refuses is refused here
                if loaded is None:
                    raise Unsupported(f"{config_path}: no file")
                file = local_file(loaded.source_path, config_path)
                self._sources[config_path] = (
                    display_path(loaded.source_path, config_path),
                    first_comment(file),
                )
                name = plain(loaded.content).get("name")
                if isinstance(name, str) and "${" in name:  # Hydra's load gives it resolved
                    raise Unsupported(f"{config_path}: an interpolated name")
                self._names[config_path] = name if isinstance(name, str) else None

    def groups(self) -> list[str]:
        return self._groups

    def defaults(self) -> dict[str, str | None]:
        """The option each group's default chooses, by override key (Hydra's `known_choices`)."""
        return self._defaults

    def options(self, group: str) -> list[str]:
        return self._options[group]

    def source(self, config_path: str) -> tuple[str, str] | None:
        """(display path, first sentence of its header comment) of an option's file."""
        return self._sources.get(config_path)

    def name(self, config_path: str) -> str | None:
        """The top-level `name` the option's file sets, when it is text."""
        return self._names.get(config_path)


def direct_listing(config_dirs: Sequence[str]) -> DirectListing | None:
    """The listing of t3rl's search path with `config_dirs`, or None to list it through Hydra."""
    try:
        return DirectListing(config_dirs)
    except (Unsupported, ConfigError):
        return None
