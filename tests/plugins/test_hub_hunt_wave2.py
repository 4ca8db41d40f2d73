"""Adversarial hub environments and plugins, hunt wave two (docs/tutorials/hub-environments.md, "Hunt wave
two"): each answered before any GPU (when the plugin's module is imported, at `t3rl validate`) with the
smallest fix, or, for what only an episode shows, by that episode's failure naming the world and the fix.

Env's own methods are the one declaration of a world's contract (`t3rl_core.envs.base._contract_problem`):
a world whose `step` was a plain def, took no action, or yielded failed every episode with Python's
words ("can't be used in 'await' expression"); a mutable container on an Env class was one object for
every episode. What a plugin's import does to the process is `registry.import_effects`.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import ValidationError

from t3rl_core import registry
from t3rl_core.chat.tiny import shared_tokenizer_dir
from t3rl_core.config import EnvConfig, RuntimeConfig
from t3rl_core.engines.base import Generation
from t3rl_core.envs.base import Env
from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.fields import Corrected
from t3rl_core.registries import ENVS, REWARDS
from t3rl_core.registry import PluginError, Registry
from t3rl_core.rollout.runner import EpisodeRunner
from t3rl_core.types import Action, Transition
from tests.plugins.test_plugin_hunt import EXACT, distribution
from tests.rollout.fakes import FixedEngine

# A world's methods breaking Env's contract, each as its class body; the episode awaits reset and step.
BROKEN = {
    "a plain def step": ("def step(self, action):\n    return Transition(done=True)", "make it async"),
    "a step without the action": (
        "async def step(self):\n    return Transition(done=True)",
        "with 1 argument",
    ),
    "a reset taking a seed": ("async def reset(self, seed):\n    return Transition()", "with 0 argument"),
    "a plain def reset": ("def reset(self):\n    return Transition()", "make it async"),
    "a step that yields": (
        "async def step(self, action):\n    yield Transition(done=True)",
        "async generator",
    ),
    "an async outcome": ("async def outcome(self):\n    return {}", "make it a plain def"),
    "a plain def aclose": ("def aclose(self):\n    pass", "make it async"),
    "a list on the class": ("calls = []", "Broken.calls is a list on the class"),
    "a dict on the class": ("seen = {}", "set it in __init__ (self.seen = dict(...))"),
}
GOOD = """
async def reset(self, *extra):
    return Transition()

async def step(self, action, note=None):
    return Transition(done=True)

def outcome(self):
    return {"reward": 1.0, "metrics": {}}

