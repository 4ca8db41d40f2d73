"""t3rl's config search path, without Hydra: the package `t3rl_conf` (repo `conf/`, shipped in the
wheel), then each `--config-dir`, and how a config file on it is shown to people."""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

PACKAGE = "t3rl_conf"
PACKAGE_SOURCE = f"pkg://{PACKAGE}"


@lru_cache(maxsize=8)
def package_dir(package: str) -> Path | None:
    """The directory of an installed package, resolved (a package reached through a symlink is shown
    where its files live); None when it is not installed as a directory."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def local_file(source_path: str, config_path: str) -> Path | None:
    """The file of `config_path` ("model/qwen3_8b") in a search-path entry ("pkg://…", "file://…")."""
    scheme, _, location = source_path.partition("://")
    if scheme == "file":
        return Path(location) / f"{config_path}.yaml"
    if scheme == "pkg":
        root = package_dir(location.replace("/", "."))
        return None if root is None else root / f"{config_path}.yaml"
    return None


def display_path(source_path: str, config_path: str) -> str:
    """A config file as people find it: relative to the working directory when below it."""
    file = local_file(source_path, config_path)
    if file is None:
        return f"{source_path}/{config_path}.yaml"
    try:
        return str(file.relative_to(Path.cwd()))
    except ValueError:
        return str(file)


def roots(config_dirs: Sequence[str]) -> list[str] | None:
    """The directories of the search path, in order: the package, then each (absolute) config dir;
    None when one is not a plain directory (a zipped package, a missing dir: left to Hydra)."""
    spec = importlib.util.find_spec(PACKAGE)
    package = list(spec.submodule_search_locations or []) if spec is not None else []
    found = [*package, *config_dirs]
    return found if package and all(os.path.isdir(r) for r in found) else None


def first_comment(file: Path | None) -> str:
    """The first sentence of a config file's header comment (its description in `t3rl ls`)."""
    if file is None or not file.is_file():
        return ""
    words: list[str] = []
    for line in file.read_text().splitlines():
        stripped = line.strip()
        if not stripped.startswith("#") or (words and _EXAMPLE.match(stripped)):
            # an example indented under the prose (`#   t3rl plan … # a verifiers environment`) is a line
            # to paste, never the rest of a sentence: joined in, its own comment ran into the next one
            break
        if not stripped.startswith("# @package"):
            words.append(stripped.lstrip("#").strip())
    text = " ".join(words).removesuffix(":")
    for end in (m.start() + 1 for m in re.finditer(r"\. ", text)):
        if not text[:end].endswith(_ABBREVIATIONS):
            return text[:end]
    return text


# A comment line indented past `# `: an example (a command, a snippet) under the prose above it.
_EXAMPLE = re.compile(r"^#\s{2,}\S")
# Abbreviations whose period ends no sentence (`t3rl ls` cut a description at "i.e.").
_ABBREVIATIONS = (" i.e.", " e.g.", " cf.", " vs.", " approx.", "(i.e.", "(e.g.", "(cf.")
