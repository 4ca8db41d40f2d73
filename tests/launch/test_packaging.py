"""conf/ ships inside the wheel as `t3rl_conf`, and composing works from the wheel in another directory.

The wheel is built from a copy of the sources (the repo stays untouched) with pip's build isolation,
unpacked, and imported from a fresh process whose working directory is elsewhere.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "setup.py", "README.md", "conf", "launch", "t3rl_core")

PROBE = """
import json, launch, t3rl_conf
from launch.checks.resolve import resolve
resolved = resolve(["+experiment=stage1_bfcl", "model=qwen3_8b"])
print(json.dumps({
    "launch": launch.__file__,
    "conf": t3rl_conf.__file__,
    "model": resolved.run.model.name,
    "stages": list(resolved.run.stages),
    "source": resolved.provenance.source("stages.train.curriculum.num_rollout"),
}))
"""


@pytest.fixture(scope="module")
def unpacked_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            src.mkdir(exist_ok=True)
            shutil.copy2(path, src / name)
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = dist.glob("t3rl-*.whl")
    site = root / "site"
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


@pytest.mark.slow
def test_wheel_holds_every_config_file(unpacked_wheel: Path) -> None:
    ours = sorted(p.relative_to(REPO / "conf") for p in (REPO / "conf").rglob("*.yaml"))
    shipped = sorted(
        p.relative_to(unpacked_wheel / "t3rl_conf") for p in (unpacked_wheel / "t3rl_conf").rglob("*.yaml")
    )
    assert ours and shipped == ours
    assert (unpacked_wheel / "t3rl_conf" / "__init__.py").is_file()


@pytest.mark.slow
def test_composes_from_the_wheel_in_another_directory(unpacked_wheel: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**os.environ, "PYTHONPATH": str(unpacked_wheel)}
    result = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["launch"].startswith(str(unpacked_wheel))
    assert report["conf"].startswith(str(unpacked_wheel))
    assert report["model"] == "qwen3_8b"
    assert report["stages"] == ["data", "to_torch_dist", "train", "to_hf", "eval"]
    assert report["source"].startswith(str(unpacked_wheel / "t3rl_conf" / "curriculum" / "bfcl_stage1.yaml"))
