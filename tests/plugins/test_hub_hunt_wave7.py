"""Adversarial hub environments and plugins, hunt wave seven (docs/explanation/plugins.md, "Hunt wave
seven"). Each is answered by a declaration every world or registry shares; in-process. Each test fails
with its declaration turned off."""

from __future__ import annotations

import asyncio
import importlib
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from launch.checks.rules.module_state import ITEM_READERS, UNREAD, Change, world_changes
from t3rl_core.engines.base import Generation
from t3rl_core.eval.runner import _success
from t3rl_core.rollout.verdict_fields import VERDICT_FIELDS
from t3rl_core.shadowed import shadows
from tests.plugins import test_hub_hunt_wave3 as wave3
from tests.plugins import test_hub_hunt_wave6 as wave6
from tests.plugins.test_hub_hunt_wave6 import HEAD
from tests.rollout.fakes import FixedEngine
from tests.support.plugin_example import EXAMPLE, EXAMPLE_CONF

# ------------------------------------------------ module state through a call's result, globals(), exec

# What a method of the world does, and what it changes (None: nothing every episode shares).
CHANGES = {
    "a getter's result": (
        "def step(self, action):\n    TOOLS.get('nested').update(a=action)",
        "TOOLS.get(…)",
    ),
    "a popped item": ("def step(self, action):\n    TOOLS.pop('nested')['k'] = 1", "TOOLS.pop(…)"),
    "getattr on a module alias": ("def step(self, action):\n    getattr(m, 'deque').x = 1", "m.….x"),
    "globals() item stored": ("def step(self, action):\n    globals()['COUNT'] = 1", "globals()"),
    "globals() item changed": (
        "def step(self, action):\n    globals()['SEEN'].append(action)",
        "globals()[…]",
    ),
    "globals().update": ("def step(self, action):\n    globals().update(X=1)", "globals()"),
    "vars of a module alias": ("def step(self, action):\n    vars(m)['x'] = 1", "m.__dict__"),
    "exec": ("def step(self, action):\n    exec('SEEN.append(1)')", "exec(…)"),
    "eval": ("def reset(self):\n    eval('SEEN.clear()')", "eval(…)"),
    "a module imported in the method": (
        "def step(self, action):\n    import sys\n    sys.modules[__name__].X = 1",
        "sys.modules[…].X",
    ),
    "an item a loop takes out": (
        "def step(self, action):\n    for _, v in TOOLS.items():\n        v['k'] = action",
        "TOOLS.items(…)[…][…]",
    ),
    "next of an iterator": (
        "def step(self, action):\n    next(iter(TOOLS.values()))['k'] = 1",
        "TOOLS.values(…)[…]",
    ),
    "a helper given the module's list": ("def step(self, action):\n    _push(SEEN, action)", "SEEN"),
    "a helper given it by keyword": ("def step(self, action):\n    _push(a=action, seen=SEEN)", "SEEN"),
    "a helper's own global": ("def outcome(self):\n    _count()", "COUNT"),
    "a method on self given it": (
        "def _keep(self, seen, a):\n    seen.append(a)\n"
        "def step(self, action):\n    self._keep(SEEN, action)",
        "SEEN",
    ),
    # No over-refusal: copies, new objects a module's function makes, text read.
    "a helper given a copy": ("def step(self, action):\n    _push(list(SEEN), action)", None),
    "a helper given per-episode state": (
        "def __init__(self):\n    self.seen = []\ndef step(self, a):\n    _push(self.seen, a)",
        None,
    ),
    "a copy's item": ("def step(self, action):\n    x = dict(TOOLS.get('nested'))\n    x['a'] = 1", None),
    "a copy": ("def step(self, action):\n    x = SEEN.copy()\n    x.append(action)", None),
    "a new object from a module": ("def step(self, action):\n    d = m.deque()\n    d.append(action)", None),
    "a text read": ("def step(self, action):\n    return TOOLS.get('add').upper()", None),
    "a module imported and read": (
        "def step(self, action):\n    import json\n    return json.dumps(action)",
        None,
    ),
    "keys listed": ("def step(self, action):\n    return sorted(k for k in TOOLS.keys())", None),
}


# Module-level helpers a world's method may call (followed with the caller's values bound).
HELPERS = """
COUNT = 0


def _push(seen, a):
    seen.append(a)


def _count():
    global COUNT
    COUNT += 1

"""


def _world(kind: str, body: str) -> type:
    """The class `Leaky` of a fresh module whose one method does `body`."""
    name = f"hunt7_{abs(hash(kind))}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    head = HEAD.replace("\nclass Leaky:", HELPERS + "\nclass Leaky:")
    exec(compile(head + textwrap.indent(body, "    "), f"{name}.py", "exec"), module.__dict__)
    return module.Leaky


@pytest.fixture(scope="module", autouse=True)
def _forget_modules() -> Iterator[None]:
    yield
    for name in [n for n in sys.modules if n.startswith("hunt7_")]:
        del sys.modules[name]


