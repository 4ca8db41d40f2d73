"""The behaviour t3rl relies on from Hydra's private API (launch/config/hydra_internals.py), pinned: an
upgrade of hydra-core that changes any of it fails here, naming the function to port."""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

import pytest
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf

from launch.config import hydra_internals as internals
from launch.config.search_path import PACKAGE_SOURCE


def parse(*overrides: str) -> list:
    return OverridesParser.create().parse_overrides(list(overrides))


@pytest.fixture(scope="module")
def loader():
    return internals.new_loader(
        [("hydra", "pkg://hydra.conf"), ("main", PACKAGE_SOURCE), ("schema", "structured://")]
    )


def test_the_installed_hydra_is_in_the_tested_range() -> None:
    major, minor = (int(part) for part in version("hydra-core").split(".")[:2])
    assert (major, minor) == (1, 3), "hydra_internals.py was written against hydra-core 1.3: port it first"


def test_groups_and_options_on_the_search_path(loader) -> None:
    groups = internals.config_groups(loader)
    assert {"model", "hardware", "experiment", "reward", "env"} <= set(groups)
    assert "qwen3_8b" in internals.group_options(loader, "model")
    assert internals.group_exists(loader, "model")
    assert not internals.group_exists(loader, "no_such_group")
    assert internals.load_config_file(loader, "model/qwen3_8b") is not None
    assert internals.load_config_file(loader, "model/no_such_model") is None


def test_defaults_list_order_and_who_chose_what(loader) -> None:
    overrides = parse("experiment=stage1_bfcl", "model=qwen3_8b")
    repo, defaults = internals.defaults_list(
        loader, "config", overrides, with_hydra=False, command_line=overrides
    )
    paths = [d.config_path for d in defaults.defaults]
    # The primary config comes after its groups (`_self_` last), the experiment after the primary.
    assert paths.index("model/qwen3_8b") < paths.index("config") < paths.index("experiment/stage1_bfcl")
    assert defaults.overrides.known_choices["model"] == "qwen3_8b"
    # A group chosen inside the experiment file names that file as its container.
    chosen = {k: m.containing_config_path for k, m in defaults.overrides.override_metadata.items()}
    assert chosen["hardware"] == "experiment/stage1_bfcl"
    assert chosen["model"] is None  # the command line's choice
    model = next(d for d in defaults.defaults if d.config_path == "model/qwen3_8b")
    loaded = internals.load_single_config(loader, model, repo)
    assert loaded.path == PACKAGE_SOURCE
    assert OmegaConf.select(loaded.config, "model.hf_id") == "Qwen/Qwen3-8B"


def test_a_defaults_list_copies_no_repository_and_a_searchpath_leaves_the_loaders_alone(
    loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hydra's CachingConfigRepository deep-copied the loader's repository, its ConfigStore with every
    config Hydra registered, for each composition; the loader must still not see a `hydra.searchpath`
    one composition added."""
    import copy

    from hydra._internal.config_repository import ConfigRepository

    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "only_here.yaml").write_text("model:\n  hf_id: x/y\n")
    deep_copy, copied = copy.deepcopy, []

    def counting(value: object, *args: object, **kwargs: object) -> object:
        if isinstance(value, ConfigRepository):
            copied.append(value)
        return deep_copy(value, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(copy, "deepcopy", counting)
    overrides = parse("model=only_here", f"hydra.searchpath=[file://{tmp_path}]")
    _, defaults = internals.defaults_list(
        loader, "config", overrides[:1], with_hydra=False, command_line=overrides
    )
    assert "model/only_here" in [d.config_path for d in defaults.defaults]
    assert copied == []
    assert "only_here" not in internals.group_options(loader, "model")
    plain = parse("model=qwen3_8b")
    _, defaults = internals.defaults_list(loader, "config", plain, with_hydra=False, command_line=plain)
    assert "model/qwen3_8b" in [d.config_path for d in defaults.defaults]
    assert copied == []


def test_apply_override_follows_hydras_prefix_rules() -> None:
    cfg = OmegaConf.create({"a": {"b": 1}, "c": 2})
    OmegaConf.set_struct(cfg, True)
    internals.apply_override(parse("a.b=5")[0], cfg)
    internals.apply_override(parse("+a.new=7")[0], cfg)
    internals.apply_override(parse("~c")[0], cfg)
    internals.apply_override(parse("++a.d=9")[0], cfg)
    assert OmegaConf.to_container(cfg) == {"a": {"b": 5, "new": 7, "d": 9}}
    with pytest.raises(Exception, match=r"Could not override 'a\.missing'"):
        internals.apply_override(parse("a.missing=1")[0], cfg)


def test_split_sweep_is_the_cartesian_product_in_order() -> None:
    points = internals.split_sweep(parse("x=1,2", "y=a,b", "z=fixed"))
    assert points == [
        ["x=1", "y=a", "z=fixed"],
        ["x=1", "y=b", "z=fixed"],
        ["x=2", "y=a", "z=fixed"],
        ["x=2", "y=b", "z=fixed"],
    ]


def test_a_hydra_for_sweeper_plugins_can_be_created() -> None:
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        hydra = internals.optuna_capable_hydra("t3rl", PACKAGE_SOURCE, [])
        assert callable(hydra.multirun)
    finally:
        GlobalHydra.instance().clear()


REPO_CONF = Path(__file__).resolve().parents[2] / "conf"
# Files OmegaConf rejects, each for another reason: libyaml words some of these differently, and must
# not be what t3rl reports.
BROKEN_YAML = {
    "unclosed": "# @package _global_\nname: broken\nhardware: [1,\n",
    "duplicate": "hardware:\n  nodes: 1\n  nodes: 2\n",
    "indent": "name: x\n  bad: indent\n",
    "tab": "model:\n\tname: x\n",
    "colon": "name: a: b\n",
    "quote": "name: 'unterminated\n",
    "alias": "end_of_turn: ***\n",
}


def _load(path: Path) -> tuple[str, object]:
    try:
        return "ok", OmegaConf.to_container(OmegaConf.load(path.open()))
    except Exception as error:  # the outcome compared, whatever it is
        return type(error).__name__, str(error)


def test_libyaml_parsing_is_in_force_only_inside_its_block() -> None:
    from omegaconf import _utils
    from yaml.cyaml import CParser

    with internals.libyaml_parsing():
        assert issubclass(_utils.get_yaml_loader(), CParser)
    assert not issubclass(_utils.get_yaml_loader(), CParser)


def test_libyaml_parsing_loads_every_shipped_config_as_omegaconf_does() -> None:
    files = sorted(REPO_CONF.rglob("*.yaml"))
    assert len(files) > 40
    plain = {f: _load(f) for f in files}
    with internals.libyaml_parsing():
        fast = {f: _load(f) for f in files}
    assert fast == plain
    assert all(outcome == "ok" for outcome, _ in plain.values())


@pytest.mark.parametrize("name", sorted(BROKEN_YAML))
def test_libyaml_parsing_reports_every_yaml_error_as_omegaconf_does(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.yaml"
    path.write_text(BROKEN_YAML[name])
    plain = _load(path)
    with internals.libyaml_parsing():
        fast = _load(path)
    assert plain[0] != "ok"
    assert fast == plain
