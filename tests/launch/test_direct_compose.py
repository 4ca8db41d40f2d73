"""launch.config.direct composes what Hydra composes: on every shipped experiment and group option, on a
corpus of override lines and on a user config dir, the plain config, its provenance and Hydra's node are
identical; what it does not reproduce is left to Hydra (None). Its readers of YAML scalars, override
values and interpolations agree with OmegaConf's and Hydra's own, or decline."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import OmegaConf
from omegaconf._utils import get_yaml_loader

from launch.config.composed import plain_with_hydra
from launch.config.direct import compose as direct_compose
from launch.config.direct import config_files
from launch.config.direct.compose import DeferredHydra, compose_directly
from launch.config.direct.interpolation import Resolver
from launch.config.direct.nodes import plain
from launch.config.direct.overrides import parse
from launch.config.direct.unsupported import Unsupported
from launch.config.errors import ConfigError
from launch.config.plain import Plain, Reads
from launch.config.resolved import plain_composition

CONF = Path(__file__).resolve().parents[2] / "conf"
PRIMARY_GROUPS = ("model", "hardware", "env", "user_sim", "sandbox", "reward", "eval", "executor", "tracking")
UNSET = "T3RL_TEST_DIRECT_UNSET"


def _fingerprint(plain_: Plain) -> tuple[str, str, str, str]:
    """Everything a composition returns, with types (True is not 1, 1 is not 1.0) and key order."""
    return (
        repr(plain_.data),
        repr(list(plain_.provenance.items())),
        repr(sorted(plain_.provenance.shadowed.items())),
        repr(dict(plain_.hydra)),  # a node the direct composition deferred is composed by Hydra here
    )


def _both(overrides: list[str], config_dirs: list[str] | None = None) -> tuple[Plain | None, Plain]:
    dirs = config_dirs or []
    env: dict[str, str | None] = {}
    direct = compose_directly(overrides, dirs, env)
    reads = Reads()
    hydra = plain_with_hydra(overrides, dirs, reads)
    if direct is not None:
        assert env == {k: v for k, v in reads.env.items() if k in env}, "variables read differ"
    return direct, hydra


def _assert_identical(overrides: list[str], config_dirs: list[str] | None = None) -> None:
    direct, hydra = _both(overrides, config_dirs)
    assert direct is not None, f"left to Hydra: {overrides}"
    assert _fingerprint(direct) == _fingerprint(hydra)


@pytest.fixture(autouse=True)
def _unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(UNSET, raising=False)


@pytest.mark.parametrize("experiment", [None, *sorted(p.stem for p in (CONF / "experiment").glob("*.yaml"))])
def test_every_experiment(experiment: str | None) -> None:
    _assert_identical([f"+experiment={experiment}"] if experiment else [])


def test_every_option_of_the_primary_groups() -> None:
    for group in PRIMARY_GROUPS:
        for option in sorted(p.stem for p in (CONF / group).glob("*.yaml")):
            _assert_identical([f"{group}={option}"])


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=stage2_bfcl", "hardware.nodes=2", "+stages.train.hardware.pipeline_parallel=1"],
        ["+experiment=stage1_bfcl", "model=qwen3_8b", "reward=toolrl_coarse", "tracking=wandb", "seed=7"],
        ["experiment=stage1_bfcl", "hardware.sglang_mem_fraction=0.5", "+algorithm_lr=1e-5"],
        ["+experiment=tau2_pipeline", "user_sim=llm", "env.user.temperature=1.5e-1", "name=tau2-x.y"],
        ["+experiment=retool", "sandbox=sandbox_fusion", "paths.models_dir=/abs/models"],
        ["+experiment=quickstart", "paths.cluster_python=null", "name=QS_1", "executor=dry"],
        ["+experiment=hub_env_grpo", "env.id=primeintellect/wordle", "+eval.extra=http://h:8000/v1"],
        ["+experiment=bfcl_env_tuning", "+stages.stage1.hardware.context_parallel=2", "model=qwen3_8b"],
        ["model=qwen3_8b", "model=glm4_9b", "hardware.sequence_parallel=true"],
        ["seed='7'", 'name="a b"', "+stages.train.note=''", "paths.runs_dir='~/r uns'", "model.name='a\nb'"],
        ["+experiment=stage1_bfcl", "model.hf_id='1.2.3.4'", "eval.server.host='--x'", "+x.y='true'"],
        ["+experiment=retool", "env.data.instruction='Solve: it, (a) [b] {c} = d # e'", "name='é 🔥'"],
        ["+experiment=retool", "env.sandbox.env_allowlist=[PATH, 'A,B' ,\"\"]", "+x=[]", "+y=[1,2.5,null,x]"],
        ["+experiment=stage1_bfcl", "model.parsers.think_tags=['<think>','</think>']", "+z=['a\nb']"],
        ["+experiment=stage2_bfcl", "env.augmentation.kinds=[]", "env.augmentation.kinds=[a]"],
        ["+experiment=quickstart", "eval.server.extra_args=[--context-length,4096,-x]", "+nan=NaN"],
        ["+experiment=stage1_bfcl", "model.architecture.extra_args=[--use-flash-attn]", "+t=-inf"],
        ["+experiment=stage1_bfcl", "~seed", "~hardware.recompute", "++new.key=1", "++newkey=[1,2]"],
        ["+experiment=quickstart", "~eval.server", "++seed=3", "++model.architecture.extra_args=[--x]"],
        ["++model.hf_id=abc", "~model.hf_id", "+model.hf_id=x", "~name", "++name=y"],
        ["+experiment=tau2_pipeline", "published@eval.published=t3rl_bfcl", "seed=3"],
        ["+experiment=bfcl_env_tuning_4stage", "curriculum@stages.aligned.curriculum=tau2_sft"],
        ["+experiment=stage1_bfcl", "curriculum@stages.train.curriculum=tau2_rft", "model=qwen3_8b"],
        # Mappings: a key the config lacks, a scalar replaced, merged into a mapping (new keys with +/++).
        ["+x={a: 1}", "++y={a: 1, b: [1, 2]}", "+z.w={a:{b:1}}", "seed={a:1}", "+name={b: x}"],
        ["+experiment=stage1_bfcl", "+model.chat.chat_template_kwargs={enable_thinking:false}", "stages={}"],
        ["eval.server={host: x}", "+eval.server={a: 1}", "++eval.server={port: 1, b: {c: 2}}"],
        ["eval.server={}", "++hardware.env_vars={A: x}", "hardware.env_vars={A: y}"],
        ["model.architecture={num_layers: 3}", "+experiment=stage1_bfcl", "stages.train={kind: train}"],
        ["+experiment=stage1_bfcl", "+stages.train.curriculum={optimizer: {lr: 1}}"],
        ["+experiment=tau2_pipeline", "env.user={temperature: 0.5}", "++model.parsers={think_tags: null}"],
        ["+experiment=hub_env_grpo", "env=openenv", "+services.s={kind: command, command: [p,-m], url: ''}"],
        ["executor=slurm", "executor.time_limit=1-00:00:00", "paths.runs_dir=../runs", "name=02:00:00"],
        # A list over a scalar or a null (a new node where it stood), twice.
        ["+experiment=stage1_bfcl", "eval.categories=[multi_turn_base]", "seed=[1]", "++name=[a]"],
        ["+experiment=retool", "env.sandbox.cpu_cores=[1.0]", "hardware.rollout_gpus=[]", "seed=[a]"],
        ["+experiment=stage1_bfcl", "+model.architecture.extra_args=[--x]", "+env.augmentation.kinds=[]"],
        # Null over a list or a mapping.
        ["+experiment=hub_env_grpo", "env=openenv", "env.command=null", "env.url=http://10.1.2.3:8000"],
        ["+experiment=stage1_bfcl", "model.parsers.think_tags=null", "hardware.recompute=null"],
        ["+experiment=tau2_pipeline", "eval.published=null", "model.architecture=null"],
        ["+experiment=stage1_bfcl", "stages.train.curriculum=null", "++model.architecture=null"],
    ],
)
def test_override_lines(overrides: list[str]) -> None:
    _assert_identical(overrides)


@pytest.mark.parametrize(
    "overrides",
    [
        ["+experiment=stage1_bfcl", "hparams_search=bfcl_lr_kl_reward"],
        ["+experiment=stage1_bfcl", "+hparams_search=bfcl_lr_kl_reward", "reward=binary", "seed=3"],
        [
            "+experiment=stage1_bfcl",
            "hparams_search=bfcl_lr_kl_reward",
            "stages.train.curriculum.optimizer.lr=1e-7",
        ],
    ],
)
def test_a_search_line_with_hydras_node_deferred(overrides: list[str]) -> None:
    """A search's file shapes Hydra's own node (its `hydra:` section, `override /hydra/sweeper`): the
    config and provenance are composed directly, the node by Hydra once read, identical to Hydra's."""
    direct, hydra = _both(overrides)
    assert direct is not None and isinstance(direct.hydra, DeferredHydra), overrides
    assert _fingerprint(direct) == _fingerprint(hydra)
    assert direct.hydra["sweeper"]["params"] == hydra.hydra["sweeper"]["params"] != {}


