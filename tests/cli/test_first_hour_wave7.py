"""First hour, hunted (wave seven): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave seven)"). Each fails on the code before its
fix; in-process where the kind allows."""

from __future__ import annotations

import ast
import contextlib
import io
import itertools
import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.counts import counted
from tests.launch.test_cli_help import complete

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------ `python -m t3rl_core.X --help` of every module a doc names


def _modules_the_docs_run() -> list[str]:
    """Every `python -m t3rl_core.…` module named in README.md or the docs site's pages."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = {m for page in pages for m in re.findall(r"python -m (t3rl_core[\w.]*\w)", page.read_text())}
    return sorted(found)


def _help_of(module: str) -> tuple[object, str]:
    """`python -m MODULE --help` in this process: its exit code and stdout."""
    out = io.StringIO()
    code: object = 0
    argv = sys.argv
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module was imported before
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
    finally:
        sys.argv = argv
    return code or 0, out.getvalue()


def test_the_docs_name_the_modules_they_run() -> None:
    """The scan below reads what it must (else the next test would pass on nothing)."""
    assert {"t3rl_core.data.check", "t3rl_core.lifetime", "t3rl_core.sandbox.local"} <= set(
        _modules_the_docs_run()
    )


@pytest.mark.parametrize("module", _modules_the_docs_run())
def test_every_module_a_doc_runs_answers_help(module: str) -> None:
    """`python -m t3rl_core.data.check --help` (resume.md tells users to run it). Was: `--help/manifest.json:
    not a readable data manifest` (exit 1); `lifetime --help` tried to exec `--help`, `sandbox.local --help`
    ran the probe, `secret_launch --help` printed its usage on stderr, exit 2. Now every module the docs
    name prints its usage on stdout and exits 0 (`t3rl_core/module_help.py` for those reading argv by
    hand)."""
    code, out = _help_of(module)
    assert code == 0 and out.startswith("usage:") and module in out.splitlines()[0], (code, out[:300])


# ------------------------------------------------ "1 runs in runs": a count and its noun, agreeing

_COUNT_NAMES = re.compile(r"^(n|count|total|n_\w+|\w+_count|num_\w+)$")
_PLURAL_AFTER = re.compile(r"^ ([a-z]+?)s(?![a-z(])")
# Only a file with a formatted count, or a suffix chosen by a condition, is parsed (parsing all of launch/
# and t3rl_core/ costs seconds).
_A_FORMATTED_COUNT = re.compile(
    r"\{\s*(len\(|[\w.]*?\b(n|count|total|n_\w+|\w+_count|num_\w+)\s*\})|(['\"])(e?s)?\3 if "
)
# A plural written by hand: `'s' if n > 1 else ''` (either way round), which says "0 row" and drifts from
# t3rl_core.counts (counted, agreeing).
_SUFFIXES = ({"s", ""}, {"es", ""})
_NOT_NOUNS = {"i", "wa", "ha", "doe", "a", "u", "it", "thi", "les"}  # is, was, has, … read as "<x>s"


def _a_count(value: ast.FormattedValue) -> bool:
    """A value a message counts with: `len(...)`, or a name that holds a count (n, total, n_*, num_*)."""
    v = value.value
    if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len":
        return True
    name = v.id if isinstance(v, ast.Name) else v.attr if isinstance(v, ast.Attribute) else ""
    return bool(_COUNT_NAMES.match(name))


def _a_suffix(node: ast.IfExp) -> bool:
    branches = (node.body, node.orelse)
    texts = {b.value for b in branches if isinstance(b, ast.Constant) and isinstance(b.value, str)}
    return len(texts) == 2 and texts in _SUFFIXES


def _counts_before_a_plural(root: Path) -> list[str]:
    """Every f-string part of launch/ and t3rl_core/ putting a count before a plural noun
    ("{len(rows)} runs"), which reads "1 runs" for one. A value with a format spec
    ("{len(text):,} characters") is a size compared with a limit of at least 1, and "(s)" ("episode(s)")
    agrees with any count."""
    found = []
    for path in sorted([*(root / "launch").rglob("*.py"), *(root / "t3rl_core").rglob("*.py")]):
        source = path.read_text()
        if not _A_FORMATTED_COUNT.search(source):
            continue
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.IfExp) and _a_suffix(node):
                found.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
            if not isinstance(node, ast.JoinedStr):
                continue
            for value, text in itertools.pairwise(node.values):
                if not (
                    isinstance(value, ast.FormattedValue) and value.format_spec is None and _a_count(value)
                ):
                    continue
                word = _PLURAL_AFTER.match(text.value) if isinstance(text, ast.Constant) else None
                if word and word.group(1) not in _NOT_NOUNS:
                    found.append(
                        f"{path.relative_to(root)}:{node.lineno}: {{{ast.unparse(value.value)}}}{word[0]}"
                    )
    return found


def test_every_count_agrees_with_its_noun() -> None:
    """`t3rl runs` with one run printed `1 runs in runs`, a plan of one stage `quickstart: 1 stages`, a
    rollout of one sample `1 samples`: each message wrote its noun's plural after any count. Every count
    now goes through `t3rl_core.counts.counted` (`1 run`, `3 runs`); this scan finds any f-string that
    puts a count before a plural noun again."""
    assert _counts_before_a_plural(REPO) == []


def test_the_count_scan_finds_what_it_is_for(tmp_path: Path) -> None:
    """The scan above reads f-strings as the old messages were written (else it would pass on nothing)."""
    (tmp_path / "launch").mkdir()
    (tmp_path / "t3rl_core").mkdir()
    (tmp_path / "launch" / "m.py").write_text(
        'a = f"{len(rows)} runs in {d}"\nb = f"{total} samples"\n'
        'c = f"{n} episode(s)"\nd = f"{x} is {n} was"\n'
        "e = f\"{needed} row{'s' if needed > 1 else ''}\"\nf = 'GPU' + ('' if k == 1 else 's')\n"
        "g = 'a' if n else ''\n"
    )
    assert sorted(line.split(": ", 1)[1] for line in _counts_before_a_plural(tmp_path)) == [
        "'' if k == 1 else 's'",
        "'s' if needed > 1 else ''",
        "{len(rows)} runs",
        "{total} samples",
    ]


@pytest.mark.parametrize(("n", "text"), [(0, "0 runs"), (1, "1 run"), (2, "2 runs")])
def test_counted_agrees(n: int, text: str) -> None:
    assert counted(n, "run") == text and counted(1, "leaf", "leaves") == "1 leaf"
    assert counted(3, "leaf", "leaves") == "3 leaves"


# ------------------------------------------------ TAB after --from, --only, --explain


def test_tab_after_from_and_only_offers_the_lines_stages(tmp_path: Path) -> None:
    """`t3rl run +experiment=quickstart --from <TAB>`. Was: the working directory's files (a stage is
    known once the config is composed, which completion did not do). Now the line's stages, composed
    directly, or those of its --run-dir's config; a line that does not compose offers nothing (no
    traceback)."""
    assert complete("t3rl run +experiment=quickstart --from ") == [
        "prepare_data",
        "prepare_model",
        "eval_reference",
        "eval_tiny",
    ]
    assert complete("t3rl plan +experiment=quickstart --only eval_t") == ["eval_tiny"]
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("stages:\n  train: {}\n  eval_mine: {}\n")
    assert complete(f"t3rl run --run-dir {run} --only ") == ["train", "eval_mine"]
    assert complete("t3rl run +experiment=nosuch --from ") == []


def test_tab_after_explain_offers_the_configs_keys_a_level_at_a_time() -> None:
    """`t3rl show +experiment=quickstart --explain stages.eval_tiny.eval.li<TAB>`. Was: the working
    directory's files."""
    assert "stages" in complete("t3rl show +experiment=quickstart --explain ")
    offered = complete("t3rl show +experiment=quickstart --explain stages.eval_tiny.eval.li")
    assert offered == ["stages.eval_tiny.eval.limit_per_category"], offered