@pytest.mark.parametrize("kind", list(CHANGES))
def test_state_reached_through_a_calls_result_globals_or_exec_is_read(kind: str) -> None:
    """Wave six's leftover: `TOOLS.get(k).update(…)`, `getattr(m, name).x = …`, `globals()[…] = …`,
    `vars(m)[…]`, a module a method imports, what a loop takes out of a held dict, and code run by exec or
    eval changed what every episode shares unsaid (a call's result was no state). Now a call reading what
    it is called on (module_state.ITEM_READERS, the builtins getattr, vars, globals, next, iter) gives the
    held object's taint, and exec/eval are a change that cannot be read; copies and new objects stay
    valid."""
    body, expected = CHANGES[kind]
    labels = [change.label for change in world_changes(_world(kind, body))]
    assert labels[-1:] == ([expected] if expected else []), labels


@pytest.mark.parametrize("method", sorted(ITEM_READERS))
def test_every_declared_reader_gives_what_it_reads(method: str) -> None:
    """Property over the declaration: a change to the result of any ITEM_READERS method of a module-level
    container is the container's (declared by its name); the same change to a copy's is nothing."""
    read = world_changes(_world(method, f"def step(self, action):\n    TOOLS.{method}().x = 1"))
    assert [change.declared_as for change in read][-1:] == ["TOOLS"], read
    copied = world_changes(
        _world(f"copy {method}", f"def step(self, action):\n    TOOLS.copy().{method}().x = 1")
    )
    assert copied == [], copied


@pytest.mark.parametrize(
    ("label", "declared"),
    [
        ("TOOLS.get(…)", "TOOLS"),
        ("TOOLS.get(…).x", "TOOLS"),
        ("TOOLS[…]", "TOOLS"),
        ("m.….x", "m"),
        ("m.x", "m.x"),
        ("sys.modules[…].X", "sys.modules"),
        ("globals()[…]", "globals()"),
        ("exec(…)", "exec(…)"),
    ],
)
def test_a_change_is_declared_by_what_holds_it(label: str, declared: str) -> None:
    assert Change("step", label, default=False).declared_as == declared


WORLD_MODULE = """
from typing import ClassVar
from t3rl_core.envs.base import Env, EnvFactory

TOOLS = {{"nested": {{}}}}


class Leaky(Env):
    SHARED_STATE: ClassVar = {declared}

    async def reset(self):
        TOOLS.get("nested").update(k=1)
        return None

    async def step(self, action):
        exec("TOOLS.clear()")
        return None

    def outcome(self):
        return {{}}


class Factory(EnvFactory):
    def __call__(self, task, mode):
        return Leaky()
"""


def _said(declared: tuple[str, ...]) -> list[str]:
    return wave6._said(declared, WORLD_MODULE, prefix="hunt7_world")


def test_pre_flight_names_the_held_object_and_refuses_code_it_cannot_read() -> None:
    """What pre-flight says: a getter's result by the container it reads (declarable by its name), and
    exec as code it cannot read, with the fix that makes it readable; each declaration quiets its own."""
    got, ran = _said(())
    assert "Leaky.reset changes the module's TOOLS (through TOOLS.get(…))" in got, got
    assert "SHARED_STATE: ClassVar = ('TOOLS',)" in got, got
    assert "Leaky.step runs code through exec(…), which pre-flight cannot read" in ran, ran
    assert "write that code in Leaky.step itself" in ran, ran
    (left,) = _said(("TOOLS",))
    assert "exec(…)" in left, left
    assert _said(("TOOLS", *sorted(UNREAD))) == []


# ------------------------------------------------ a plugin's module named like Python's or a library's

PLUGIN_REWARD = """
from t3rl_counter.reward import ExactTarget, ExactTargetConfig


class HConfig(ExactTargetConfig):
    name: str = "{module}:H"


class H(ExactTarget):
    Config = HConfig
"""


def _raised_in(file: Path) -> BaseException:
    """An error whose traceback ran `file`'s code (as a failed import's leaves it)."""
    code = compile(
        "raise ImportError('cannot import name Field (most likely due to a circular import)')",
        str(file),
        "exec",
    )
    try:
        exec(code, {})
    except ImportError as error:
        return error
    raise AssertionError("unreachable")


@pytest.mark.parametrize("name", ["json", "secrets", "logging", "yaml", "pydantic"])
def test_a_module_named_like_pythons_or_a_librarys_is_named_with_its_fix(name: str, tmp_path: Path) -> None:
    """Property over the declaration (shadowed.INSTALL_PATHS, sys.stdlib_module_names, site-packages):
    a file on the path named like a standard module or an installed library's, loaded or run in the
    failure's traceback, is named; the same name loaded from where it is installed, and a name of
    neither, are not."""
    file = tmp_path / f"{name}.py"
    file.write_text("")
    module = types.ModuleType(name)
    module.__file__ = str(file)
    (loaded,) = shadows(modules={name: module}, path=[])
    assert loaded.name == name and loaded.file == file, loaded
    (raised,) = shadows(modules={}, error=_raised_in(file), path=[str(tmp_path)])
    assert raised == loaded
    assert shadows(modules={name: importlib.import_module(name)}, path=[]) == []
    mine = tmp_path / f"my_{name}.py"
    mine.write_text("")
    assert shadows(modules={}, error=_raised_in(mine), path=[str(tmp_path)]) == []