SEARCH = ["+experiment=stage1_bfcl", "+hparams_search=bfcl_lr_kl_reward"]
SETTINGS = ["++hydra.sweeper.n_trials=3", "hydra.sweeper.direction=minimize"]


@pytest.fixture
def _nothing_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    """No sweeper settings accepted by Hydra yet (the process's record starts empty)."""
    monkeypatch.setattr(direct_compose, "_ACCEPTED", {})
    monkeypatch.setattr(direct_compose, "_unjudged", None)


@pytest.mark.usefixtures("_nothing_accepted")
def test_a_searchs_settings_are_composed_directly_once_hydra_accepted_them_on_the_same_node() -> None:
    """`++hydra.sweeper.n_trials=3` on a search: left to Hydra the first time, then each trial and bound
    line repeating it (another group choice, a value) is composed directly, identical to Hydra's."""
    line = [*SEARCH, *SETTINGS]
    assert compose_directly(line, [], {}) is None  # Hydra judges the settings first
    plain_composition(line, [], Reads())
    for extra in ([], ["reward=binary"], ["stages.train.curriculum.optimizer.lr=1e-7", "seed=4"]):
        direct, hydra = _both([*line, *extra])
        assert direct is not None and isinstance(direct.hydra, DeferredHydra), extra
        assert _fingerprint(direct) == _fingerprint(hydra)
        assert direct.hydra["sweeper"]["n_trials"] == 3 and direct.hydra["sweeper"]["direction"] == "minimize"
    # Other settings, the same in another order, or the same on another node: Hydra's again.
    assert compose_directly([*SEARCH, "++hydra.sweeper.n_trials=4", SETTINGS[1]], [], {}) is None
    assert compose_directly([*SEARCH, *reversed(SETTINGS)], [], {}) is None
    assert compose_directly(["+experiment=stage1_bfcl", *SETTINGS], [], {}) is None


