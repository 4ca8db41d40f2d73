"""launch.config.compose_cache: a repeated command line reuses its composition, any changed input recomposes,
and validation runs on every call."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hydra.core.utils import setup_globals
from omegaconf.basecontainer import BaseContainer

import launch.config.resolved as resolved_module
from launch.checks.resolve import resolve
from launch.config import compose_cache
from launch.config.compose_cache import FORMAT, Entry, on_search_path
from launch.config.direct.compose import DeferredHydra
from launch.config.errors import ConfigError
from launch.config.plain import Plain, Reads
from launch.config.provenance import Origin, Provenance
from tests.support.recorded_calls import calls_of

CONF = Path(__file__).resolve().parents[2] / "conf"
STAGE2 = [
    "+experiment=stage2_bfcl",
    "hardware.nodes=2",
    "+stages.train.hardware.pipeline_parallel=1",
    "executor=slurm",
]
PROBE = ["+experiment=stage2_bfcl", "hardware=probe"]


@pytest.fixture
def compositions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """A private cache; the list grows by one each time Hydra actually composes."""
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("T3RL_NO_CACHE", raising=False)
    for name in ("T3RL_RUNS_DIR", "T3RL_CHECKPOINTS_DIR", "T3RL_MODELS_DIR", "SLIME_ROOT", "MEGATRON_ROOT"):
        monkeypatch.delenv(name, raising=False)
    return calls_of(monkeypatch, resolved_module, "plain_composition")


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    """A user config dir with a hardware option `probe` (h200x8 under another name)."""
    hardware = tmp_path / "user_conf" / "hardware"
    hardware.mkdir(parents=True)
    text = (CONF / "hardware" / "h200x8.yaml").read_text().replace("name: h200x8", "name: probe")
    (hardware / "probe.yaml").write_text(text)
    return tmp_path / "user_conf"


def entries(tmp_path: Path) -> list[Path]:
    """The entries stored (a line composed directly once leaves an empty file: `Entry.first_sight`)."""
    folder = tmp_path / "cache" / "compose"
    return sorted(p for p in folder.glob("*.json") if p.stat().st_size) if folder.exists() else []


def test_a_hit_gives_what_a_fresh_composition_gives(compositions, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    fresh = resolve(STAGE2)
    assert entries(tmp_path) == []
    monkeypatch.delenv("T3RL_NO_CACHE")
    missed = resolve(STAGE2)
    stored = resolve(STAGE2)
    hit = resolve(STAGE2)
    assert len(compositions) == 3 and len(entries(tmp_path)) == 1
    for other in (missed, stored, hit):
        assert json.dumps(other.config) == json.dumps(fresh.config)
        assert dict(other.provenance.items()) == dict(fresh.provenance.items())
        assert other.run == fresh.run and other.hydra == fresh.hydra
        assert other.warnings == fresh.warnings and other.overrides == fresh.overrides
    assert hit.provenance.source("hardware.nodes") == "override `hardware.nodes=2`"
    assert hit.provenance.origin("hardware.tensor_parallel").chosen_by == "experiment/stage2_bfcl.yaml"


def test_editing_a_config_file_recomposes_even_at_the_same_size_and_mtime(compositions, config_dir) -> None:
    dirs = [str(config_dir)]
    assert resolve(PROBE, dirs).run.hardware.gpu_memory_gib == 141
    probe = config_dir / "hardware" / "probe.yaml"
    stat = probe.stat()
    # An H200 of another memory size, written at the same length (a GPU type's memory is checked).
    probe.write_text(probe.read_text().replace("gpu_memory_gib: 141", "gpu_memory_gib: 140"))
    os.utime(probe, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert probe.stat().st_size == stat.st_size and probe.stat().st_mtime_ns == stat.st_mtime_ns
    assert resolve(PROBE, dirs).run.hardware.gpu_memory_gib == 140
    assert len(compositions) == 2
    resolve(PROBE, dirs)
    assert len(compositions) == 2


def test_adding_a_file_to_a_config_dir_recomposes(compositions, config_dir) -> None:
    dirs = [str(config_dir)]
    first = resolve(PROBE, dirs)
    (config_dir / "model").mkdir()
    (config_dir / "model" / "other.yaml").write_text("# unused by this composition\nname: other\n")
    second = resolve(PROBE, dirs)
    assert len(compositions) == 2 and second.config == first.config


def test_a_changed_override_recomposes(compositions) -> None:
    assert resolve(["+experiment=stage2_bfcl", "seed=1"]).run.seed == 1
    assert resolve(["+experiment=stage2_bfcl", "seed=1"]).run.seed == 1  # stored the second time
    assert resolve(["+experiment=stage2_bfcl", "seed=2"]).run.seed == 2
    assert resolve(["+experiment=stage2_bfcl", "seed=1"]).run.seed == 1
    assert len(compositions) == 3


def test_a_line_composed_directly_is_stored_the_second_time(compositions, monkeypatch, tmp_path) -> None:
    """Most lines are composed once (a sweep's points, a search's trials): the first miss marks the line
    and neither scans nor stores it; the second stores it; a line Hydra composes is stored at once."""
    scanned = calls_of(monkeypatch, compose_cache, "_holds_secret")
    resolve(["+experiment=stage2_bfcl", "seed=1"])
    assert scanned == [] and entries(tmp_path) == []
    resolve(["+experiment=stage2_bfcl", "seed=1"])
    assert len(scanned) == 1 and len(entries(tmp_path)) == 1
    resolve(["+experiment=stage2_bfcl", "seed=1"])
    assert len(compositions) == 2 and len(scanned) == 1
    monkeypatch.setattr(resolved_module, "compose_directly", lambda *args: None)  # a line left to Hydra
    resolve(["+experiment=stage2_bfcl", "seed=3"])
    assert len(scanned) == 2 and len(entries(tmp_path)) == 2


def test_a_changed_environment_variable_read_by_oc_env_recomposes(compositions, monkeypatch) -> None:
    monkeypatch.setenv("T3RL_RUNS_DIR", "/tmp/runs_a")
    assert resolve(["+experiment=stage2_bfcl"]).run.paths.runs_dir == "/tmp/runs_a"
    monkeypatch.setenv("T3RL_RUNS_DIR", "/tmp/runs_b")
    assert resolve(["+experiment=stage2_bfcl"]).run.paths.runs_dir == "/tmp/runs_b"
    monkeypatch.delenv("T3RL_RUNS_DIR")
    assert resolve(["+experiment=stage2_bfcl"]).run.paths.runs_dir == "runs"
    assert len(compositions) == 3
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")
    assert resolve(["+experiment=stage2_bfcl"]).run.paths.runs_dir == "runs"
    assert len(compositions) == 3


@pytest.mark.parametrize(
    "damage",
    [
        lambda text: "not json at all",
        lambda text: text[: len(text) // 2],
        lambda text: text.replace('"name": "stage2_bfcl"', '"name": "tampered"'),
        lambda text: text.replace(f'"format": {FORMAT}', '"format": 1'),
        lambda text: "",
    ],
    ids=["garbage", "truncated", "edited-body", "old-format", "empty"],
)
def test_a_corrupt_entry_is_ignored_and_rewritten(compositions, tmp_path, damage) -> None:
    resolve(["+experiment=stage2_bfcl"])
    expected = resolve(["+experiment=stage2_bfcl"])  # stored the second time
    (entry,) = entries(tmp_path)
    entry.write_text(damage(entry.read_text()))
    again = resolve(["+experiment=stage2_bfcl"])
    assert again.config == expected.config and again.run.name == "stage2_bfcl"
    assert len(compositions) == 3
    resolve(["+experiment=stage2_bfcl"])
    assert len(compositions) == 3


def test_errors_are_never_cached(compositions, tmp_path) -> None:
    for _ in range(2):
        with pytest.raises(ConfigError, match="stage2_bfc"):
            resolve(["+experiment=stage2_bfc"])
    assert len(compositions) == 2 and entries(tmp_path) == []


def test_validation_runs_on_a_hit(compositions, tmp_path) -> None:
    """Only composition is cached: a hit is still checked, including files the rules read."""
    checkpoint = tmp_path / "ckpt"
    checkpoint.mkdir()
    overrides = ["+experiment=stage2_bfcl", f"model.hf_checkpoint={checkpoint}"]
    resolve(overrides), resolve(overrides)  # no config.json: nothing to compare; stored the second time
    (checkpoint / "config.json").write_text(json.dumps({"hidden_size": 1, "num_hidden_layers": 1}))
    with pytest.raises(ConfigError, match=r"model\.architecture\.hidden_size"):
        resolve(overrides)
    for _ in range(3):
        with pytest.raises(ConfigError, match="tensor_parallel"):
            resolve([*overrides, "hardware.tensor_parallel=3"])
    # the two lines typed; the refusal's alternatives tried (TP 2, TP 4) are lines of their own
    typed = (overrides, [*overrides, "hardware.tensor_parallel=3"])
    assert len([c for c in compositions if list(c[0]) in typed]) == 4


def test_another_resolver_is_refused_and_not_cached(compositions, config_dir, tmp_path) -> None:
    """A resolver registered outside t3rl may read anything (here: a counter): a config naming it is
    refused, as in a process where nobody registered it, and nothing is stored."""
    from omegaconf import OmegaConf

    counter = iter(range(100))
    OmegaConf.register_new_resolver("t3rl_test_counter", lambda: f"H200_{next(counter)}")
    try:
        probe = config_dir / "hardware" / "probe.yaml"
        probe.write_text(probe.read_text().replace("gpu_type: H200", "gpu_type: ${t3rl_test_counter:}"))
        for _ in range(2):
            with pytest.raises(ConfigError, match="Unsupported interpolation type t3rl_test_counter"):
                resolve(PROBE, [str(config_dir)])
    finally:
        OmegaConf.clear_resolver("t3rl_test_counter")
    assert next(counter) == 0 and entries(tmp_path) == []


def test_hydra_overrides_and_disabled_cache_skip_it(compositions, config_dir, monkeypatch, tmp_path) -> None:
    resolve(["+experiment=stage2_bfcl", f"hydra.searchpath=[file://{config_dir}]", "hardware=probe"])
    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    resolve(["+experiment=stage2_bfcl"])
    assert entries(tmp_path) == [] and len(compositions) == 2


def test_data_that_would_not_read_back_identical_is_not_stored_nor_scanned(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("T3RL_NO_CACHE", raising=False)
    scanned = calls_of(monkeypatch, compose_cache, "_holds_secret")
    entry = Entry.of(["seed=1"], [])
    assert entry is not None
    provenance = Provenance({"seed": Origin("override `seed=1`", "", 1, 2000)})

    def by_hydra(reads: Reads, data: dict) -> Plain:  # stored at first sight
        reads.by_hydra = True
        return Plain(data, provenance, {})

    for data in ({"seed": (1, 2)}, {"seed": {1: "a"}}, {"seed": float("nan")}):
        compose_cache.cached_compose(["seed=1"], [], lambda reads, data=data: by_hydra(reads, data))
        assert not entry.path.exists()
    assert scanned == []  # the scan, the dearest step, only for what would be written
    compose_cache.cached_compose(
        ["seed=1"], [], lambda reads: by_hydra(reads, {"seed": [1, True, 1.0, None]})
    )
    loaded = entry.load()
    assert loaded is not None and loaded.data == {"seed": [1, True, 1.0, None]} and len(scanned) == 1
    assert [type(v) for v in loaded.data["seed"]] == [int, bool, float, type(None)]


def test_old_entries_are_pruned(compositions, monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(compose_cache, "MAX_ENTRIES", 2)
    for seed in range(4):
        resolve(["+experiment=stage2_bfcl", f"seed={seed}"])
        resolve(["+experiment=stage2_bfcl", f"seed={seed}"])
    assert len(entries(tmp_path)) == 2


def test_on_search_path(config_dir) -> None:
    assert on_search_path("experiment/stage2_bfcl")
    assert not on_search_path("experiment/nope")
    assert on_search_path("hardware/probe", [str(config_dir)])
    assert not on_search_path("hardware/probe")


SEARCH = ["+experiment=stage1_bfcl", "hparams_search=bfcl_lr_kl_reward"]


def test_a_repeated_search_gives_what_a_fresh_composition_gives(compositions, monkeypatch, tmp_path) -> None:
    """A search's command line is composed directly and cached as any other; Hydra's own node (the Optuna
    sweeper's settings) is stored as deferred, and composed by Hydra when read, from a hit too."""
    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    fresh = resolve(SEARCH)
    monkeypatch.delenv("T3RL_NO_CACHE")
    missed, stored, hit = resolve(SEARCH), resolve(SEARCH), resolve(SEARCH)
    assert len(compositions) == 3 and len(entries(tmp_path)) == 1
    assert isinstance(hit.hydra, DeferredHydra)
    assert fresh.hydra["sweeper"]["params"]["reward"] == "choice(progress, binary)"
    for other in (missed, stored, hit):
        assert json.dumps(other.config) == json.dumps(fresh.config) and dict(other.hydra) == dict(fresh.hydra)
        assert dict(other.provenance.items()) == dict(fresh.provenance.items())
    source = hit.provenance.source("objective.metric")
    assert re.search(
        r"hparams_search/bfcl_lr_kl_reward\.yaml:\d+ "  # the file and the line writing the key
        r"\(chosen by override `hparams_search=bfcl_lr_kl_reward`\)$",
        source,
    )


def test_a_changed_search_file_or_sweeper_override_recomposes(compositions, config_dir) -> None:
    dirs = [str(config_dir)]
    (config_dir / "hparams_search").mkdir()
    search = config_dir / "hparams_search" / "probe.yaml"
    search.write_text((CONF / "hparams_search" / "bfcl_lr_kl_reward.yaml").read_text())
    line = ["+experiment=stage1_bfcl", "hparams_search=probe"]
    assert resolve(line, dirs).hydra["sweeper"]["n_trials"] == 12
    search.write_text(search.read_text().replace("n_trials: 12", "n_trials: 13"))
    assert resolve(line, dirs).hydra["sweeper"]["n_trials"] == 13
    assert resolve([*line, "hydra.sweeper.n_trials=3"], dirs).hydra["sweeper"]["n_trials"] == 3
    assert len(compositions) == 3
    assert resolve(line, dirs).hydra["sweeper"]["n_trials"] == 13
    assert len(compositions) == 3


def test_a_changed_hydra_plugin_recomposes_a_search_only(compositions, monkeypatch, tmp_path) -> None:
    """Hydra's plugins store their configs (the Optuna sweeper's) from code: an installed or edited
    `hydra_plugins` module changes what a search composes, not what a plain command line does."""
    resolve(SEARCH), resolve(["+experiment=stage1_bfcl"]), resolve(["+experiment=stage1_bfcl"])
    assert len(compositions) == 3
    plugin = tmp_path / "site" / "hydra_plugins" / "_t3rl_probe"  # a leading _: Hydra never imports it
    plugin.mkdir(parents=True)
    (plugin / "__init__.py").write_text("# a plugin's code\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    resolve(SEARCH), resolve(["+experiment=stage1_bfcl"])
    assert len(compositions) == 4
    (plugin / "__init__.py").write_text("# a plugin's code, edited\n")
    resolve(SEARCH)
    resolve(SEARCH)
    assert len(compositions) == 5


def test_a_search_path_beyond_the_digest_is_never_stored(compositions, config_dir, tmp_path) -> None:
    """`hydra.searchpath` adds directories whose files the digest does not read: given as an override,
    or set in the primary config (Hydra's node then holds it)."""
    resolve([*SEARCH, f"hydra.searchpath=[file://{config_dir}]"])
    assert entries(tmp_path) == []
    provenance = Provenance({"seed": Origin("override `seed=1`", "", 1, 2000)})
    for line, searchpath in ((["seed=1"], ["file:///elsewhere"]), (["seed=2"], [])):
        plain = Plain({"seed": 1}, provenance, {"searchpath": searchpath})
        compose_cache.cached_compose(line, [], lambda reads, plain=plain: plain)
    elsewhere, none = Entry.of(["seed=1"], []), Entry.of(["seed=2"], [])
    assert elsewhere is not None and none is not None
    assert not elsewhere.path.exists() and none.path.exists()


def test_hydras_resolvers_in_its_own_node_leave_a_search_cached(compositions, monkeypatch, tmp_path) -> None:
    """Once Hydra's resolvers are registered (any Hydra app run earlier in the process: setup_globals),
    its merge resolves its own node's `${now:…}` run and sweep dirs. t3rl keeps that node unresolved, so a
    search is stored all the same (in the full suite it was composed on every call); `now` in the
    config's own values is refused, as in a process where Hydra registered nothing."""
    monkeypatch.setattr(BaseContainer, "_resolvers", dict(BaseContainer._resolvers))
    setup_globals()
    resolve(SEARCH), resolve(SEARCH)
    assert resolve(SEARCH).hydra["sweeper"]["n_trials"] == 12
    assert len(compositions) == 2 and len(entries(tmp_path)) == 1
    stamped = ["+experiment=stage1_bfcl", "tracking.run_name=run-${now:%H%M%S}"]
    for _ in range(2):
        with pytest.raises(ConfigError, match="t3rl registers no resolver now"):
            resolve(stamped)
    assert len(entries(tmp_path)) == 1
