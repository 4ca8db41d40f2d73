"""First hour, hunted (wave nine): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave nine)"). Each fails on the code before its
fix; in-process, on run dirs written by hand in the shape t3rl writes them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from launch.cli import runs_configs


def _run_dir(root: Path, name: str) -> Path:
    path = root / "quick" / name
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("name: quick\nseed: 42\nstages:\n  a:\n    kind: eval\n")
    return path


def _listed(runs_dir: Path) -> Path:
    """What one listing of `runs_dir` keeps: every run's config read, then saved. Its cache file."""
    cache = runs_configs.ListingCache(runs_dir)
    for config in sorted(runs_dir.glob("*/*/config.yaml")):
        cache.read(config)
    cache.save()
    return cache.file


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("T3RL_NO_CACHE", raising=False)
    return tmp_path / "cache" / "runs"


def test_the_listing_cache_of_a_runs_dir_removed_is_pruned(tmp_path: Path, cache_dir: Path) -> None:
    """`t3rl runs` kept one file per runs dir it ever listed, never pruned (wave eight's leftover): a
    runs dir removed left its file for good. Now a file names its runs dir first, and a listing's save
    removes each file whose runs dir is gone; a run dir removed is dropped from its runs dir's file."""
    gone, kept = tmp_path / "gone", tmp_path / "kept"
    _run_dir(gone, "20261129-000001")
    first, second = _run_dir(kept, "20261129-000001"), _run_dir(kept, "20261129-000002")
    gone_file = _listed(gone)
    kept_file = _listed(kept)
    assert gone_file.exists() and json.loads(gone_file.read_text())["runs_dir"] == str(gone.resolve())
    shutil.rmtree(gone)
    shutil.rmtree(second)
    assert _listed(kept) == kept_file
    assert not gone_file.exists()
    assert list(json.loads(kept_file.read_text())["configs"]) == [str(first.resolve())]
    assert sorted(cache_dir.iterdir()) == [kept_file]