@pytest.mark.usefixtures("_nothing_accepted")
@pytest.mark.parametrize(
    "line",
    [
        ["+experiment=stage1_bfcl", "++hydra.sweeper.n_trials=3"],  # no search: the basic sweeper's node
        [*SEARCH, "hydra.sweeper.no_such=1"],  # a key the sweeper lacks
        [*SEARCH, "+hydra.sweeper.n_trials=3"],  # added where it is
        [*SEARCH, "hydra.sweeper.n_trials=many"],  # an int of the sweeper's schema
    ],
)
def test_sweeper_settings_hydra_refuses_are_never_composed_directly(line: list[str]) -> None:
    for _ in range(2):
        assert compose_directly(line, [], {}) is None
        with pytest.raises(ConfigError):
            plain_composition(line, [], Reads())
    assert compose_directly([*line, "seed=4"], [], {}) is None


@pytest.mark.usefixtures("_nothing_accepted")
def test_sweeper_settings_accepted_on_one_node_are_judged_again_on_another(tmp_path: Path) -> None:
    """The same settings and search after the search's file changed: a value of its `hydra:` section
    (composed directly again once Hydra composed it, with the new value), then its sweeper to Hydra's
    basic one, which has no n_trials (refused)."""
    search = tmp_path / "hparams_search"
    search.mkdir()
    mine = "# @package _global_\ndefaults:\n  - override /hydra/sweeper: {}\n"
    mine += "hydra:\n  sweeper:\n    params:\n"
    (search / "mine.yaml").write_text(mine.format("optuna") + "      seed: choice(1, 2)\n")
    line = ["+experiment=stage1_bfcl", "+hparams_search=mine", "hydra.sweeper.n_trials=3"]
    dirs = [str(tmp_path)]
    plain_composition(line, dirs, Reads())
    assert compose_directly([*line, "seed=4"], dirs, {}) is not None
    (search / "mine.yaml").write_text(mine.format("optuna") + "      seed: choice(1, 3)\n")
    assert compose_directly([*line, "seed=4"], dirs, {}) is None
    plain_composition(line, dirs, Reads())
    _assert_identical([*line, "seed=4"], dirs)
    (search / "mine.yaml").write_text(mine.format("basic") + "      seed: choice(1, 3)\n")
    assert compose_directly([*line, "seed=4"], dirs, {}) is None
    with pytest.raises(ConfigError, match="n_trials"):
        plain_composition([*line, "seed=4"], dirs, Reads())


