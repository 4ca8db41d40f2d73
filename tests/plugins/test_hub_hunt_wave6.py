"""Adversarial hub environments and plugins, hunt wave six (docs/explanation/plugins.md, "Hunt wave
six"). Each is answered by a declaration every world or registry shares; in-process. Each test fails
with its declaration turned off."""

from __future__ import annotations

import asyncio
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launch.checks.rules import components
from launch.checks.rules.module_state import world_changes
from t3rl_core.engines.base import Generation
from t3rl_core.envs.base import Env
from t3rl_core.plugins import UsedPlugin
from t3rl_core.types import Action, Transition
from tests.plugins import test_hub_hunt_wave3 as wave3
from tests.rollout.fakes import FixedEngine

# ------------------------------------------------ state the module holds, changed through any spelling

HEAD = """
import collections as m
import os as o
import types
from typing import ClassVar

SEEN = []
TOOLS = {"add": "adds", "nested": {}}
STATE = types.SimpleNamespace(n=0)
NAME = "counter"
_MISSING = object()


class Leaky:
"""
# What a method of the world does, and what it changes (None: nothing every episode shares).
CHANGES = {
    "module alias": ("def step(self, action):\n    m.x = action", "m.x"),
    "module alias, augmented": ("def step(self, action):\n    m.n += 1", "m.n"),
    "environ via alias": ("def reset(self):\n    o.environ.setdefault('X', '1')", "o.environ"),
    "local alias": ("def step(self, action):\n    seen = SEEN\n    seen.append(action)", "SEEN"),
    "in-place operator on an alias": (
        "def step(self, action):\n    seen = SEEN\n    seen += [action]",
        "SEEN",
    ),
    "class attribute via type(self)": ("def step(self, action):\n    type(self).calls += 1", "Leaky.calls"),
    "class attribute via __class__": ("def step(self, action):\n    self.__class__.calls = 0", "Leaky.calls"),
    "class attribute by name": ("def outcome(self):\n    Leaky.calls = 1", "Leaky.calls"),
    "class attribute via cls": ("@classmethod\ndef bump(cls):\n    cls.calls += 1", "Leaky.calls"),
    "setattr on an alias": ("def step(self, action):\n    setattr(m, 'x', action)", "m"),
    "mutable default": ("def step(self, action, seen=[]):\n    seen.append(action)", "seen"),
    "item of a module dict": ("def reset(self):\n    TOOLS['nested']['k'] = 1", "TOOLS[…]"),
    "module-level instance": ("def outcome(self):\n    STATE.n += 1", "STATE.n"),
    "attribute of self bound to it": (
        "def __init__(self):\n    self.seen = SEEN\ndef step(self, action):\n    self.seen.append(action)",
        "SEEN",
    ),
    "in a comprehension": ("def step(self, action):\n    [SEEN.append(a) for a in action]", "SEEN"),
    "in a nested function": (
        "def step(self, action):\n    def keep():\n        TOOLS.update(a=action)\n    keep()",
        "TOOLS",
    ),
    # No over-refusal: copies, per-episode state, scalars, sentinels and reads.
    "a copy": ("def step(self, action):\n    seen = list(SEEN)\n    seen.append(action)", None),
    "per-episode state": (
        "def __init__(self):\n    self.seen = []\ndef step(self, a):\n    self.seen.append(a)",
        None,
    ),
    "a string built": ("def step(self, action):\n    name = NAME\n    name += '!'\n    return name", None),
    "an item's number": ("def step(self, action):\n    n = TOOLS['nested']\n    return len(n) + 1", None),
    "a sentinel default": (  # as dataclasses' __init__ takes a field's default factory
        "def __init__(self, seen=_MISSING):\n    self.seen = [] if seen is _MISSING else seen\n"
        "def step(self, action):\n    self.seen.append(action)",
        None,
    ),
    "a read of the class": ("def step(self, action):\n    return type(self).__name__ + Leaky.__name__", None),
    "set at class definition": ("def __init_subclass__(cls):\n    cls.kinds = []", None),
}


def _world(kind: str, body: str | None = None) -> type:
    """The class `Leaky` of a fresh module whose one method does `kind`."""
    name = f"hunt6_{abs(hash(kind))}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    source = HEAD + textwrap.indent(body if body is not None else CHANGES[kind][0], "    ")
    exec(compile(source, f"{name}.py", "exec"), module.__dict__)
    return module.Leaky


@pytest.fixture(scope="module", autouse=True)
def _forget_modules() -> Iterator[None]:
    yield
    for name in [n for n in sys.modules if n.startswith("hunt6_")]:
        del sys.modules[name]


@pytest.mark.parametrize("kind", list(CHANGES))
def test_module_state_is_read_by_what_the_module_holds_not_its_spelling(kind: str) -> None:
    """Wave five read `SEEN.append(…)` spelt on the global's own name only; an alias of a module
    (`m.x = …`), of a container (`seen = SEEN`), a class attribute, a mutable default, an item of a
    module's dict, a module-level instance or an attribute of self bound to it changed what every
    episode shares unsaid. Now each method's bytecode is played over what its values are
    (launch.checks.rules.module_state); copies, per-episode state and scalars stay valid."""
    expected = CHANGES[kind][1]
    labels = [change.label for change in world_changes(_world(kind))]
    assert labels == ([expected] if expected else []), labels


WORLD_MODULE = """
from typing import ClassVar
from t3rl_core.envs.base import Env, EnvFactory
import collections as m

SEEN = []


class Leaky(Env):
    SHARED_STATE: ClassVar = {declared}

    async def reset(self):
        m.x = 1
        return None

    async def step(self, action, seen=[]):
        seen.append(action)
        return None

    def outcome(self):
        return {{}}


class Factory(EnvFactory):
    def __call__(self, task, mode):
        return Leaky()
"""


