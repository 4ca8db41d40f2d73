"""Adversarial plugin distributions (the hunt of docs/explanation/plugins.md): a name two installed
distributions register, and a plugin built for another t3rl, are refused where the config names them
(before any stage), naming the distributions and the fix; what is not such a case still resolves."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import pytest

from t3rl_core.chat.custom import TEMPLATE_GROUP, template_plugin
from t3rl_core.registries import REWARDS
from t3rl_core.registry import PluginError, Registry

# A second reward plugin beside the example's, so that two distributions can name different objects.
OTHER = """
from t3rl_counter.reward import ExactTarget, ExactTargetConfig


class OtherConfig(ExactTargetConfig):
    name: str = "other"


class Other(ExactTarget):
    Config = OtherConfig
"""
EXACT = "t3rl_counter.reward:ExactTarget"
T3RL = importlib.metadata.version("t3rl")


def distribution(root: Path, name: str, entries: str, requires: str = "") -> None:
    """A distribution's metadata as pip writes it under `root`: entry_points.txt (`entries`, with its
    group headers) and `requires` as Requires-Dist lines."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = "".join(f"Requires-Dist: {line}\n" for line in requires.splitlines() if line)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{lines}")
    (info / "entry_points.txt").write_text(entries)


@pytest.fixture
def site(example_on_path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_entry_points) -> Path:
    (tmp_path / "other_reward.py").write_text(OTHER)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def fresh() -> Registry:
    return Registry(REWARDS.kind, REWARDS.entries, group=REWARDS.group, base=REWARDS.base)