@pytest.mark.usefixtures("_nothing_accepted")
def test_sweeper_settings_accepted_under_one_search_are_judged_again_without_it(tmp_path: Path) -> None:
    """A search chosen by an experiment's defaults list, not on the command line: the node is the same,
    yet t3rl refuses the settings (no search chosen on the line; launch.config.sweeper_settings). (The
    direct composition also declines the search's entry there; the shape names the search regardless.)"""
    (tmp_path / "experiment").mkdir()
    searched = "# @package _global_\ndefaults:\n  - stage1_bfcl\n  - /hparams_search: bfcl_lr_kl_reward\n"
    (tmp_path / "experiment" / "searched.yaml").write_text(searched)
    dirs = [str(tmp_path)]
    plain_composition([*SEARCH, SETTINGS[0]], dirs, Reads())
    assert compose_directly([*SEARCH, SETTINGS[0], "seed=4"], dirs, {}) is not None
    chosen_in_file = ["+experiment=searched", SETTINGS[0]]
    assert compose_directly(chosen_in_file, dirs, {}) is None
    with pytest.raises(ConfigError, match="chooses no search"):
        plain_composition(chosen_in_file, dirs, Reads())


def test_a_search_file_that_chooses_a_plain_entry_after_its_sweeper_is_left_to_hydra(tmp_path: Path) -> None:
    """Hydra refuses an `override` entry before a plain one; a sweeper choice counts as one."""
    search = tmp_path / "hparams_search"
    search.mkdir()
    shipped = (CONF / "hparams_search" / "bfcl_lr_kl_reward.yaml").read_text()
    plain = "  - /curriculum@extra: bfcl_stage1"
    (search / "mine.yaml").write_text(shipped.replace("optuna  #", f"optuna\n{plain}  #", 1))
    (search / "plain_first.yaml").write_text(shipped.replace("  - override", f"{plain}\n  - override", 1))
    assert compose_directly(["hparams_search=mine"], [str(tmp_path)], {}) is None
    with pytest.raises(ConfigError, match="override"):
        plain_with_hydra(["hparams_search=mine"], [str(tmp_path)], Reads())
    _assert_identical(["hparams_search=plain_first"], [str(tmp_path)])


def test_a_file_setting_hydras_search_path_is_left_to_hydra(tmp_path: Path) -> None:
    """`hydra.searchpath` in a file adds where configs are found: that node cannot be deferred."""
    search = tmp_path / "hparams_search"
    search.mkdir()
    shipped = (CONF / "hparams_search" / "bfcl_lr_kl_reward.yaml").read_text()
    elsewhere = f"\n  searchpath: [file://{tmp_path / 'more'}]\n  sweeper:  #"
    (search / "mine.yaml").write_text(shipped.replace("\n  sweeper:  #", elsewhere, 1))
    assert "searchpath" in (search / "mine.yaml").read_text()
    assert compose_directly(["hparams_search=mine"], [str(tmp_path)], {}) is None


