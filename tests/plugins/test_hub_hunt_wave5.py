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


# ------------------------------------------------ a world changing its module's state across episodes

SHARING = """
import os
from typing import ClassVar
from t3rl_counter.world import CounterConfig, CounterEnv, CounterWorld

SEEN = []
TOOLS = {{"add": "adds"}}
COUNT = 0


class SharingConfig(CounterConfig):
    name: str = "{module}:Sharing"


class Leaky(CounterEnv):
{body}


class Sharing(CounterWorld):
    Config = SharingConfig
"""
# What a method of the world does to its module's state: (its header and first lines, its return).
_STEP, _RESET = "async def step(self, action):", "async def reset(self):"
_BODIES = {
    "appends": ([_STEP, "    SEEN.append(action)"], "await super().step(action)"),
    "rebinds": (["def outcome(self):", "    global COUNT", "    COUNT += 1"], "super().outcome()"),
    "item-set": ([_RESET, "    TOOLS['sub'] = 'subtracts'"], "await super().reset()"),
    "environ": ([_RESET, "    os.environ.setdefault('X', '1')"], "await super().reset()"),
    "declared": (
        ["SHARED_STATE: ClassVar = ('SEEN',)", _STEP, "    SEEN.append(action)"],
        "await super().step(action)",
    ),
    "reads": ([_RESET, "    assert TOOLS['add']"], "await super().reset()"),
}
BODIES = {
    kind: "".join(f"    {line}\n" for line in [*lines, f"    return {back}"])
    for kind, (lines, back) in _BODIES.items()
}


def _sharing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> list[str]:
    """What pre-flight says of a world whose method does `kind` to its module's state."""
    import importlib

    from launch.checks.rules import components
    from t3rl_core.plugins import UsedPlugin

    module = f"sharing_{kind.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(SHARING.format(module=module, body=BODIES[kind]))
    monkeypatch.syspath_prepend(str(tmp_path))
    factory = importlib.import_module(module).Sharing(None)
    used = UsedPlugin("env", "env", f"{module}:Sharing", module)
    return [f"{p.message} | {p.fix}" for p in components._module_state_shared(used, factory)]


@pytest.mark.parametrize(
    ("kind", "changed"),
    [("appends", "SEEN"), ("rebinds", "COUNT"), ("item-set", "TOOLS"), ("environ", "os.environ")],
)
def test_a_world_changing_its_module_state_is_refused_unless_declared(
    kind: str, changed: str, example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`SEEN.append(action)` in step, `global COUNT` in outcome, `TOOLS[k] = v` or os.environ set in
    reset: one object for every concurrent episode of the process, unsaid (waves three and four's
    leftover). Now pre-flight reads each plugin world's methods and names the global they change, with
    the declaration that makes sharing it deliberate."""
    (said,) = _sharing(tmp_path, monkeypatch, kind)
    assert f"changes the module's {changed} (sharing_" in said, said
    assert f"SHARED_STATE: ClassVar = ('{changed}',)" in said, said


@pytest.mark.parametrize("kind", ["declared", "reads"])
def test_a_declared_or_read_only_module_state_stays_valid(
    kind: str, example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No over-refusal: state declared shared (SHARED_STATE), and a module's constant only read."""
    assert _sharing(tmp_path, monkeypatch, kind) == []


def test_validate_names_a_world_changing_its_module_state(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same, as `t3rl validate` of the example's counter says it (pre-flight builds the plugin)."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from tests.support.plugin_example import EXAMPLE_CONF

    module = "sharing_cli"
    (tmp_path / f"{module}.py").write_text(SHARING.format(module=module, body=BODIES["appends"]))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    argv = [
        "validate",
        "--config-dir",
        str(EXAMPLE_CONF),
        "+experiment=counter",
        f"env.name={module}:Sharing",
    ]
    done = CliRunner().invoke(app, argv, catch_exceptions=False)
    text = " ".join(done.output.split())
    assert (
        done.exit_code == 2 and f"error env.name: env plugin {module}:Sharing: Leaky.step changes" in text
    ), text


def test_a_chat_template_entry_point_named_like_a_shipped_one_is_refused(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`[project.entry-points."t3rl.chat_templates"] qwen3 = my_pkg.chat:MINE`: t3rl's own qwen3.jinja
    was rendered, silently, the plugin never was (the same kind for templates as for a registry's
    built-in). Now `t3rl validate` of a config naming qwen3 refuses it with both origins; the plugin's
    import path validates past it."""
    from typer.testing import CliRunner

    from launch.cli.app import app

    _distribution(site, "shadow_chat", "[t3rl.chat_templates]\nqwen3 = t3rl_counter.chat:CHATML\n")
    monkeypatch.chdir(site)
    done = CliRunner().invoke(app, ["validate", "+experiment=quickstart"], catch_exceptions=False)
    text = " ".join(done.output.split())
    assert done.exit_code == 2, text
    assert "error model.chat.chat_template: 'qwen3' is both t3rl's shipped chat template" in text, text
    assert "t3rl_counter.chat:CHATML (shadow_chat 1.0)" in text, text
    assert "model.chat.chat_template=t3rl_counter.chat:CHATML" in text, text
