"""The composition cache keys a command line on where the working directory lies against the search path,
not on the directory itself: a line composed from any directory outside the search path is one entry, and
from anywhere a hit gives what a fresh composition there gives (provenance names files relative to the
working directory when below it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import launch.config.resolved as resolved_module
from launch.config.plain import Plain, Reads
from launch.config.search_path import PACKAGE, package_dir
from tests.support.recorded_calls import calls_of

CONF = package_dir(PACKAGE)
LINE = ["+experiment=quickstart", "seed=3", "hardware=probe"]


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Working directories around the search path: unrelated ones, the package's config dir and one of its
    groups, the directory above it, a user config dir, one of its groups and the directory above it."""
    root = tmp_path_factory.mktemp("places")
    user = root / "above" / "user_conf"
    (user / "hardware").mkdir(parents=True)
    text = (CONF / "hardware" / "h200x8.yaml").read_text().replace("name: h200x8", "name: probe")
    (user / "hardware" / "probe.yaml").write_text(text)
    for name in ("one", "two"):
        (root / name).mkdir()
    return {
        "one": root / "one",
        "two": root / "two",
        "conf": CONF,
        "conf/model": CONF / "model",
        "above conf": CONF.parent,
        "user": user,
        "user/hardware": user / "hardware",
        "above user": user.parent,
    }


def _composed(where: Path, dirs: list[str]) -> Plain:
    before = os.getcwd()
    os.chdir(where)
    try:
        return resolved_module.composed_plain(LINE, dirs)
    finally:
        os.chdir(before)


def _fresh(where: Path, dirs: list[str]) -> Plain:
    before = os.getcwd()
    os.chdir(where)
    try:
        return resolved_module.plain_composition(LINE, dirs, Reads())
    finally:
        os.chdir(before)


def test_a_line_composed_from_two_unrelated_directories_is_composed_once(
    place: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("T3RL_NO_CACHE", raising=False)
    counted = calls_of(monkeypatch, resolved_module, "plain_composition")
    dirs = [str(place["user"])]
    _composed(place["one"], dirs)  # marked; stored the second time (`Entry.first_sight`)
    first = _composed(place["one"], dirs)
    second = _composed(place["two"], dirs)
    assert len(counted) == 2
    assert dict(second.provenance.items()) == dict(first.provenance.items())
    probe = str(place["user"] / "hardware" / "probe.yaml")
    assert second.provenance.source("hardware.name").startswith(probe)


@settings(max_examples=15)
@given(order=st.lists(st.sampled_from(range(8)), min_size=2, max_size=6))
def test_from_any_directory_a_hit_gives_what_a_fresh_composition_there_gives(
    place: dict[str, Path], tmp_path_factory: pytest.TempPathFactory, order: list[int]
) -> None:
    """Directories visited in any order, each composition (hit or miss) equal to a fresh one in the same
    directory: a key that ignored the working directory would hand a file name shown relative to another."""
    names = sorted(place)
    dirs = [str(place["user"])]
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        monkeypatch.delenv("T3RL_NO_CACHE", raising=False)
        for index in order:
            where = place[names[index]]
            cached, fresh = _composed(where, dirs), _fresh(where, dirs)
            assert cached.data == fresh.data
            assert dict(cached.provenance.items()) == dict(fresh.provenance.items()), names[index]
            assert cached.provenance.shadowed == fresh.provenance.shadowed
