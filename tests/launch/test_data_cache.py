"""Prepared data is stored once per content key under <paths.cache_dir>/data and linked into runs:
runs (and sweep points running at once) with the same env share one copy; another env config gets
its own."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_cli_run import EXPERIMENT, invoke

pytestmark = pytest.mark.slow


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR"):
        monkeypatch.delenv(name, raising=False)
    conf = tmp_path / "myconf" / "experiment"
    conf.mkdir(parents=True)
    (conf / "cli_data_only.yaml").write_text(EXPERIMENT)
    return tmp_path


def _data_links(root: Path) -> list[Path]:
    return sorted(root.rglob("stages/prepare_data/data"))


def test_points_at_once_share_one_copy_and_another_env_gets_its_own(workdir: Path) -> None:
    conf = str(workdir / "myconf")
    # Two points with the same env (only the run seed differs) prepare at the same moment.
    result = invoke("run", "-m", "+experiment=cli_data_only", "seed=1,2", "executor.max_parallel=2",
                    "--config-dir", conf)  # fmt: skip
    assert result.exit_code == 0, result.output
    links = _data_links(workdir / "runs")
    assert len(links) == 2 and all(link.is_symlink() for link in links)
    (copy,) = {os.path.realpath(link) for link in links}
    assert Path(copy).parent == workdir / "cache" / "data"
    assert sorted(p.name for p in (workdir / "cache" / "data").iterdir()) == [Path(copy).name]  # no leftovers
    assert json.loads((Path(copy) / "manifest.json").read_text())["splits"]["bfcl_test"]["rows"] == 75

    # A later run with the same env only links it; another data seed is another copy.
    again = invoke("run", "+experiment=cli_data_only", "--config-dir", conf)
    assert again.exit_code == 0, again.output
    newest = max(_data_links(workdir / "runs" / "cli_data_only"), key=lambda p: p.lstat().st_mtime)
    assert os.path.realpath(newest) == copy
    assert "prepared before: same content key" in (newest.parent / "log.txt").read_text()
    other = invoke("run", "+experiment=cli_data_only", "env.data.seed=7", "--config-dir", conf)
    assert other.exit_code == 0, other.output
    assert len(list((workdir / "cache" / "data").iterdir())) == 2