def test_validate_with_a_plugins_json_py_on_the_path_names_it_not_a_bug_in_t3rl(tmp_path: Path) -> None:
    """A plugin reward in `json.py` (or `secrets.py`, `yaml.py`) in a directory on PYTHONPATH, as wave
    four's fix puts a plugin's directory: every `t3rl validate` of any config failed in a library's
    circular import, `t3rl failed unexpectedly: AttributeError: partially initialized module 'json' …
    This is a bug in t3rl`. Now the file is named as what Python loads for `json`, with the rename."""
    (tmp_path / "json.py").write_text(PLUGIN_REWARD.format(module="json"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(EXAMPLE)])}
    argv = [str(Path(sys.executable).with_name("t3rl")), "validate", "--config-dir", str(EXAMPLE_CONF)]
    done = subprocess.run(
        [*argv, "+experiment=counter"], env=env, capture_output=True, text=True, timeout=120
    )
    said = " ".join(done.stderr.split())
    assert done.returncode == 1 and "bug in t3rl" not in said, said
    assert (
        f"{tmp_path / 'json.py'} is loaded as the module 'json', the name of Python's standard module" in said
    )
    assert "fix: rename json.py (e.g. my_json)" in said, said


# ------------------------------------------------ a world's metric named like a verdict, of another scale


class _Scoring(wave3._Quick):
    """A world whose outcome is `OUT`."""

    OUT: Any = None

    def outcome(self) -> dict[str, Any]:
        return self.OUT


def _scored(outcome: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    monkeypatch.setattr(_Scoring, "OUT", outcome)
    monkeypatch.setattr(wave3.World, "env_class", _Scoring)
    runner = wave3._runner()
    ids = runner.chat.encode('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
    runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "stop")])
    task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}
    return asyncio.run(runner.run(task, "eval"))


@pytest.mark.parametrize("name", VERDICT_FIELDS)
@pytest.mark.parametrize("value", [5.0, -1, 1.5, 100])
def test_a_worlds_metric_named_like_a_verdict_is_a_share_or_the_episodes_failure(
    name: str, value: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A world's `metrics: {"accuracy": 5}` (a count, a percent) passed env_score through to the eval,
    whose success reads a reward metric `accuracy` before the outcome's: a reward of 0 was a success,
    `progress: 7` a mean progress past 1. Now a reward metric named in VERDICT_FIELDS is a share in
    [0, 1] where every reward result is checked (rewards.base.checked), else the reward's failure,
    named; a share, a check (True) and another metric of any size stay as they were."""
    episode, reward = _scored({"reward": 0.0, "metrics": {name: value}}, monkeypatch)
    assert episode.failure is not None and f"gave the metric {name!r}" in (episode.error or ""), episode.error
    assert name not in reward.metrics and not _success(reward.metrics, episode.outcome, reward.value)
    for fine in (0.5, True):
        episode, reward = _scored({"reward": 0.0, "metrics": {name: fine, "turns": value}}, monkeypatch)
        assert episode.failure is None and reward.metrics == {name: float(fine), "turns": value}, (
            episode.error
        )


def test_a_plugin_named_like_a_module_python_loaded_first_names_that_module_and_the_rename(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the same kind: a plugin's `os.py` (a name Python imports before any plugin) on
    the path, named `reward.name=os:H`: refused as `os has no H`, fix `check the name after ':'`, though
    the file defines H: Python's os was read, never the file. Now the file of that name is named beside
    the module Python loads, with the rename (which validates)."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from t3rl_core.shadowed import namesake

    (tmp_path / "os.py").write_text(PLUGIN_REWARD.format(module="os"))
    (tmp_path / "my_os.py").write_text(PLUGIN_REWARD.format(module="my_os"))
    monkeypatch.syspath_prepend(str(tmp_path))
    assert namesake("os") == tmp_path / "os.py" and namesake("my_os") is None
    argv = ["validate", "--config-dir", str(EXAMPLE_CONF), "+experiment=counter"]
    done = CliRunner().invoke(app, [*argv, "reward.name=os:H"], catch_exceptions=False)
    text = " ".join(done.output.split())
    assert done.exit_code == 2, text
    assert f"not from {tmp_path / 'os.py'}, which has that name too" in text, text
    assert "rename os.py (e.g. my_os) and name it so: my_os:H" in text, text
    fixed = CliRunner().invoke(app, [*argv, "reward.name=my_os:H"], catch_exceptions=False)
    assert fixed.exit_code == 0, fixed.output