stop = ("</x>",)
TOOLS = frozenset({"add"})
SHARED: ClassVar[dict] = {}  # declared shared on purpose
"""


def _define(body: str) -> type[Env]:
    namespace: dict[str, Any] = {}
    source = "class Broken(Env):\n" + textwrap.indent(body, "    ") + "\n"
    # a world under test, defined here
    exec(source, {"Env": Env, "Transition": Transition, "ClassVar": ClassVar}, namespace)
    return namespace["Broken"]


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_world_breaking_envs_contract_is_refused_when_defined(case: str) -> None:
    body, said = BROKEN[case]
    with pytest.raises(TypeError, match="Broken") as refused:
        _define(body)
    assert said in str(refused.value)


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            "async def __call__(self, inp):\n    return None",
            "Broken.__call__ does not keep Reward's contract",
        ),
        ("def score_async(self, inp):\n    return None", "t3rl awaits it: make it async"),
        (
            "def __call__(self):\n    return None",
            "with 1 argument(s) after self: write def __call__(self, inp)",
        ),
    ],
    ids=["async-call", "plain-score-async", "no-input"],
)
def test_a_reward_breaking_rewards_contract_is_refused_when_defined(body: str, said: str) -> None:
    """The same declaration for a reward plugin: an `async def __call__` gave each episode a coroutine."""
    from t3rl_core.rewards.base import Reward

    with pytest.raises(TypeError, match="Broken") as refused:
        exec("class Broken(Reward):\n" + textwrap.indent(body, "    ") + "\n", {"Reward": Reward}, {})
    assert said in str(refused.value)


def test_a_world_keeping_envs_contract_is_defined() -> None:
    assert _define(GOOD).stop == ("</x>",)


def test_a_plugin_world_breaking_the_contract_is_refused_at_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the registry, as `t3rl validate` names it: its import raises, before any stage."""
    (tmp_path / "sync_world.py").write_text(
        "from t3rl_core.config import EnvConfig\nfrom t3rl_core.envs.base import Env\n\n"
        "class SyncEnv(Env):\n    def step(self, action):\n        pass\n\n    def outcome(self):\n"
        "        return {}\n\n\nclass World:\n    Config = EnvConfig\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh = Registry(ENVS.kind, ENVS.entries, group=ENVS.group, base=ENVS.base)
    with pytest.raises(
        PluginError, match=r"importing sync_world raised TypeError: SyncEnv\.step .*make it async"
    ):
        fresh.validate({"name": "sync_world:World"})


# ----------------------------------------------------------------------------- what only episodes show


class _Config(EnvConfig):
    OUTCOME_FIELDS: ClassVar[frozenset[str]] = frozenset({"reward", "metrics"})
    name: str = f"{__name__}:OneWorld"


class _DictStep(Env):
    async def step(self, action: Action) -> Transition:
        return {"done": True}  # type: ignore[return-value]

    def outcome(self) -> dict[str, Any]:
        return {"reward": 1.0, "metrics": {}}


class _Done(_DictStep):
    async def step(self, action: Action) -> Transition:
        return Transition(done=True)


class OneWorld:
    """A factory handing out `made()`: a new Env per call, or (`keep`) one Env for every episode."""

    Config = _Config
    env_class: type[Env] = _Done
    keep = False

    def __init__(self, config: _Config) -> None:
        self.kept: Env | None = None

    def __call__(self, task: dict[str, Any], mode: str) -> Env:
        if not self.keep:
            return self.env_class()
        self.kept = self.kept or self.env_class()
        return self.kept

    async def aclose(self) -> None:
        pass


def _play(episodes: int) -> list[str]:
    runtime = RuntimeConfig.model_validate(
        {
            "env": {"name": f"{__name__}:OneWorld"},
            "reward": {"name": "env_score"},
            "chat": {"tokenizer": str(shared_tokenizer_dir("qwen3")), "chat_template": "qwen3"},
            "parsers": {"tool_call_parser": "qwen25"},
        }
    )
    runner = EpisodeRunner.from_runtime(runtime, FixedEngine([]))
    ids = runner.chat.encode('<tool_call>\n{"name": "add", "arguments": {"n": 3}}\n</tool_call>')
    found = []
    for _ in range(episodes):
        runner.engine = FixedEngine([Generation(ids, [-0.5] * len(ids), "stop")])
        task = {"prompt": [{"role": "user", "content": "Add 3."}], "metadata": {}}
        episode, _ = asyncio.run(runner.run(task, "eval"))
        found.append(f"{episode.status}: {episode.failure.message if episode.failure else ''}")
    return found


def test_a_step_answering_no_transition_fails_its_episode_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(OneWorld, "env_class", _DictStep)
    (found,) = _play(1)
    assert found.startswith("failed") and "_DictStep.step() returned dict, not a Transition" in found


def test_one_env_handed_to_two_episodes_fails_the_second(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its state would carry over (was: 'step() after the episode ended', the driver's bug)."""
    assert _play(2) == ["completed: ", "completed: "]
    monkeypatch.setattr(OneWorld, "keep", True)
    first, second = _play(2)
    assert first == "completed: " and second.startswith("failed")
    assert "returned a _Done it had returned for an earlier episode" in second


# ----------------------------------------------------------------------------- what a plugin's import does

EFFECTS = """
import os, threading
from t3rl_counter.reward import ExactTarget, ExactTargetConfig

os.makedirs("elsewhere", exist_ok=True)
os.chdir("elsewhere")
os.environ["T3RL_HUNT_SET_AT_IMPORT"] = "1"
threading.Thread(target=threading.Event().wait, args=(5,), daemon=True, name="poller").start()
open("../cache.db", "w").close()


class NoisyConfig(ExactTargetConfig):
    name: str = "noisy_reward:Noisy"


class Noisy(ExactTarget):
    Config = NoisyConfig
"""


def _rewards() -> Registry:
    return Registry(REWARDS.kind, REWARDS.entries, group=REWARDS.group, base=REWARDS.base)


def test_what_a_plugins_import_does_to_the_process_is_named_and_the_cwd_put_back(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "noisy_reward.py").write_text(EFFECTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("T3RL_HUNT_SET_AT_IMPORT", raising=False)
    fresh = _rewards()
    fresh.validate({"name": "noisy_reward:Noisy"})
    monkeypatch.delenv("T3RL_HUNT_SET_AT_IMPORT")
    effects = " | ".join(fresh.entry("noisy_reward:Noisy").effects)
    assert os.getcwd() == str(tmp_path)
    assert f"changed the working directory to {tmp_path / 'elsewhere'} (t3rl put it back)" in effects
    assert "set or removed environment variables T3RL_HUNT_SET_AT_IMPORT" in effects
    assert (
        "started threads poller" in effects
        and "wrote cache.db, elsewhere into the working directory" in effects
    )
    quiet = _rewards()
    quiet.validate({"name": EXACT})
    assert quiet.entry(EXACT).effects == ()


def test_the_import_effects_are_a_preflight_warning_with_the_fix(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from launch.checks.rules import components
    from t3rl_core.plugins import UsedPlugin

    used = UsedPlugin("reward", "reward", "noisy_reward:Noisy", "noisy_reward:Noisy")
    problem = components._effects(used, ("set or removed environment variables X",))
    assert problem.severity == "warning" and problem.key == "reward.name"
    assert "importing noisy_reward set or removed environment variables X" in problem.message
    assert "move that work out of the top of noisy_reward" in (problem.fix or "")


def test_a_plugin_module_calling_sys_exit_is_named_not_an_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`raise SystemExit(3)` at import ended `t3rl validate` with exit 3 and not a word."""
    (tmp_path / "script_reward.py").write_text("import sys\n\nsys.exit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(PluginError, match="importing script_reward raised SystemExit: 3"):
        _rewards().validate({"name": "script_reward:Anything"})


# ----------------------------------------------------------------------------- versions, ids, two hubs


def test_a_plugin_requiring_another_version_of_an_installed_distribution_is_refused(
    example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_entry_points: None
) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    distribution(
        tmp_path, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n", "pydantic<2\npytest; extra == 'test'\n"
    )
    with pytest.raises(PluginError) as refused:
        _rewards().validate({"name": "exact"})
    assert "plug_a 1.0 requires pydantic<2, and pydantic 2." in str(refused.value)
    assert "pip install 'pydantic<2'" in refused.value.fix
    registry.entry_points.cache_clear()
    (tmp_path / "plug_a-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: plug_a\nVersion: 1.0\n"
        "Requires-Dist: pydantic>=2\nRequires-Dist: not-here>=1\n"
    )
    assert type(_rewards().validate({"name": "exact"})).__name__ == "ExactTargetConfig"


def _environment(site: Path, monkeypatch: pytest.MonkeyPatch, *releases: str, requires: str = "") -> None:
    (site / "quokka_env.py").write_text("def load_environment(**kwargs):\n    return None\n")
    for release in releases:
        info = site / f"quokka_env-{release}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: quokka-env\nVersion: {release}\n{requires}"
        )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "quokka_env", raising=False)
    importlib.invalidate_caches()


@pytest.mark.parametrize("spelt", ["owner/QUOKKA_ENV", "owner/Quokka-Env", "owner/quokka.env"])
def test_an_env_id_spelt_with_other_case_or_separators_is_fixed_by_its_module(
    spelt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _environment(tmp_path, monkeypatch, "0.1.0")
    with pytest.raises(ValidationError) as refused:
        VerifiersEnvConfig.model_validate({"id": spelt})
    cause = refused.value.errors()[0]["ctx"]["error"]
    assert isinstance(cause, Corrected) and cause.value == "quokka_env"
    assert VerifiersEnvConfig.model_validate({"id": cause.value}).id == "quokka_env"  # the fix validates


def test_one_environment_module_claimed_by_two_installs_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The release recorded for it was the one the directory listed first; a pin of either one passed
    or failed by that order."""
    _environment(tmp_path, monkeypatch, "0.1.0", "0.2.0")
    for spelt in ("owner/quokka-env", "owner/quokka-env@0.1.0", "owner/quokka-env@0.2.0"):
        with pytest.raises(
            ValidationError,
            match=r"claimed by 2 installed distributions \(quokka_env-0\.1\.0, quokka_env-0\.2\.0\)",
        ):
            VerifiersEnvConfig.model_validate({"id": spelt})


def test_an_environment_requiring_another_version_of_any_installed_library_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _environment(
        tmp_path,
        monkeypatch,
        "0.1.0",
        requires="Requires-Dist: pydantic<2\nRequires-Dist: pytest; extra == 'dev'\n",
    )
    with pytest.raises(
        ValidationError,
        match=r"requires pydantic<2, but pydantic 2\.\S+ is installed: .*pip install 'pydantic<2'",
    ):
        VerifiersEnvConfig.model_validate({"id": "owner/quokka-env"})


def test_a_registry_name_spelt_with_other_case_or_separators_gets_its_spelling() -> None:
    """difflib compares text as written: `BFCL-MULTI-TURN` had no suggestion."""
    from t3rl_core.registry import UnknownNameError

    fresh = Registry(ENVS.kind, ENVS.entries, group=ENVS.group, base=ENVS.base)
    for spelt in ("BFCL-MULTI-TURN", "Bfcl.Multi.Turn"):
        with pytest.raises(UnknownNameError) as refused:
            fresh.validate({"name": spelt})
        assert refused.value.suggestion == "bfcl_multi_turn"


ASYNC_WORLD = """
from t3rl_counter.world import CounterConfig, CounterWorld


class AsyncConfig(CounterConfig):
    name: str = "{module}:Broken"


class Broken(CounterWorld):
    Config = AsyncConfig
{body}
"""
FACTORY_BODIES = {
    "async-call": (
        "    async def __call__(self, task, mode):\n        return super().__call__(task, mode)\n",
        "Broken.__call__ does not keep EnvFactory's contract: t3rl calls it without awaiting",
    ),
    "plain-aclose": (
        "    def aclose(self):\n        pass\n",
        "Broken.aclose does not keep EnvFactory's contract: t3rl awaits it: make it async",
    ),
}


@pytest.mark.parametrize("kind", list(FACTORY_BODIES))
def test_a_world_factory_breaking_its_contract_is_refused_at_validate(
    kind: str, example_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An `async def __call__` gave every episode a coroutine for its Env; a plain `def aclose` failed
    the eval at its end. Pre-flight builds the factory and asks `factory_problem`."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from tests.support.plugin_example import EXAMPLE_CONF

    body, said = FACTORY_BODIES[kind]
    module = f"broken_world_{kind.replace('-', '_')}"
    (tmp_path / f"{module}.py").write_text(ASYNC_WORLD.format(module=module, body=body))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    argv = ["validate", "--config-dir", str(EXAMPLE_CONF), "+experiment=counter", f"env.name={module}:Broken"]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert f"error env.name: env plugin {module}:Broken: {said}" in text