def test_environment_variables_are_read_like_omegaconf(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("T3RL_RUNS_DIR", "/tmp/runs here")
    monkeypatch.setenv("SLIME_ROOT", "/opt/slime")
    _assert_identical(["+experiment=stage1_bfcl"])


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    """A config dir: a hardware option built on a shipped one (kept job references), the optional local
    file, and an experiment with overrides, a mounted curriculum and a string interpolation."""
    (tmp_path / "hardware").mkdir()
    (tmp_path / "hardware" / "mine.yaml").write_text(
        "defaults:\n  - h200x8\n  - _self_\nname: mine\n"
        f"env_vars:\n  HF_HOME: ${{oc.env:HOME}}\n  MIX: x-${{oc.env:{UNSET},fallback}}\n"
    )
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "default.yaml").write_text(f"seed: 7\nwandb_token: ${{oc.env:{UNSET}}}\n")
    (tmp_path / "experiment").mkdir()
    (tmp_path / "experiment" / "mine.yaml").write_text(
        "# @package _global_\n# A user's experiment.\ndefaults:\n  - _self_\n"
        "  - /curriculum@stages.train.curriculum: bfcl_stage1\n  - override /hardware: mine\n"
        "name: mine-${seed}-${hardware.name}\nstages:\n  train:\n    kind: train\n"
        "tags: [a, '${name}', {k: 1}]\n"
    )
    return tmp_path


def test_a_user_config_dir(user_dir: Path) -> None:
    _assert_identical(["+experiment=mine"], [str(user_dir)])
    _assert_identical(["+experiment=stage1_bfcl", "hardware=mine", "seed=3"], [str(user_dir)])


def test_null_over_a_list_or_a_mapping_a_file_brought(tmp_path: Path) -> None:
    # A later file's null replaces a list (a model option's think_tags) or a mapping (its architecture).
    (tmp_path / "experiment").mkdir()
    for name, body in (
        ("list", "model:\n  parsers:\n    think_tags: null\n"),
        ("mapping", "model:\n  architecture: null\n"),
    ):
        (tmp_path / "experiment" / f"{name}.yaml").write_text(
            f"# @package _global_\ndefaults:\n  - override /model: qwen3_4b_instruct_2507\n  - _self_\n{body}"
        )
        _assert_identical([f"+experiment={name}"], [str(tmp_path)])


@pytest.mark.parametrize(
    "overrides",
    [
        ["reward=progress,binary"],  # a sweep
        ["~seed=42"],  # deletes only while the value is 42
        ["~model"],  # a group's entry deleted from the defaults list
        ["++model=x"],  # a group
        ["++seed.x=1"],  # a scalar parent OmegaConf replaces by a mapping
        ["+experiment=stage1_bfcl", "model@model=qwen3_8b"],  # no entry of model is at package model
        ["+experiment=stage1_bfcl", "curriculum@stages.nosuch.curriculum=tau2_rft"],
        ["+experiment=quickstart", "+published@eval.published=t3rl_bfcl"],  # an entry added
        ["nosuch@eval.published=t3rl_bfcl"],
        ["++eval.server=x"],  # a mapping replaced by a scalar
        ["~hardware.rollout_gpus"],  # holding null: Hydra refuses it as missing
        ["name=${model.name}", "~name"],
        ["hydra.job.chdir=true"],
        ["seed='${x}'"],
        ["seed='a\\'b'"],
        ["seed='???'"],
        ["+seed=[1]"],
        ["+experiment=stage1_bfcl", "paths.megatron_root=[x]"],  # a list over an interpolation
        ["name=[a]", "name=b"],  # a scalar over the list
        ["env.sandbox.env_allowlist=[[a]]"],
        ["env.sandbox.env_allowlist=[a,]"],
        ["env.sandbox.env_allowlist=[a b]"],
        ["env.sandbox.env_allowlist=['${a}']"],
        ["name=${model.name}"],
        ["hardware.env_vars=[1,2]"],
        ["model=no_such_model"],
        ["model.parsers=x"],  # a mapping replaced by a scalar
        ["curriculum=bfcl_stage1"],  # a group no defaults list names at the root
        ["eval.server={newkey: 1}"],  # a key the mapping lacks, without +
        ["+experiment=stage1_bfcl", "stages.train={curriculum: {nosuch: 1}}"],  # ... at any depth
        ["+experiment=stage1_bfcl", "model.architecture.extra_args={a: 1}"],  # a mapping over a list
        ["+experiment=bfcl_debug", "paths.cluster_python={a: 1}"],  # ... over an interpolation
        ["+experiment=stage1_bfcl", "model.chat={tokenizer: x}"],  # ... merged over an interpolation
    ],
)
def test_what_it_leaves_to_hydra(overrides: list[str]) -> None:
    assert compose_directly(overrides, [], {}) is None