# ------------------------------------------------ a glob the shell expanded before t3rl saw it


def test_a_glob_the_shell_expanded_is_named_with_its_quoting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl runs --name out*` unquoted where out1/ and out2/ are in the working directory: the shell
    passed `--name out1 out2`. Was: `No such command 'out2'`. Now the expansion is named with the quoted
    glob (every option of metavar GLOB); one name, quoted or a plain word, lists as before."""
    monkeypatch.chdir(tmp_path)
    for name in ("out1", "out2"):
        (tmp_path / name).mkdir()
    done = CliRunner().invoke(
        app, ["runs", "--runs-dir", ".", "--name", "out1", "out2"], env={"COLUMNS": "300"}
    )
    text = " ".join(done.output.split())
    assert done.exit_code == 2, done.output
    assert "--name takes one glob, and the shell expanded yours into out1 out2" in text, text
    assert "e.g. --name 'out*'" in text, text
    listed = CliRunner().invoke(app, ["runs", "--runs-dir", ".", "--name", "out*"])
    assert listed.exit_code == 0 and "0 runs in ." in listed.output, listed.output


# ------------------------------------------------ a listing's filters that keep no run


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two run dirs of seed 42, their one stage never run (planned)."""
    root = tmp_path_factory.mktemp("runs")
    for name in ("qs_a", "qs_b"):
        run = root / name / "20260101-000000"
        run.mkdir(parents=True)
        config = {"name": name, "seed": 42, "stages": {"eval": {"kind": "eval"}}}
        (run / "config.yaml").write_text(yaml.safe_dump(config))
    return root


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--where", "seed=abc"], "--where seed=abc: no run has it (seed is 42 in 2 runs)"),
        (["--status", "failed"], "--status failed: no run is failed (they are planned in 2 runs)"),
        (["--name", "zz*"], "--name 'zz*' matches no run's path here"),
        (
            ["--name", "qs_a*", "--where", "name=qs_b"],
            "each condition keeps some runs, but no run meets them all",
        ),
    ],
    ids=["where", "status", "name", "together"],
)
def test_filters_that_keep_no_run_say_which_and_what_there_is(
    two_runs: Path, argv: list[str], said: str
) -> None:
    """`t3rl runs --where seed=abc` over runs of seed 42. Was: `0 runs in runs`, not a word of which
    condition kept none, nor what the runs have there. Now a note names it (`RunFilter.why_none`); a
    filter that keeps runs adds no note."""
    done = CliRunner().invoke(app, ["runs", "--runs-dir", str(two_runs), *argv], env={"COLUMNS": "300"})
    text = " ".join(done.output.split())
    assert done.exit_code == 0 and f"note: no run listed: {said}" in text, text
    kept = CliRunner().invoke(app, ["runs", "--runs-dir", str(two_runs), "--where", "seed=42"])
    assert "2 runs in" in kept.output and "note:" not in kept.output, kept.output
