"""Registries resolve plugins by import path and by entry point, validated like built-ins."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest
from pydantic import ValidationError

from t3rl_core.registries import DATASETS, ENVS, REWARDS
from t3rl_core.registry import PluginError, Registry, UnknownNameError

BAD_PLUGINS = """
from typing import Literal

from pydantic import BaseModel, ConfigDict
from t3rl_core.config import RewardConfig


class Loose(RewardConfig):
    model_config = ConfigDict(extra="allow")


class NotAConfig(BaseModel):
    name: str = "x"


class NoConfig:
    pass


class WrongBase:
    Config = NotAConfig


class AcceptsAnything:
    Config = Loose


class Narrow(RewardConfig):
    name: Literal["narrow"] = "narrow"


class NarrowName:
    Config = Narrow
"""


def install_entry_points(root: Path, group: str, entries: dict[str, str]) -> None:
    """A distribution's metadata as pip writes it (dist-info with entry_points.txt) under `root`."""
    info = root / "t3rl_counter-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: t3rl-counter\nVersion: 0.1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entries.items())
    (info / "entry_points.txt").write_text(f"[{group}]\n{lines}")


def test_an_import_path_names_a_plugin_validated_like_a_built_in(example_on_path):
    config = REWARDS.validate({"name": "t3rl_counter.reward:ExactTarget", "extra_call_penalty": 0.2})
    assert type(config).__name__ == "ExactTargetConfig" and config.extra_call_penalty == 0.2
    with pytest.raises(ValidationError) as error:
        REWARDS.validate({"name": "t3rl_counter.reward:ExactTarget", "extra_call_penalt": 0.2})
    assert error.value.errors()[0]["type"] == "extra_forbidden"
    entry = REWARDS.entry("t3rl_counter.reward:ExactTarget")
    assert entry.source == "import path t3rl_counter.reward:ExactTarget"


def test_an_env_plugin_is_also_its_own_data_preparation(example_on_path, tmp_path):
    config = ENVS.validate({"name": "t3rl_counter.world:CounterWorld", "tasks": 3})
    paths = DATASETS.factory(config.name)(config, tmp_path)
    assert sorted(paths) == ["counter_test", "counter_train"]
    assert len(paths["counter_test"].read_text().splitlines()) == 3


def test_an_entry_point_names_a_plugin_with_its_distribution(
    example_on_path, tmp_path, monkeypatch, fresh_entry_points
):
    entries = {"exact_ep": "t3rl_counter.reward:ExactTarget", "binary": "t3rl_counter.reward:ExactTarget"}
    install_entry_points(tmp_path, "t3rl.rewards", entries)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = REWARDS.validate({"name": "exact_ep"})
    assert type(config).__name__ == "ExactTargetConfig"
    assert REWARDS.entry("exact_ep").source == "entry point t3rl.rewards (t3rl-counter 0.1.0)"
    listed = [(row.name, row.source, row.target) for row in REWARDS.listing()]
    assert (
        "exact_ep",
        "entry point t3rl.rewards (t3rl-counter 0.1.0)",
        "t3rl_counter.reward:ExactTarget",
    ) in listed
    binary = [source for name, source, _ in listed if name == "binary"]
    assert binary == [
        "built-in",
        "entry point t3rl.rewards (t3rl-counter 0.1.0), clashes with the built-in of the same name: a "
        "config naming it is refused",
    ]
    # Which one `binary` means cannot be told (hub hunt wave five): refused, both named.
    with pytest.raises(PluginError, match="both t3rl's built-in reward"):
        REWARDS.validate({"name": "binary"})
    with pytest.raises(UnknownNameError) as error:
        REWARDS.validate({"name": "exact_eq"})
    assert error.value.suggestion == "exact_ep"


def test_built_in_names_never_scan_installed_distributions(monkeypatch, fresh_entry_points):
    real = importlib.metadata.entry_points

    def scan(**kwargs: str):
        if kwargs.get("group", "").startswith("t3rl."):
            raise AssertionError("entry points scanned for a built-in name")
        return real(**kwargs)  # pydantic looks for its own plugins once

    monkeypatch.setattr(importlib.metadata, "entry_points", scan)
    fresh = Registry(REWARDS.kind, REWARDS.entries, group=REWARDS.group, base=REWARDS.base)
    assert fresh.validate({"name": "binary"}).name == "binary"


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("no_such_pkg.rewards:Exact", "cannot import no_such_pkg.rewards"),
        ("bad_plugins:Missing", "bad_plugins has no Missing"),
        ("bad_plugins:NoConfig", "its `Config` is None"),
        ("bad_plugins:WrongBase", "not a subclass of t3rl_core.config.RewardConfig"),
        ("bad_plugins:AcceptsAnything", "accepts unknown keys"),
        ("bad_plugins:NarrowName", "Narrow.name does not accept 'bad_plugins:NarrowName'"),
        ("broken_plugin:Anything", "importing broken_plugin raised ZeroDivisionError"),
    ],
)
def test_a_plugin_that_cannot_be_used_says_why_and_how_to_fix_it(name, reason, tmp_path, monkeypatch):
    (tmp_path / "bad_plugins.py").write_text(BAD_PLUGINS)
    (tmp_path / "broken_plugin.py").write_text("RATIO = 1 / 0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh = Registry(REWARDS.kind, REWARDS.entries, group=REWARDS.group, base=REWARDS.base)
    with pytest.raises(PluginError) as error:
        fresh.validate({"name": name})
    assert reason in str(error.value) and error.value.fix
    assert isinstance(error.value, ImportError)  # skipped by code that lists what it can load


def test_shipped_experiments_never_scan_for_plugins(monkeypatch, fresh_entry_points, tmp_path):
    """Validating and planning configs made of built-ins only pays for no entry-point scan."""
    import sys

    from launch.checks.resolve import resolve
    from launch.plan.build import PlanContext, build_plan

    scanned: list[str] = []
    real = importlib.metadata.entry_points

    def spy(**kwargs: str):
        scanned.append(kwargs.get("group", ""))
        return real(**kwargs)

    monkeypatch.setattr(importlib.metadata, "entry_points", spy)
    for experiment in ("quickstart", "stage1_bfcl", "retool", "tau2_pipeline"):
        run = resolve([f"+experiment={experiment}"]).run
        build_plan(run, PlanContext(tmp_path / experiment, tmp_path, "/t3rl", sys.executable, experiment))
    assert not [group for group in scanned if group.startswith("t3rl.")]
