"""A composition with Hydra keeps each config file's load for the process (`hydra_internals._kept_loads`):
a settled, unchanged file's OmegaConf tree is not built again, what a composition gets is its own copy, and a
file changed in any way (even at the same size and modification time) is loaded again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from launch.config import compose
from launch.config import hydra_internals as internals
from launch.config.search_path import PACKAGE, package_dir
from tests.support.recorded_calls import calls_of

LINES = [
    ["+experiment=quickstart"],
    ["+experiment=stage2_bfcl", "hardware.nodes=2", "env=bfcl_multi_turn"],
    ["+experiment=toolrl_grpo", "~seed"],
]


def _plain(line: list[str], dirs: tuple[str, ...] = ()) -> tuple[object, ...]:
    composition = compose.compose(line, dirs)
    return (
        OmegaConf.to_container(composition.config, resolve=False),
        OmegaConf.to_container(composition.hydra, resolve=False),
        [
            (layer.config_path, layer.source, OmegaConf.to_container(layer.content))
            for layer in composition.layers
        ],
        composition.choices,
    )


def test_a_second_composition_builds_no_settled_file_again(monkeypatch: pytest.MonkeyPatch) -> None:
    compose.compose(LINES[0])
    calls = calls_of(monkeypatch, OmegaConf, "load")
    compose.compose(LINES[0])
    assert calls == []  # was one load per file of the defaults list


@pytest.mark.parametrize("line", LINES, ids=[" ".join(line) for line in LINES])
def test_each_composition_gets_its_own_copy_and_what_a_fresh_load_gives(
    line: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(internals, "_LOADS", {})
    fresh = _plain(line)
    assert internals._LOADS  # the shipped files are settled
    assert _plain(line) == fresh
    assert _plain(line) == fresh  # Hydra edits what it loads: a shared tree would differ by now


def test_a_file_changed_at_the_same_size_and_time_is_loaded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(internals, "_SETTLED_NS", -1)  # every status trusted at once
    probe = tmp_path / "hardware" / "probe.yaml"
    probe.parent.mkdir()
    shipped = package_dir(PACKAGE) / "hardware" / "h200x8.yaml"
    probe.write_text(shipped.read_text().replace("name: h200x8", "name: probe"))
    line, dirs = ["+experiment=quickstart", "hardware=probe"], (str(tmp_path),)
    assert OmegaConf.select(compose.compose(line, dirs).config, "hardware.gpu_memory_gib") == 141
    status = probe.stat()
    probe.write_text(probe.read_text().replace("gpu_memory_gib: 141", "gpu_memory_gib: 140"))
    os.utime(probe, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert probe.stat().st_size == status.st_size and probe.stat().st_mtime_ns == status.st_mtime_ns
    assert OmegaConf.select(compose.compose(line, dirs).config, "hardware.gpu_memory_gib") == 140
