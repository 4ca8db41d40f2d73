"""`launch.run.rundir.git_state` reads the commit and whether tracked files changed from one `git status
--porcelain=v2 --branch` (every plan and run records both): the same answer as `rev-parse HEAD` and
`status --porcelain` gave, in every state a checkout can be in, with one git process where there were two;
a git without porcelain v2 (or not a work tree) falls back to the two commands."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from launch.run import rundir
from launch.run.rundir import git_state

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def two_commands(repo: Path) -> dict[str, Any]:
    """git_state as it was: `rev-parse HEAD`, then `status --porcelain --untracked-files=no`."""

    def git(*args: str) -> str | None:
        done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=10)
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    if sha is None:
        return {"sha": None, "dirty": None}
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "dirty": bool(status) if status is not None else None}


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)


def _committed(repo: Path) -> Path:
    _git(repo, "init", "-q")
    for name in ("a.txt", "# hash.txt", "dir/b.txt"):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


STATES: dict[str, Callable[[Path], object]] = {
    "not a repository": lambda r: None,
    "no commit yet": lambda r: _git(r, "init", "-q"),
    "no commit, a file staged": lambda r: (
        _git(r, "init", "-q"),
        (r / "x").write_text("x"),
        _git(r, "add", "x"),
    ),
    "clean": _committed,
    "a tracked file changed": lambda r: (_committed(r), (r / "a.txt").write_text("changed")),
    "a file named '# …' changed": lambda r: (_committed(r), (r / "# hash.txt").write_text("changed")),
    "a file staged": lambda r: (_committed(r), (r / "new.txt").write_text("n"), _git(r, "add", "new.txt")),
    "a file deleted": lambda r: (_committed(r), (r / "dir" / "b.txt").unlink()),
    "a file renamed": lambda r: (_committed(r), _git(r, "mv", "a.txt", "c.txt")),
    "untracked only": lambda r: (_committed(r), (r / "untracked.txt").write_text("u")),
    "detached head": lambda r: (_committed(r), _git(r, "checkout", "-q", "--detach")),
    "a mode changed": lambda r: (_committed(r), (r / "a.txt").chmod(0o755)),
    "a branch with an upstream, clean": lambda r: _cloned(r),
    "a branch with an upstream, changed": lambda r: (_cloned(r), (r / "a.txt").write_text("changed")),
}


def _cloned(repo: Path) -> None:
    """A clone: its status header names an upstream and how far ahead it is, more lines than a change's."""
    origin = repo.with_name("origin")
    origin.mkdir()
    _committed(origin)
    _git(repo.parent, "clone", "-q", str(origin), repo.name)
    (repo / "more.txt").write_text("m")
    _git(repo, "add", "more.txt")
    _git(repo, "commit", "-q", "-m", "ahead")


@pytest.mark.parametrize("state", list(STATES))
def test_the_same_state_as_the_two_commands_gave(state: str, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    STATES[state](repo)
    assert git_state(repo) == two_commands(repo)
    if state in (
        "clean",
        "a tracked file changed",
        "untracked only",
        "a branch with an upstream, clean",
    ):  # not vacuous: both kinds of answer
        assert git_state(repo)["dirty"] is (state == "a tracked file changed")


def _counting_git(bin_dir: Path, log: Path, refuse_v2: bool) -> None:
    """A `git` on PATH that logs each call and runs the real one (refusing porcelain v2 if asked, as a
    git before 2.11 does: exit 129)."""
    bin_dir.mkdir()
    real = shutil.which("git")
    script = bin_dir / "git"
    refuse = 'if "--porcelain=v2" in sys.argv: sys.exit(129)\n' if refuse_v2 else ""
    script.write_text(
        f"#!{sys.executable}\nimport os, sys\n"
        f"open({str(log)!r}, 'a').write(' '.join(sys.argv[3:]) + '\\n')\n"
        f"{refuse}os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
    )
    script.chmod(0o755)


@pytest.mark.parametrize("refuse_v2", [False, True], ids=["porcelain v2", "an old git"])
@pytest.mark.parametrize("state", ["clean", "a tracked file changed", "no commit yet", "not a repository"])
def test_one_git_process_for_a_checkout(
    state: str, refuse_v2: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    STATES[state](repo)
    expected = two_commands(repo)
    log = tmp_path / "calls"
    _counting_git(tmp_path / "bin", log, refuse_v2)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert git_state(repo) == expected
    calls = log.read_text().splitlines()
    if not refuse_v2 and state != "not a repository":
        assert len(calls) == 1, calls  # was two: rev-parse HEAD, then status
    else:  # the fallback: rev-parse, then status only when there is a commit
        assert calls[-1].startswith("rev-parse" if expected["sha"] is None else "status --porcelain ")


def test_git_missing_gives_no_state(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert rundir.git_state(tmp_path) == {"sha": None, "dirty": None}
