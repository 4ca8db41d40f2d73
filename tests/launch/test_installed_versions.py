"""t3rl_core.installed reads versions from dist-info directory names: the same versions
importlib.metadata reads from the METADATA files (a prepared dataset's content key and every run
manifest hold them), and None for what is not installed."""

from __future__ import annotations

import os
import sys
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pydantic
import pytest

from t3rl_core import installed
from t3rl_core.data import DATA_PACKAGES
from t3rl_core.installed import MANIFEST_PACKAGES, package_versions


def _metadata_version(name: str) -> str | None:
    try:
        return version(name)
    except PackageNotFoundError:
        return None


def test_the_versions_are_those_importlib_metadata_reads() -> None:
    names = (*DATA_PACKAGES, *MANIFEST_PACKAGES, "PyYAML", "typing_extensions", "no-such-distribution-x")
    found = package_versions(names)
    assert found == {name: _metadata_version(name) for name in names}
    assert found["bfcl-eval"] is not None and found["no-such-distribution-x"] is None


_LISTED: list[str] = []


def _audit(event: str, args: tuple) -> None:
    if event == "os.listdir":
        _LISTED.append(os.fspath(args[0]))


sys.addaudithook(_audit)


def _settled_dir(root: Path, *dists: str) -> Path:
    for dist in dists:
        (root / f"{dist}.dist-info").mkdir()
    then = time.time() - 60
    os.utime(root, (then, then))
    return root


def _later(monkeypatch: pytest.MonkeyPatch, seconds: float) -> None:
    now = time.time_ns()
    monkeypatch.setattr(installed.time, "time_ns", lambda: now + int(seconds * 1e9))


def test_an_unchanged_settled_directory_is_not_listed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every composition and every plan of a tiny model asks; site-packages was listed each time."""
    root = _settled_dir(tmp_path, "alpha_pkg-1.2")
    monkeypatch.syspath_prepend(str(root))
    _later(monkeypatch, 10)
    assert package_versions(("alpha-pkg",)) == {"alpha-pkg": "1.2"}
    expected = {"alpha-pkg": "1.2", "pydantic": _metadata_version("pydantic")}
    _LISTED.clear()
    assert package_versions(("alpha-pkg", "pydantic")) == expected
    # Only these two are known to be settled: the suite's own checkout, also on sys.path, changes
    # while other workers' tests run in it, and a changed directory is rightly listed again.
    site_packages = str(Path(pydantic.__file__).resolve().parent.parent)
    assert [d for d in _LISTED if Path(d).resolve() in (root.resolve(), Path(site_packages))] == []


@pytest.mark.parametrize("change", ["installed", "removed", "upgraded"])
def test_a_distribution_installed_or_removed_is_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    root = _settled_dir(tmp_path, "alpha_pkg-1.2")
    monkeypatch.syspath_prepend(str(root))
    _later(monkeypatch, 10)
    assert package_versions(("alpha-pkg", "beta-pkg")) == {"alpha-pkg": "1.2", "beta-pkg": None}
    if change == "installed":
        (root / "beta_pkg-0.1.dist-info").mkdir()
        expected = {"alpha-pkg": "1.2", "beta-pkg": "0.1"}
    elif change == "removed":
        (root / "alpha_pkg-1.2.dist-info").rmdir()
        expected = {"alpha-pkg": None, "beta-pkg": None}
    else:
        (root / "alpha_pkg-1.2.dist-info").rename(root / "alpha_pkg-1.3.dist-info")
        expected = {"alpha-pkg": "1.3", "beta-pkg": None}
    assert package_versions(("alpha-pkg", "beta-pkg")) == expected


def test_a_directory_changed_within_the_settling_time_is_listed_every_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "alpha_pkg-1.2.dist-info").mkdir()
    monkeypatch.syspath_prepend(str(tmp_path))
    package_versions(("alpha-pkg",))
    _LISTED.clear()
    package_versions(("alpha-pkg",))
    assert str(tmp_path) in _LISTED
