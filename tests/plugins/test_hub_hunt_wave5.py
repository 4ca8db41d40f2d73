"""Adversarial hub environments and plugins, hunt wave five (docs/explanation/plugins.md, "Hunt wave
five"). Each is answered by a declaration every world or registry shares; in-process. Each test fails
with its declaration turned off."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from t3rl_core import registry
from t3rl_core.registries import ENVS, REWARDS
from t3rl_core.registry import PluginError, Registry

WORLD = "t3rl_counter.world:CounterWorld"


def _distribution(root: Path, name: str, entries: str) -> None:
    """A distribution's metadata as pip writes it under `root` (entry_points.txt with its headers)."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(entries)


@pytest.fixture
def site(example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_entry_points) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _fresh(of: Registry) -> Registry:
    return Registry(of.kind, of.entries, group=of.group, base=of.base)


# ------------------------------------------------ an entry point named like a built-in world


def test_an_entry_point_named_like_a_built_in_is_refused_with_both_origins(site: Path) -> None:
    """`[project.entry-points."t3rl.envs"] bfcl_multi_turn = my_world:World`, then `env=…` with
    `env.name=bfcl_multi_turn`: the built-in ran, silently, the plugin its user installed never did
    (`t3rl ls` alone said so). Now the name is refused naming both (the built-in's import path, the
    entry point's and its distribution), with a fix for each meaning; the plugin's fix validates."""
    _distribution(site, "shadow_world", f"[t3rl.envs]\nbfcl_multi_turn = {WORLD}\n")
    with pytest.raises(PluginError) as error:
        _fresh(ENVS).validate({"name": "bfcl_multi_turn"})
    message = str(error.value)
    assert "both t3rl's built-in env (t3rl_core.envs.bfcl.env:make_factory)" in message, message
    assert f"an entry point of t3rl.envs ({WORLD} (shadow_world 1.0))" in message, message
    assert f"name={WORLD}" in error.value.fix and "pip uninstall shadow_world" in error.value.fix
    assert type(_fresh(ENVS).validate({"name": WORLD})).__name__ == "CounterConfig"


def test_a_built_in_name_in_another_group_or_no_clash_stays_valid(site: Path) -> None:
    """No over-refusal: the same name in another kind's group (a reward called bfcl_multi_turn), a
    commented line, and plugins of names of their own leave the built-in as it is."""
    _distribution(
        site,
        "elsewhere",
        f"[t3rl.rewards]\nbfcl_multi_turn = {WORLD}\n[t3rl.envs]\n# binary = {WORLD}\nmine = {WORLD}\n",
    )
    assert type(_fresh(ENVS).validate({"name": "bfcl_multi_turn"})).__name__ == "BFCLEnvConfig"
    assert type(_fresh(REWARDS).validate({"name": "binary"})).__name__ == "BinaryRewardConfig"
    assert registry.entry_point_names("t3rl.envs") == {"mine"}


# ------------------------------------------------ a constructor or close that never returns, at validate

STUCK = """
import threading
from t3rl_counter.world import CounterConfig, CounterWorld

RELEASE = threading.Event()


class StuckConfig(CounterConfig):
    name: str = "{module}:Stuck"


class Stuck(CounterWorld):
    Config = StuckConfig

    def __init__(self, config):
        super().__init__(config)
        {build}

    async def aclose(self):
        {close}
"""


@pytest.mark.parametrize(
    ("where", "said"),
    [("build", "building it from its config"), ("close", "closing it (as every stage does")],
)
def test_a_plugin_that_never_returns_at_validate_is_named_not_waited_for(
    where: str, said: str, example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hub world's constructor connecting to a server that is not up (or waiting on a lock, input),
    or an aclose that never returns: pre-flight builds and closes each plugin as the stages do, with no
    bound, so `t3rl validate` and `t3rl plan` hung for good. Now each is bounded
    (components.BUILD_TIMEOUT_S) and the plugin is refused naming what hung and the fix."""
    from typer.testing import CliRunner

    from launch.checks.rules import components
    from launch.cli.app import app
    from tests.support.plugin_example import EXAMPLE_CONF

    module = f"stuck_{where}"
    waits, passes = "RELEASE.wait(30)", "pass"
    source = STUCK.format(
        module=module,
        build=waits if where == "build" else passes,
        close=waits if where == "close" else passes,
    )
    (tmp_path / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(components, "BUILD_TIMEOUT_S", 0.3)
    argv = ["validate", "--config-dir", str(EXAMPLE_CONF), "+experiment=counter", f"env.name={module}:Stuck"]
    try:
        done = CliRunner().invoke(app, argv, catch_exceptions=False)
    finally:
        sys.modules[module].RELEASE.set()  # the thread left waiting ends here
    text = " ".join(done.output.split())
    assert done.exit_code == 2, text
    assert f"error env.name: env plugin {module}:Stuck: {said}" in text, text
    assert "did not return within 0.3 s" in text and "connect lazily" in text, text