@pytest.mark.parametrize(
    "overrides",
    [
        ["~nothing"],  # nothing to delete
        ["no_such_key=1"],
        ["+seed=3"],  # '+' of a key the config has
        ["+model.parsers=null"],  # ... a mapping
        ["x={a: 1}", "y=[1]", "z=null"],  # a key the config lacks, without '+', one problem each
        ["modle=qwen3_8b"],  # a group misspelt: its choice is the fix
        ["+experiment=stage1_bfcl", "env.max_steps=5", "seed=4", "hardware.num_nodes=2"],  # fields left unset
        ["+experiment=stage1_bfcl", "stages.train.curriculum.optimizer.lrr=1e-5"],  # deep, misspelt
        ["+experiment=stage1_bfcl", "stages.nosuch.curriculum.lr=1", "~stages.train.nosuch.x"],  # no parent
        ["+experiment=stage1_bfcl", "hardware.micro_batch_size=2", "+hardware.nodes=2"],
        ["+experiment=hub_env_grpo", "services.s.kind=command"],  # entries one names, none set
        ["executor=slurm", "executor.partitionn=gpu"],
        ["+experiment=stage1_bfcl", "wandb_api_key=abc123secretvalue0"],  # a credential's value, masked
        ["+x.y=1", "x.z=2"],  # a key added by an earlier override is there for the next one
        ["no_such_key=1", "seed=[1]"],  # beside a list over a scalar
    ],
)
def test_a_key_refused_is_refused_directly_with_hydras_problems(overrides: list[str]) -> None:
    """A key the config lacks (or has, for '+') is refused without Hydra, every override's problem in
    Hydra's words and order."""
    with pytest.raises(ConfigError) as direct:
        compose_directly(overrides, [], {})
    with pytest.raises(ConfigError) as hydra:
        plain_with_hydra(overrides, [], Reads())
    assert [repr(p) for p in direct.value.problems] == [repr(p) for p in hydra.value.problems]
    assert direct.value.warnings == hydra.value.warnings


@pytest.mark.parametrize(
    "overrides",
    [
        ["no_such_key=1", "reward=progress,binary"],  # and a sweep: Hydra's problem is the sweep's
        ["no_such_key=1", "+seed=[1]"],  # and an override Hydra applies otherwise
        [*SEARCH, "no_such_key=1"],  # Hydra's own node among the top-level keys
    ],
)
def test_a_key_refused_beside_what_hydra_judges_is_left_to_it(overrides: list[str]) -> None:
    assert compose_directly(overrides, [], {}) is None