def test_the_listing_cache_stays_within_its_size_bound(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files of every runs dir listed stay within MAX_BYTES together, the least recently used
    removed first (a listing reading its file touches it); a listing whose file alone would pass the
    bound keeps none (and reads its configs each time, as with the cache off)."""
    dirs = [tmp_path / f"runs{i}" for i in range(4)]
    files = []
    for i, runs_dir in enumerate(dirs):
        _run_dir(runs_dir, "20261129-000001")
        files.append(_listed(runs_dir))
        os.utime(files[-1], (1_000_000 + i, 1_000_000 + i))  # written in this order, a second apart
    size = files[0].stat().st_size
    runs_configs.ListingCache(dirs[0])  # runs0 read again: used last, though written first
    monkeypatch.setattr(runs_configs, "MAX_BYTES", 2 * size + size // 2)
    _run_dir(dirs[3], "20261129-000002")  # runs3 changed: its file rewritten, the bound held
    files[3] = _listed(dirs[3])
    left = sorted(cache_dir.iterdir())
    assert sum(f.stat().st_size for f in left) <= runs_configs.MAX_BYTES
    assert left == sorted([files[0], files[3]]), left  # runs1 and runs2 were the least recently used
    monkeypatch.setattr(runs_configs, "MAX_BYTES", size // 2)
    _run_dir(dirs[0], "20261129-000002")
    _listed(dirs[0])
    assert sorted(cache_dir.iterdir()) == [], "a file alone past the bound is kept nowhere"


# ------------------------------------------------ t3rl's own configs by the package it installs


ROOT = Path(__file__).resolve().parents[2]


def _checkout_only_imports() -> list[str]:
    """Every import in launch/ and t3rl_core/ of a top-level folder of the checkout that t3rl does not
    install as a package (`conf`, `tests`, `examples`, …): importable only with the checkout on sys.path.
    Read line by line (an import statement starts its line; parsing every module costs seconds)."""
    import re

    from launch.cli.failures import OWN_PACKAGES

    folders = {p.name for p in ROOT.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    statement = re.compile(r"^\s*(?:from\s+(\w+)[\w.]*\s+import\b|import\s+([\w., ]+?)\s*(?:#.*)?$)")
    found = []
    for package in ("launch", "t3rl_core"):
        for file in sorted((ROOT / package).rglob("*.py")):
            for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
                match = statement.match(line)
                if match is None:
                    continue
                names = [match[1]] if match[1] else [n.split(" as ")[0].strip() for n in match[2].split(",")]
                for name in names:
                    top = name.partition(".")[0]
                    if top in folders and top not in OWN_PACKAGES:
                        found.append(f"{file.relative_to(ROOT)}:{number}: import {name}")
    return found


def test_no_module_imports_the_checkouts_layout_instead_of_what_t3rl_installs() -> None:
    """`t3rl validate --config-dir /no/such/dir +experiment=quickstart`, the installed console script,
    answered `error: the Python module 'conf' is not installed …: run ./scripts/setup.sh` (exit 1): two
    checks read t3rl's own configs with `import conf`, the repo folder's name, which imports only with the
    checkout on sys.path (the tests' PYTHONPATH=.), never as installed (the package is `t3rl_conf`,
    launch.config.search_path.PACKAGE). Now they read it there, and no module of launch/ or t3rl_core/
    imports a checkout folder t3rl does not install (failures.OWN_PACKAGES declares those it does)."""
    assert _checkout_only_imports() == []


def test_a_config_dir_that_does_not_exist_is_named_without_the_checkout_on_the_path(
    here: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same command in process, `conf` made unimportable as it is for the console script."""
    import sys

    from typer.testing import CliRunner

    from launch.cli.app import app

    monkeypatch.setitem(sys.modules, "conf", None)  # `import conf` raises, as outside the checkout
    done = CliRunner().invoke(app, ["validate", "--config-dir", str(here / "nope"), "+experiment=quickstart"])
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and "error --config-dir: config directory" in text, text
    assert "does not exist" in text, text


# ------------------------------------------------ `--opt=~/x`: the `~` no shell expanded


def test_a_path_option_written_with_equals_and_a_tilde_reads_the_home_dir(
    tmp_path: Path, cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl runs --runs-dir=~/runs`, `t3rl plan --run-dir=~/runs/…`, `t3rl eval … --out=~/ev`: a shell
    expands `~` only at a word's start, so t3rl got the `~` as a folder's name and answered `no runs dir
    there` (exit 0), or previewed `./~/runs/…` as a new plan's place. Now every parameter that names a
    file or directory (help_format.PATH_METAVARS) reads `~` as the shell would have, before any command
    sees it (an option as `--opt=value` or `--opt value`, an argument quoted)."""
    from typer.testing import CliRunner

    from launch.cli.app import app

    monkeypatch.setenv("HOME", str(tmp_path))
    run = _run_dir(tmp_path / "runs", "20261129-000001")
    listed = CliRunner().invoke(app, ["runs", "--runs-dir=~/runs"])
    assert listed.exit_code == 0 and "quick/20261129-000001" in listed.output, listed.output
    shown = CliRunner().invoke(app, ["runs", "show", "~/runs/quick/20261129-000001"])
    assert shown.exit_code == 0 and str(run) in " ".join(shown.output.split()), shown.output


# ------------------------------------------------ `t3rl score` of lines that are no lines of its world


def test_score_of_a_t3rl_eval_record_or_another_worlds_lines_is_refused_before_writing(
    here: Path,
) -> None:
    """`t3rl score bfcl runs/…/stages/eval_reference/trajectories.jsonl` (the help's example names that
    very file): each of its lines failed as `missing decoded`, exit 1, and a `trajectories.scored/` dir
    was written into the run's record; a file of another world's lines failed each line alike. Now the
    first lines are read for the world's form before anything is written: t3rl's own eval records are
    named as such (their verdicts are the summary beside them), another world's lines get the command
    of the world they fit, which scores them."""
    from typer.testing import CliRunner

    from launch.cli.app import app
    from launch.cli.score import EVAL_RECORD_KEYS

    stage = here / "runs" / "quick" / "20261129-000001" / "stages" / "eval_reference"
    stage.mkdir(parents=True)
    record = {"task_id": "multi_turn_base_1", "status": "completed", "messages": []}
    record |= {key: [] for key in EVAL_RECORD_KEYS}
    (stage / "trajectories.jsonl").write_text(json.dumps(record) + "\n")
    wide = {"COLUMNS": "1000"}  # the refusal's panel on one line
    done = CliRunner().invoke(app, ["score", "bfcl", str(stage / "trajectories.jsonl")], env=wide)
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and "holds the episodes of a t3rl eval" in text, text
    assert "summary.json and report.md beside it" in text, text
    assert sorted(p.name for p in stage.iterdir()) == ["trajectories.jsonl"], "nothing written"

    answer = {"id": "1", "response": "<answer>4</answer>", "answer": "4"}
    (here / "answers.jsonl").write_text(json.dumps(answer) + "\n")
    done = CliRunner().invoke(app, ["score", "bfcl", "answers.jsonl"], env=wide)
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and "answers.jsonl has no bfcl line (its one line read" in text, text
    fix = text.split("did you mean ", 1)[1].split("?", 1)[0]
    assert fix == "t3rl score retool answers.jsonl", text
    applied = CliRunner().invoke(app, [*fix.split()[1:], "--no-progress"])
    assert applied.exit_code == 0 and "1 scored, 0 failed to score" in applied.output, applied.output


# ------------------------------------------------ a group's option after its command: the line itself


@pytest.mark.parametrize("form", ["--runs-dir={}", "--runs-dir {}"])
def test_a_group_option_after_its_command_is_answered_with_the_line_that_works(
    form: str, tmp_path: Path, cache_dir: Path
) -> None:
    """`t3rl runs show --runs-dir=old`: `… so it goes before show: t3rl runs --runs-dir … show …`, a
    line of `…` to fill in. Now the fix is the line typed with the option (and its value, either form)
    moved before the command, which shows the newest run there."""
    import shlex

    from typer.testing import CliRunner

    from launch.cli.app import app

    run = _run_dir(tmp_path / "old", "20261129-000001")
    typed = ["runs", "show", *form.format(tmp_path / "old").split(" ")]
    done = CliRunner().invoke(app, typed, env={"COLUMNS": "1000"})
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and "so it goes before `show`: t3rl runs --runs-dir" in text, text
    fix = text.split("goes before `show`: ", 1)[1].split(" │", 1)[0]
    assert fix == shlex.join(["t3rl", "runs", *typed[2:], "show"]), fix
    applied = CliRunner().invoke(app, shlex.split(fix)[1:])
    assert applied.exit_code == 0 and str(run) in " ".join(applied.output.split()), applied.output


def test_a_group_option_its_command_does_not_read_is_answered_with_the_line_without_it(
    tmp_path: Path, cache_dir: Path
) -> None:
    """`t3rl runs show RUN --status failed`: `drop it (it applies to the listing: t3rl runs --status …)`.
    Now also the line typed without it, which shows the run."""
    import shlex

    from typer.testing import CliRunner

    from launch.cli.app import app

    run = _run_dir(tmp_path / "runs", "20261129-000001")
    done = CliRunner().invoke(app, ["runs", "show", str(run), "--status", "failed"], env={"COLUMNS": "1000"})
    text = " ".join(done.output.split())
    assert done.exit_code == 2 and "does not read: drop it" in text, text
    fix = text.split("; without it: ", 1)[1].split(" │", 1)[0]
    assert fix == shlex.join(["t3rl", "runs", "show", str(run)]), fix
    applied = CliRunner().invoke(app, shlex.split(fix)[1:])
    assert applied.exit_code == 0 and str(run) in " ".join(applied.output.split()), applied.output
