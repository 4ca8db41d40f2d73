"""`t3rl ls` lists plain config dirs without Hydra (launch.config.direct.listing), printing what the
listing through Hydra prints: every group, one group (with the registry names of env), a user's dir with
options of its own, one of them hidden by t3rl's, a missing dir, and a group that does not exist."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from launch.cli import completion
from launch.cli.inspect import ls_command
from launch.config import compose
from launch.config.direct import listing, search_files

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def user_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("my_conf")
    files = {
        "model/my_model.yaml": "# My own model. Second sentence.\nhf_id: me/x\n",
        "experiment/quickstart.yaml": "# Hidden by t3rl's.\n# @package _global_\nname: mine\n",
        "env/my_env.yaml": "# An env by import path, e.g. a plugin.\nname: my_pkg.envs:MyEnv\n",
        "local/default.yaml": "seed: 7\n",
        "mygroup/a.yaml": "# A group of its own\nx: 1\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return str(root)


def _printed(group: str | None, dirs: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = ls_command(group, dirs)
    out, err = capsys.readouterr()
    return code, out, err


FORMS = [
    (None, False),
    (None, True),
    ("env", True),
    ("model", False),
    ("mygroup", True),
    ("nosuch", False),
    ("modl", True),
]


@pytest.mark.parametrize(("group", "with_user_dir"), FORMS)
def test_ls_prints_what_the_hydra_listing_prints(
    group: str | None,
    with_user_dir: bool,
    user_dir: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dirs = [user_dir] if with_user_dir else []
    assert listing.direct_listing(dirs) is not None  # else both sides below list through Hydra
    direct = _printed(group, dirs, capsys)
    assert "* = the default" in direct[1] if direct[0] == 0 else "error" in direct[2]
    monkeypatch.setattr(listing, "direct_listing", lambda config_dirs: None)
    assert direct == _printed(group, dirs, capsys)


def test_a_missing_dir_is_left_to_hydra(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = str(tmp_path / "missing")
    assert listing.direct_listing([missing]) is None
    code, out, err = _printed("model", [missing], capsys)
    assert (code, out) == (2, "") and f"config directory {missing} does not exist" in err


def test_ls_imports_no_hydra(user_dir: str) -> None:
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: print(json.dumps(sorted(sys.modules)), file=sys.__stderr__))\n"
        "sys.argv[0] = 't3rl'\n"
        "from launch.cli import main\n"
        "main()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", probe, "ls", "env", "--config-dir", user_dir],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stderr.strip().splitlines()[-1])
    assert "my_pkg.envs:MyEnv" in done.stdout
    assert [m for m in modules if m.split(".")[0] in ("hydra", "omegaconf")] == []


@pytest.mark.parametrize(
    "files",
    [
        {"env/mine.yaml": "name: ${oc.env:HOME}\n"},  # Hydra's load resolves it
        {"model/a.b": "", "model/a.b.yaml": "x: 1\n"},  # Hydra lists an option `a` for it
        {"model/bad.yaml": "x: [\n"},  # Hydra's load refuses it
    ],
    ids=["interpolated name", "dotted name beside its yaml", "invalid yaml"],
)
def test_what_hydra_lists_otherwise_is_left_to_it(files: dict[str, str], tmp_path: Path) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert listing.direct_listing([str(tmp_path)]) is None
    # The options alone are Hydra's but for the dotted name.
    assert (search_files.group_options("model", [str(tmp_path)]) is None) == ("model/a.b" in files)


@pytest.mark.parametrize("with_user_dir", [False, True])
def test_group_options_are_hydras(with_user_dir: bool, user_dir: str) -> None:
    """What `t3rl check-template` asks of the model group (and any other)."""
    dirs = [user_dir] if with_user_dir else []
    for group in ("model", "experiment", "env", "mygroup", "nosuch"):
        assert search_files.group_options(group, dirs) == compose.group_options(group, dirs)


def test_an_option_that_is_no_file_is_left_to_hydra(tmp_path: Path) -> None:
    (tmp_path / "model" / "qwen3_8b.yaml").mkdir(parents=True)  # Hydra lists t3rl's file, skips this
    (tmp_path / "model" / "mine.yaml").mkdir()  # Hydra skips it
    assert search_files.group_options("model", [str(tmp_path)]) is None
    assert listing.direct_listing([str(tmp_path)]) is None


def test_check_template_finds_a_model_option_without_hydra(monkeypatch: pytest.MonkeyPatch) -> None:
    from launch.cli import check_template

    def hydra(*args: object) -> list[str]:
        raise AssertionError("listed through Hydra")

    monkeypatch.setattr(compose, "group_options", hydra)
    label, _, parsers = check_template._target("qwen3_8b", [], [])
    assert label == "qwen3_8b (qwen3)" and parsers.tool_call_parser


@pytest.mark.parametrize("with_user_dir", [False, True])
def test_completion_offers_what_hydra_lists(
    with_user_dir: bool, user_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl ls <TAB>` and `t3rl validate model=<TAB>`: the groups and options, read without Hydra."""
    ctx = SimpleNamespace(params={"config_dir": [user_dir] if with_user_dir else []})

    def offered() -> tuple[object, ...]:
        typed = ("", "m", "model=", "model=qwen3", "mygroup=", "+exp", "env=my")
        return (completion.groups(ctx, ""), *(completion.overrides(ctx, t) for t in typed))

    with monkeypatch.context() as patch:
        patch.setattr(search_files, "groups", lambda config_dirs: None)
        patch.setattr(search_files, "group_options", lambda group, config_dirs: None)
        by_hydra = offered()
    assert "model=qwen3_8b" in by_hydra[3] and ("mygroup=a" in by_hydra[5]) == with_user_dir

    def hydra(*args: object) -> list[str]:
        raise AssertionError("listed through Hydra")

    monkeypatch.setattr(compose, "groups", hydra)
    monkeypatch.setattr(compose, "group_options", hydra)
    assert offered() == by_hydra