def test_a_name_two_distributions_register_is_refused_with_both(site: Path) -> None:
    """Which of the two importlib lists first follows sys.path: the run would have used either one."""
    distribution(site, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n")
    distribution(site, "plug_b", "[t3rl.rewards]\nexact = other_reward:Other\n")
    with pytest.raises(PluginError) as error:
        fresh().validate({"name": "exact"})
    message = str(error.value)
    assert "2 installed distributions register 'exact' in t3rl.rewards" in message
    assert f"{EXACT} (plug_a 1.0)" in message and "other_reward:Other (plug_b 1.0)" in message
    assert f"name={EXACT}" in error.value.fix and "name=other_reward:Other" in error.value.fix
    # The fix validates: each import path names its own plugin.
    assert type(fresh().validate({"name": "other_reward:Other"})).__name__ == "OtherConfig"


def test_one_plugin_listed_twice_is_one_plugin(site: Path) -> None:
    """The same target from two distributions' metadata (one package on two sys.path entries) is no
    ambiguity: the same object runs whichever is first."""
    distribution(site, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n")
    distribution(site, "plug_a_copy", f"[t3rl.rewards]\nexact = {EXACT}\n")
    assert type(fresh().validate({"name": "exact"})).__name__ == "ExactTargetConfig"


def test_a_chat_template_two_distributions_register_is_refused(site: Path) -> None:
    distribution(site, "plug_a", f"[{TEMPLATE_GROUP}]\nmine = t3rl_counter.chat:CHATML\n")
    distribution(site, "plug_b", f"[{TEMPLATE_GROUP}]\nmine = other_reward:Other\n")
    with pytest.raises(ValueError, match=r"'mine': 2 installed distributions register 'mine'"):
        template_plugin("mine")


@pytest.mark.parametrize(
    "requires",
    ["t3rl>=9999", f"t3rl<{T3RL}", "T3RL==0.0.1", 'numpy\nt3rl>=9999; python_version >= "3"'],
    ids=["newer", "older", "pinned-other", "with-marker"],
)
def test_a_plugin_built_for_another_t3rl_is_refused(site: Path, requires: str) -> None:
    distribution(site, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n", requires)
    with pytest.raises(PluginError) as error:
        fresh().validate({"name": "exact"})
    assert f"plug_a 1.0 requires {requires.splitlines()[-1].split(';')[0]}" in str(error.value)
    assert f"t3rl {T3RL} is installed" in str(error.value)
    assert f"made for t3rl {T3RL}" in error.value.fix


@pytest.mark.parametrize(
    "requires",
    ["", "t3rl", f"t3rl=={T3RL}", f"t3rl>={T3RL}", 't3rl>=9999; python_version < "3"', "t3rl-extras>=9999"],
    ids=["none", "any", "this", "at-least-this", "marker-not-here", "another-package"],
)
def test_a_plugin_this_t3rl_satisfies_resolves(site: Path, requires: str) -> None:
    distribution(site, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n", requires)
    assert type(fresh().validate({"name": "exact"})).__name__ == "ExactTargetConfig"


def test_t3rl_ls_lists_each_distribution_of_a_name_registered_twice(site: Path) -> None:
    distribution(site, "plug_a", f"[t3rl.rewards]\nexact = {EXACT}\n")
    distribution(site, "plug_b", "[t3rl.rewards]\nexact = other_reward:Other\n")
    rows = [(row.source, row.target) for row in fresh().listing() if row.name == "exact"]
    unusable = ", unusable by this name: 2 distributions register it"
    assert sorted(rows) == [
        (f"entry point t3rl.rewards (plug_a 1.0){unusable}", EXACT),
        (f"entry point t3rl.rewards (plug_b 1.0){unusable}", "other_reward:Other"),
    ]


HEAVY_AT_IMPORT = """
import {lib}
from t3rl_counter.reward import ExactTarget, ExactTargetConfig


class HeavyConfig(ExactTargetConfig):
    name: str = "{module}:Heavy"


class Heavy(ExactTarget):
    Config = HeavyConfig
"""
HEAVY_WHEN_BUILT = """
from t3rl_counter.reward import ExactTarget, ExactTargetConfig


class HeavyConfig(ExactTargetConfig):
    name: str = "{module}:Heavy"


class Heavy(ExactTarget):
    Config = HeavyConfig

    def __init__(self, config):
        import {lib}

        super().__init__(config)
"""


@pytest.mark.parametrize("source", [HEAVY_AT_IMPORT, HEAVY_WHEN_BUILT], ids=["at-import", "when-built"])
def test_a_plugin_that_loads_a_heavy_module_is_named(
    source: str, site: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """torch at the top of a plugin's module made every `t3rl validate` of its config import it (3.4 s
    CPU) without a word. A stand-in module plays torch here: the real one may already be loaded."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from t3rl_core import registry
    from tests.support.plugin_example import EXAMPLE_CONF

    tag = request.node.callspec.id.replace("-", "_")
    lib, module = f"stand_in_torch_{tag}", f"heavy_reward_{tag}"
    (site / f"{lib}.py").write_text("")
    (site / f"{module}.py").write_text(source.format(lib=lib, module=module))
    monkeypatch.setattr(registry, "HEAVY_MODULES", (lib,))
    monkeypatch.chdir(site)
    argv = [
        "validate",
        "--config-dir",
        str(EXAMPLE_CONF),
        "+experiment=counter",
        f"reward.name={module}:Heavy",
    ]
    result = CliRunner().invoke(app, argv, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert f"warning reward.name: reward plugin {module}:Heavy: importing or building it loaded {lib}" in (
        " ".join(result.output.split())
    )
    assert f"fix: import {lib} inside the function that uses it in {module}" in " ".join(
        result.output.split()
    )


@pytest.mark.parametrize("loader", [True, False], ids=["an-environment", "no-environment"])
def test_a_misspelt_hub_env_id_is_fixed_only_by_an_environment(
    loader: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`env.id=primeintellect/wordel` was told to use `keyword` (the standard library's module nearest by
    name), which the next validate refused: it defines no load_environment."""
    import importlib

    from pydantic import ValidationError

    from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
    from t3rl_core.fields import Corrected

    body = "def load_environment(**kwargs):\n    return None\n" if loader else "VALUE = 1\n"
    (tmp_path / "quokka_env.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    with pytest.raises(ValidationError) as error:
        VerifiersEnvConfig.model_validate({"id": "owner/quokka-enx"})
    cause = error.value.errors()[0]["ctx"]["error"]
    assert "no installed module 'quokka_enx'" in str(cause)
    assert (cause.value if isinstance(cause, Corrected) else None) == ("quokka_env" if loader else None)


@pytest.mark.parametrize("group", ["t3rl.reward", "t3rl.envs"], ids=["misspelt-group", "another-kind"])
def test_an_entry_point_in_another_group_is_named_where_it_is(site: Path, group: str) -> None:
    """`[project.entry-points."t3rl.reward"]` (one letter short) left the name unknown: the refusal
    listed the rewards there are, and never said where the plugin was registered."""
    from t3rl_core.registry import UnknownNameError

    distribution(site, "plug_a", f"[{group}]\nexact = {EXACT}\n")
    with pytest.raises(PluginError) as error:
        fresh().validate({"name": "exact"})
    assert f"it is registered in {group} (plug_a 1.0)" in str(error.value)
    assert f"name={EXACT}" in error.value.fix and '[project.entry-points."t3rl.rewards"]' in error.value.fix
    with pytest.raises(UnknownNameError):
        fresh().validate({"name": "exact_nowhere"})
