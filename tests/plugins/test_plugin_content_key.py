"""Prepared data is shared by content key: an env plugin's code and version are part of it, so editing
the plugin's `prepare()` (or anything in its package) or installing another version of it prepares
the data again instead of reusing "prepared before: same content key"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from t3rl_core.data import code_key, content_key
from t3rl_core.registries import ENVS

PACKAGE = "stale_data_world"
NAME = f"{PACKAGE}.world:World"
WORLD = """
from t3rl_core.config import EnvConfig

ROWS = 2


class WorldConfig(EnvConfig):
    name: str = "counter"


class World:
    Config = WorldConfig

    def __init__(self, config):
        self.config = config

    @staticmethod
    def prepare(config, out_dir):
        return {}
"""


def _distribution(root: Path, version: str) -> None:
    for old in root.glob(f"{PACKAGE}-*.dist-info"):
        for path in old.iterdir():
            path.unlink()
        old.rmdir()
    info = root / f"{PACKAGE}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: stale-data-world\nVersion: {version}\n")
    (info / "top_level.txt").write_text(f"{PACKAGE}\n")


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    package = tmp_path / PACKAGE
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "world.py").write_text(WORLD)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield package
    for module in [m for m in sys.modules if m.split(".")[0] == PACKAGE]:
        del sys.modules[module]
    ENVS._plugins.pop(NAME, None)


def test_the_key_follows_the_plugins_source(plugin):
    config = ENVS.validate({"name": NAME})
    first = content_key(config)
    assert content_key(config) == first and first.startswith(f"{NAME}-")
    (plugin / "world.py").write_text(WORLD.replace("ROWS = 2", "ROWS = 3"))
    edited = content_key(config)
    assert edited != first
    (plugin / "rows.py").write_text("def rows():\n    return 3\n")  # a helper prepare() may import
    assert content_key(config) not in (first, edited)


def test_the_key_follows_the_plugins_distribution_version(plugin):
    config = ENVS.validate({"name": NAME})
    _distribution(plugin.parent, "1.0")
    code_key._installed.cache_clear()  # a process sees one set of installed distributions
    one = content_key(config)
    _distribution(plugin.parent, "1.1")
    code_key._installed.cache_clear()
    assert content_key(config) != one
