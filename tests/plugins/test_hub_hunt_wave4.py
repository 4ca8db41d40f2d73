"""Adversarial hub environments and plugins, hunt wave four (docs/explanation/plugins.md, "Hunt wave
four"). Each is answered by a declaration every world shares, not by a case of its own; in-process, on
one world played through the episode loop (the harness of wave three).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from t3rl_core import registry
from t3rl_core.registries import REWARDS
from t3rl_core.types import Action, Transition
from tests.plugins import test_hub_hunt_wave3 as wave3

# ----------------------------------------------------------------------------- a flag that is no flag


class _Flagged(wave3._Quick):
    """A world whose step ends the episode with `DONE` as its flag."""

    DONE: Any = True

    async def step(self, action: Action) -> Transition:
        return Transition(done=self.DONE)


@pytest.mark.parametrize("done", ["no", "yes", None, [], 1.0], ids=["no", "yes", "none", "list", "float"])
def test_a_done_that_is_no_flag_fails_the_world_not_the_episode_read(
    done: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`Transition(done="no")` (a status text, a value the world forgot to compare): read by its
    truthiness, the episode ended where the world meant it to go on (or went on for None), scored
    `completed`. Now the Transition's own check fails the episode as the world's, naming the field."""
    monkeypatch.setattr(_Flagged, "DONE", done)
    monkeypatch.setattr(wave3.World, "env_class", _Flagged)
    found = wave3._play(wave3._runner())
    assert found.startswith("failed: environment error: ValueError: Transition.done is "), found
    assert "not True or False: write done=bool(...)" in found, found


def test_a_numpy_flag_still_ends_the_episode(monkeypatch: pytest.MonkeyPatch) -> None:
    """No over-refusal: gymnasium's worlds return NumPy booleans."""
    numpy = pytest.importorskip("numpy")
    monkeypatch.setattr(_Flagged, "DONE", numpy.True_)
    monkeypatch.setattr(wave3.World, "env_class", _Flagged)
    assert wave3._play(wave3._runner()) == "completed: "


# ----------------------------------------------------------------------------- a bound that is no bound


@pytest.mark.parametrize(
    "bound", ["30", 0, -1, float("nan"), True], ids=["text", "zero", "negative", "nan", "bool"]
)
def test_a_call_bound_that_is_no_positive_number_is_refused_with_the_class(bound: Any) -> None:
    """`CALL_TIMEOUT_S = "30"` (read from a config file as text) raised a TypeError out of the episode
    loop, ending the eval; 0 or a negative failed every episode as if each call "held the event loop".
    Now the class is refused where it is defined (at the plugin's import: `t3rl validate`), as a
    mutable class attribute is; None and a positive number stay (no over-refusal)."""
    with pytest.raises(
        TypeError, match=r"CALL_TIMEOUT_S is .*: a call's bound is a positive number of seconds"
    ):
        type("Bounded", (wave3._Quick,), {"CALL_TIMEOUT_S": bound})
    for fine in (None, 0.5, 30):
        world = type("Bounded", (wave3._Quick,), {"CALL_TIMEOUT_S": fine})
        assert fine == world.CALL_TIMEOUT_S


# ---------------------------------------------------------------------- a plugin's package not installed


def test_a_plugin_package_below_the_working_directory_is_named_with_its_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl validate --config-dir examples/plugin/conf +experiment=counter` in the checkout, the example's
    package not installed. Was: `fix: install the package that provides t3rl_counter (pip install -e DIR)
    or add its directory to PYTHONPATH`, DIR left to guess. Now the directory below the working
    directory holding the package, as PYTHONPATH (and its project for pip); applied, the plugin imports.
    Nowhere below: the general fix, as before."""
    project = tmp_path / "plugins" / "hunt4proj"
    (project / "hunt4pkg").mkdir(parents=True)
    (project / "hunt4pkg" / "__init__.py").write_text("class R:\n    pass\n")
    (project / "pyproject.toml").write_text("[project]\nname = 'hunt4pkg'\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(registry.PluginError) as refused:
        REWARDS.entry("hunt4pkg:R")
    assert refused.value.fix == (
        f"{project}/hunt4pkg is not importable here: put its directory on the path, PYTHONPATH={project} "
        f"(or pip install -e {project}, its project)"
    ), refused.value.fix
    monkeypatch.syspath_prepend(str(project))  # the fix applied
    assert registry.load_object("hunt4pkg:R").__name__ == "R"
    monkeypatch.chdir(tmp_path / "plugins" / "hunt4proj" / "hunt4pkg")
    assert "pip install -e DIR" in registry._not_importable_fix("hunt4absent")