def _said(declared: tuple[str, ...], source: str = WORLD_MODULE, prefix: str = "hunt6_world") -> list[str]:
    """What pre-flight says of the module `source` (its `Leaky` world declaring `declared`)."""
    name = f"{prefix}_{len(declared)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source.format(declared=declared), f"{name}.py", "exec"), module.__dict__)
    assert issubclass(module.Leaky, Env)
    used = UsedPlugin(key="env", kind="env", name=f"{name}:Factory", target=f"{name}:Factory")
    factory = object.__new__(module.Factory)
    return [f"{p.message} | {p.fix}" for p in components._module_state_shared(used, factory)]


def test_pre_flight_names_the_alias_and_the_default_with_their_fixes() -> None:
    """What pre-flight says: the module's state by the name the world reached it by, declarable (and a
    declaration of the module covers its attributes); a mutable default by its parameter, with the
    fix that gives each call its own (no SHARED_STATE makes a default per-episode)."""
    module_change, default_change = _said(())
    assert "Leaky.reset changes the module's m.x (hunt6_world_0)" in module_change, module_change
    assert "SHARED_STATE: ClassVar = ('m.x',)" in module_change, module_change
    assert "Leaky.step changes its own default seen" in default_change, default_change
    assert "seen = [] if seen is None else seen" in default_change, default_change
    (left,) = _said(("m",))
    assert "default seen" in left, left


# ------------------------------------------------ a world's Transition.info: recorded, JSON data


class _Noting(wave3._Quick):
    """A world whose reset and step each return `INFO` as their note."""

    INFO: Any = None

    async def reset(self) -> Transition:
        return Transition(info={"seed": 3})

    async def step(self, action: Action) -> Transition:
        return Transition(done=True, info=self.INFO)


def _episode(info: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(_Noting, "INFO", info)
    monkeypatch.setattr(wave3.World, "env_class", _Noting)
    runner = wave3._runner()
    ids = runner.chat.encode('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "stop")])
    task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}
    episode, _ = asyncio.run(runner.run(task, "eval"))
    return episode


def test_a_worlds_info_is_kept_per_call_in_the_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    """`Transition.info` was read by nothing (ReTool's sandbox status per call, BFCL's turn score never
    reached a record: wave five's leftover). Now the episode keeps each env call's info in order, reset's
    first, as `step_info`, which the eval's records and slime's sample metadata write."""
    episode = _episode({"status": "ok", "took_s": 0.25, "calls": [1, 2]}, monkeypatch)
    assert episode.status == "completed", episode.error
    assert episode.step_info == [{"seed": 3}, {"status": "ok", "took_s": 0.25, "calls": [1, 2]}]


@pytest.mark.parametrize(
    ("info", "said"),
    [
        ({1: "x"}, "Transition.info has a key of type int"),
        ({"seen": {1, 2}}, "Transition.info['seen'] is of type set"),
        ({"took": float("nan")}, "Transition.info['took'] is nan"),
        ("sandbox ok", "Transition.info is a str, not a mapping"),
    ],
    ids=["int-key", "set", "nan", "text"],
)
def test_an_info_no_record_holds_is_the_worlds_failure(
    info: Any, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An info no JSON record holds fails the episode as the world's (`env/InvalidInfo`), named, as an
    outcome that is no JSON data does; before, nothing read it, so nothing said."""
    episode = _episode(info, monkeypatch)
    assert episode.status == "failed" and episode.failure.kind == "env", episode.error
    assert episode.failure.error_type == "InvalidInfo" and said in episode.error, episode.error


# ------------------------------------------------ a heavy import, read by what it loads, not by name


def _bulky(root: Path, name: str, modules: int) -> None:
    """A package of `modules` modules (itself and the submodules its __init__ imports, as a library's
    import loads them)."""
    (root / name).mkdir()
    (root / name / "__init__.py").write_text("".join(f"from . import m{i}\n" for i in range(modules - 1)))
    for i in range(modules - 1):
        (root / name / f"m{i}.py").write_text("")


def test_a_plugin_loading_a_package_of_many_modules_is_named_whatever_its_name(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin reward importing pandas (294 modules, ~0.4 s CPU), openai (487) or litellm (748, ~2.6 s)
    at its top made every `t3rl validate` and `t3rl plan` of its config pay that import unsaid: only
    torch, transformers, ray, sglang and wandb were named (a list). Now a package the plugin's import or
    build loads registry.HEAVY_MODULE_COUNT modules of is named the same way; a small one (numpy's 84,
    here one below the count) is not. The count is lowered to 6 here to keep the packages small."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from t3rl_core import registry
    from tests.plugins.test_plugin_hunt import HEAVY_AT_IMPORT
    from tests.support.plugin_example import EXAMPLE_CONF

    monkeypatch.setattr(registry, "HEAVY_MODULE_COUNT", 6)
    _bulky(tmp_path, "bulky_lib", 6)
    _bulky(tmp_path, "small_lib", 5)
    (tmp_path / "bulky_reward.py").write_text(
        "import small_lib\n" + HEAVY_AT_IMPORT.format(lib="bulky_lib", module="bulky_reward")
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    argv = [
        "validate",
        "--config-dir",
        str(EXAMPLE_CONF),
        "+experiment=counter",
        "reward.name=bulky_reward:Heavy",
    ]
    done = CliRunner().invoke(app, argv, catch_exceptions=False)
    text = " ".join(done.output.split())
    assert done.exit_code == 0, text
    assert "reward plugin bulky_reward:Heavy: importing or building it loaded bulky_lib, which" in text, text
    assert "small_lib" not in text, text
