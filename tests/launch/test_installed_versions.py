"""t3rl_core.installed reads versions from dist-info directory names: the same versions
importlib.metadata reads from the METADATA files (a prepared dataset's content key and every run
manifest hold them), and None for what is not installed."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

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