def test_a_config_dir_of_symbolic_links(user_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Config files read through linked directories and linked files (opened by their joined path)."""
    linked = tmp_path_factory.mktemp("linked")
    (linked / "hardware").symlink_to(user_dir / "hardware", target_is_directory=True)
    (linked / "experiment").mkdir()
    (linked / "experiment" / "mine.yaml").symlink_to(user_dir / "experiment" / "mine.yaml")
    _assert_identical(["+experiment=mine"], [str(linked)])


def test_a_missing_config_dir_is_left_to_hydra(tmp_path: Path) -> None:
    assert compose_directly([], [str(tmp_path / "nope")], {}) is None


# ------------------------------------------------------------------------------------------ readers

SCALARS = [
    "1",
    "-1",
    "+1",
    "01",
    "0x1F",
    "0o17",
    "0b11",
    "1_000",
    "1:30",
    "190:20:30",
    "1.5",
    "1.",
    ".5",
    "-.5",
    "1e5",
    "1E5",
    "1e-5",
    "1e+5",
    "1.0e5",
    "1.0e-5",
    "-1e5",
    "+1.5e+3",
    "1_0e5",
    "1_0.5e5",
    "1.5_0e5",
    ".inf",
    "-.inf",
    ".NaN",
    "inf",
    "nan",
    "true",
    "True",
    "TRUE",
    "yes",
    "no",
    "on",
    "Off",
    "y",
    "n",
    "null",
    "~",
    "Null",
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "127.0.0.1",
    "1.2.3",
    "a:b",
    "=",
    "0.70",
    "1e",
    "1e-",
    "e5",
    "'1e5'",
    "",
]


@pytest.mark.parametrize("scalar", SCALARS)
def test_yaml_scalars_read_as_omegaconf_reads_them(scalar: str) -> None:
    text = f"v: {scalar}\n"
    try:
        expected: Any = yaml.load(text, Loader=get_yaml_loader())["v"]
    except yaml.YAMLError:
        expected = Unsupported
    try:
        got = plain(config_files._parse("file:///x", text).content)["v"]
    except Unsupported:
        return
    assert expected is not Unsupported, f"{scalar}: OmegaConf refuses it, the direct reader did not"
    _assert_same_value(got, expected)


OVERRIDE_VALUES = [
    "1",
    "-1",
    "0",
    "-0",
    "007",
    "1_000",
    "+5",
    "1.5",
    "1.",
    ".5",
    "1e5",
    "1e-5",
    "-1.5e+3",
    "0.70",
    "inf",
    "nan",
    "-inf",
    "+inf",
    "INF",
    "-NaN",
    "+nan",
    "--inf",
    "-infx",
    "-info",
    "infinity",
    "-Infinity",
    "--context-length",
    "-x",
    "-",
    "--",
    "-1a",
    "--1",
    "-a.b",
    "-a/b:c",
    "-_x",
    "-e5",
    "-true",
    "-null",
    "---a",
    "--a=b",
    "--x,y",
    "-a b",
    "-a$",
    "[--context-length,4096]",
    "[-inf,nan,-x]",
    "true",
    "TRUE",
    "False",
    "null",
    "NULL",
    "abc",
    "a-b",
    "a.b",
    "a.5",
    "a/b",
    "/abs/path",
    "http://x:80/y",
    "Qwen/Qwen3-4B",
    "4b",
    "_x",
    "a:b:c",
    "x.1.2",
    "true_x",
    "nullx",
    "info",
    "'x'",
    '"x"',
    "''",
    "'a b'",
    "'1'",
    "'1.5'",
    "'true'",
    "'null'",
    "'a\nb'",
    "'a\"b'",
    '"a\'b"',
    "'a\\'b'",
    "'a\\\\b'",
    "'${a}'",
    "'$a'",
    "'???'",
    "'~/x'",
    "'  '",
    "'x''y'",
    "'x'y",
    "'x",
    "[]",
    "[ ]",
    "[a,b]",
    "[a, b ,c]",
    "['a,b',c]",
    "[1,1.5,true,null,'x']",
    "['-x']",
    "['']",
    "['a\nb']",
    "[a,]",
    "[,]",
    "[[1]]",
    "[a b]",
    "[{a:1}]",
    "['a\\'b']",
    "[a",
    "../runs",
    "./models/x",
    "~/r",
    "1-00:00:00",
    "02:00:00",
    "10.1.2.3:8000",
    "1/2",
    ".5/x",
    "-1:00",
    "0.0.0.0",
    "7b",
    "1e5x",
    "a//b",
    "::",
    "..",
    "1:2e5",
    "_:0",
    "{}",
    "{ }",
    "{a: 1}",
    "{a:1,b:[x, 'y,z'],c: null}",
    "{a: {b: {c: -x}}, d: {}}",
    "{a : 'x: y', B_1: inf, c: 1e-6, d: true}",
    "{enable_thinking: false}",
    "{HF_HOME: /data/hf, N: 8}",
    "{kind: command, command: [p,-m,x], port: 1, url: ''}",
    "{a: [], b: ''}",
    "{ a : 1 , b : 2 }",
    "{a: '${x}'}",
    "{true: 1}",
    "{1: a}",
    "{a: 1,}",
    "{a: b c}",
    "{a: b:c}",
    "{a: 1, a: 2}",
    "{a: [1,[2]]}",
    "{a-b: 1}",
    "{a: 1} ",
    "{a: 1}}",
    "{a:1",
    "{a}",
    "{a: [b}",
]


@pytest.mark.parametrize("raw", OVERRIDE_VALUES)
def test_override_values_read_as_hydra_reads_them(raw: str) -> None:
    try:
        expected = OverridesParser.create().parse_override(f"k={raw}").value()
    except Exception:
        expected = Unsupported  # Hydra refuses it: so must the direct reader, leaving Hydra to say why
    try:
        got = parse(f"k={raw}").value
    except Unsupported:
        return
    assert expected is not Unsupported, f"{raw}: Hydra refuses it, the direct reader did not"
    _assert_same_value(got, expected)


INTERPOLATIONS = (
    [
        f"${{oc.env:{UNSET},{default}}}"
        for default in ("null", "NULL", "'x'", '"x"', "runs", "/root/slime", ".", "a-b", "a.b", "x/y.z", "_1")
    ]
    + [f"${{oc.env:{UNSET},{default}}}" for default in ("true", "inf", "1", "'~/.cache/t3rl'", ".5", "a b")]
    + ["${a}", "${b}", "${c}", "${d}", "${e}", "${f}", "x${a}y", "${a}${b}", "${b}/${a}", "${c}-x", "${d}x"]
)
TARGETS = {"a": 5, "b": "s", "c": 1.5, "d": True, "e": None, "f": [1, "${a}"]}


@pytest.mark.parametrize("text", INTERPOLATIONS)
def test_interpolations_resolve_as_omegaconf_resolves_them(text: str) -> None:
    try:
        expected: Any = OmegaConf.to_container(OmegaConf.create({**TARGETS, "v": text}), resolve=True)["v"]
    except Exception:
        expected = Unsupported
    try:
        got = Resolver({**TARGETS, "v": text}, {}).resolved(text)
    except Unsupported:
        return
    assert expected is not Unsupported, f"{text}: OmegaConf refuses it, the direct resolver did not"
    _assert_same_value(got, expected)


def _assert_same_value(got: object, expected: object) -> None:
    assert type(got) is type(expected), (got, expected)
    if isinstance(got, list):
        assert len(got) == len(expected)  # type: ignore[arg-type]
        for item, other in zip(got, expected, strict=True):  # type: ignore[call-overload]
            _assert_same_value(item, other)
    elif isinstance(got, dict):
        assert list(got) == list(expected)  # type: ignore[call-overload]
        for key, item in got.items():
            _assert_same_value(item, expected[key])  # type: ignore[index]
    elif isinstance(got, float) and math.isnan(got):
        assert math.isnan(expected)  # type: ignore[arg-type]
    else:
        assert got == expected


def test_the_corpus_exercises_the_direct_path() -> None:
    """Not a vacuous comparison: most of the readers' corpus is read directly, not declined."""
    read = 0
    for raw in OVERRIDE_VALUES:
        try:
            parse(f"k={raw}")
            read += 1
        except Unsupported:
            pass
    assert read >= len(OVERRIDE_VALUES) * 2 // 3
    assert os.environ.get(UNSET) is None
