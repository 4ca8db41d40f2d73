"""First hour, hunted (wave eight): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave eight)"). Each fails on the code before its
fix; in-process, on run dirs written by hand in the shape t3rl writes them."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
from pathlib import Path

import pytest
from rich.console import Console

from launch.cli import results_compare, runs, runs_configs
from launch.cli.runs_filter import BadFilter, RunFilter
from launch.output.plain import PlainConsole
from launch.run import output_digest
from launch.run.record_files import RunDirError


def _run_dir(root: Path, name: str, payload: bytes = b"x" * 64) -> Path:
    """A finished one-stage run dir: its config, its state (the stage's output with its digest) and the
    output; no file_hashes.json, as a run dir copied or restored elsewhere has none that applies."""
    path = root / "quick" / name
    path.mkdir(parents=True)
    (path / "config.yaml").write_text("name: quick\nseed: 42\nstages:\n  a:\n    kind: eval\n")
    out = path / "out.bin"
    out.write_bytes(payload)
    record = {"status": "succeeded", "outputs": {str(out): "sha256:" + hashlib.sha256(payload).hexdigest()}}
    (path / "state.json").write_text(json.dumps({"run_dir": str(path), "stages": {"a": record}}))
    return path


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file whose bytes are read for its sha256."""
    seen: list[str] = []
    real = output_digest._file_sha256

    def counting(path: Path) -> str:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(output_digest, "_file_sha256", counting)
    return seen


@pytest.fixture
def parsed_yaml(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every config.yaml a listing parses."""
    seen: list[str] = []
    real = runs_configs.read_yaml

    def counting(path: Path, shape: type = object) -> object:
        seen.append(str(path))
        return real(path, shape)

    monkeypatch.setattr(runs_configs, "read_yaml", counting)
    return seen


def _listed(root: Path) -> list[str]:
    """The run dirs `t3rl runs` lists, in its order (the table read back)."""
    out = io.StringIO()
    assert runs.list_runs(root, PlainConsole(file=out)) == 0
    return [line.split()[0] for line in out.getvalue().splitlines() if line.startswith("quick/")]


# ------------------------------------------------ a copied run dir hashed again at every listing


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_listing_keeps_the_hashes_it_computed_outside_the_record(tmp_path: Path, hashed: list[str]) -> None:
    """`cp -a runs/quick/<ts> …` (or a backup restored, an rsync to another node): the copy's outputs
    have new inodes, so none of its recorded hashes applied, and every `t3rl runs` read every output's
    bytes again (300 copied quickstart runs: ~70 s of an ~80 s listing, each time). Now the first
    listing keeps them in t3rl's cache dir (a reader writes nothing in a run's record); the next reads
    no output's bytes, and an output changed since is still found."""
    runs_dir = tmp_path / "runs"
    run = _run_dir(runs_dir, "20261129-000001")
    before = _tree(runs_dir)
    assert _listed(runs_dir) == ["quick/20261129-000001"] and len(hashed) == 1
    assert _listed(runs_dir) == ["quick/20261129-000001"] and len(hashed) == 1, hashed
    assert _tree(runs_dir) == before
    # `t3rl runs show` of it, twice: hashed once more (its own cache), then only stat'ed.
    assert runs.show_run(run, PlainConsole(file=io.StringIO())) == 0
    assert runs.show_run(run, PlainConsole(file=io.StringIO())) == 0
    assert len(hashed) == 2 and _tree(runs_dir) == before, hashed
    (run / "out.bin").write_bytes(b"y" * 65)
    assert runs.load_run(run, runs_configs.ListingCache(runs_dir)).status == "damaged"


def test_an_unwritable_cache_dir_lists_as_before(
    tmp_path: Path, hashed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache dir this user cannot write (a file in its place here: as root no mode refuses a write),
    or the caches turned off: listed, each output hashed again next time."""
    runs_dir = tmp_path / "runs"
    _run_dir(runs_dir, "20261129-000001")
    (tmp_path / "blocked").write_text("")
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "blocked"))
    assert _listed(runs_dir) == _listed(runs_dir) == ["quick/20261129-000001"]
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("T3RL_NO_CACHE", "1")
    assert _listed(runs_dir) == ["quick/20261129-000001"]
    assert len(hashed) == 3 and not (tmp_path / "cache").exists()


# ------------------------------------------------ every config.yaml parsed by PyYAML at every listing


def test_a_listing_parses_each_config_once_and_never_stale(tmp_path: Path, parsed_yaml: list[str]) -> None:
    """`t3rl runs` over many runs spent a third of its CPU in PyYAML (wave seven's leftover: 300 runs,
    1.6 s, 0.55 s of it parsing config.yaml). Now a listing keeps what it parsed, keyed by the file's
    sha256 (and the reader's and PyYAML's versions): the next listing parses none, and a config.yaml
    edited, damaged or replaced since is parsed again, never read from the cache."""
    first, second = _run_dir(tmp_path, "20261129-000001"), _run_dir(tmp_path, "20261129-000002")
    assert sorted(_listed(tmp_path)) == ["quick/20261129-000001", "quick/20261129-000002"]
    assert len(parsed_yaml) == 2
    parsed_yaml.clear()
    _listed(tmp_path)
    assert parsed_yaml == []
    # Edited (the same size: a digit changed): read again, the new stages listed.
    text = (first / "config.yaml").read_text().replace("seed: 42", "seed: 43").replace("  a:", "  b:")
    (first / "config.yaml").write_text(text)
    (first / "state.json").write_text(json.dumps({"stages": {}}))
    assert runs.load_run(first, runs_configs.ListingCache(tmp_path)).stages[0].name == "b"
    # Damaged after it was cached: the reader's own error, not the cached mapping.
    (second / "config.yaml").write_text("name: [quick\n")
    with pytest.raises(RunDirError, match="not valid YAML"):
        runs.load_run(second, runs_configs.ListingCache(tmp_path))


def test_a_mapping_json_would_change_is_never_kept(tmp_path: Path) -> None:
    """What JSON does not give back as read (a key that is a number, NaN) is parsed each time; a cache
    of another reader (t3rl's version or its reading code) or PyYAML (its header) is not read."""
    run = _run_dir(tmp_path, "20261129-000001")
    (run / "config.yaml").write_text("name: quick\nstages: {a: {kind: eval}}\nweights: {1: .nan}\n")
    cache = runs_configs.ListingCache(tmp_path)
    assert 1 in cache.read(run / "config.yaml")["weights"]
    assert cache.configs == {}
    good = _run_dir(tmp_path, "20261129-000002")
    cache.read(good / "config.yaml")
    cache.save()
    data = json.loads(cache.file.read_text())
    assert list(data["configs"]) == [str(good.resolve())]
    assert runs_configs.ListingCache(tmp_path).kept["configs"] != {}
    for part, other in (("yaml", "0.0"), ("code", "0" * 64)):  # another PyYAML, another reader's code
        changed = json.loads(json.dumps(data))
        changed["header"][part] = other
        cache.file.write_text(json.dumps(changed))
        assert runs_configs.ListingCache(tmp_path).kept["configs"] == {}


# ------------------------------------------------ runs of one mtime listed in another order each time


def test_runs_of_one_mtime_list_in_one_order(tmp_path: Path) -> None:
    """Runs copied or restored with their times (`cp -a`, `rsync -a`, a backup) share config.yaml's
    mtime; `t3rl runs` sorted a set by mtime alone, so two identical listings showed them in other
    orders. Now ties are broken by path, the later timestamp first."""
    names = [f"20261129-0000{i:02d}" for i in range(12)]
    for name in names:
        config = _run_dir(tmp_path, name) / "config.yaml"
        os.utime(config, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    assert [p.name for p in runs.find_runs(tmp_path)] == sorted(names, reverse=True)


# ------------------------------------------------ a comparison typed in --where


def _seeded(root: Path, seeds: dict[str, object]) -> None:
    for name, seed in seeds.items():
        config = _run_dir(root, name) / "config.yaml"
        config.write_text(config.read_text().replace("seed: 42", f"seed: {seed}"))


@pytest.mark.parametrize(
    ("condition", "kept"),
    [
        ("seed>42", ["quick/20261129-000003"]),
        ("seed>=42", ["quick/20261129-000002", "quick/20261129-000003"]),
        ("seed<42", ["quick/20261129-000001"]),
        ("seed!=42", ["quick/20261129-000001", "quick/20261129-000003", "quick/20261129-000004"]),
        ("seed==42", ["quick/20261129-000002"]),
        ("seed=42", ["quick/20261129-000002"]),
    ],
)
def test_a_comparison_in_where_compares(tmp_path: Path, condition: str, kept: list[str]) -> None:
    """`--where 'seed!=42'` was the key `seed!` (`did you mean 'seed'?`), `seed==42` the value `=42`
    (no run kept, `seed is 42 in 1 run`), `seed>3` `not KEY=VALUE`. Now one grammar reads each
    operator: = (and ==), !=, and <, <=, >, >= on numbers (a text never meets an order)."""
    _seeded(tmp_path, {"20261129-000001": 7, "20261129-000002": 42, "20261129-000003": 43})
    _seeded(tmp_path, {"20261129-000004": "abc"})
    out = io.StringIO()
    filters = RunFilter.parse(None, None, [condition])
    assert runs.list_runs(tmp_path, PlainConsole(file=out), filters=filters) == 0
    listed = [line.split()[0] for line in out.getvalue().splitlines() if line.startswith("quick/")]
    assert sorted(listed) == kept, out.getvalue()


@pytest.mark.parametrize(
    ("condition", "said"),
    [
        ("seed", "Typed seed>N unquoted? The shell reads '>N' as writing to a file named N"),
        (">3", "names no key before >"),
        ("seed<abc", "< compares numbers, and 'abc' is none"),
    ],
)
def test_a_condition_without_a_comparison_says_why(condition: str, said: str) -> None:
    """`--where seed>3` unquoted reaches t3rl as `--where seed` (the shell wrote a file named 3): the
    refusal says so, and the quoted form it names is read."""
    with pytest.raises(BadFilter, match=re.escape(said)):
        RunFilter.parse(None, None, [condition])
    assert RunFilter.parse(None, None, ["seed>3"]).where == (("seed", ">", "3"),)


# ------------------------------------------------ a `t3rl eval` record beside the run whose stage it redoes


def _summary(split: str, accuracy: float) -> dict[str, object]:
    return {
        "complete": True,
        "overall": {"accuracy": accuracy, "tasks": 4},
        "identity": {"data": {"split": split}, "env": {"name": "bfcl_multi_turn"}},
    }


def _compared(
    runs_side: dict[str, object], record: dict[str, object], root: Path, stage: str | None = None
) -> tuple[int, str]:
    """`t3rl runs diff A B`'s results section, A a pipeline run's eval stages, B a `t3rl eval` record
    (its manifest says so, and the stage it evaluated, `--stage`)."""
    (root / "B").mkdir(exist_ok=True)
    manifest = {"record": "eval", "eval": {"stage": stage, "engine": "reference"}}
    (root / "B" / "manifest.json").write_text(json.dumps(manifest))
    out = io.StringIO()
    console = Console(file=out, width=200)
    sides = iter([(runs_side, {}), ({"eval": record}, {})])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(results_compare, "summaries_of", lambda path: next(sides))
        code = results_compare.compare_results(
            root / "A", root / "B", console, mixed=False, why_missing=lambda run, stage: "no such stage"
        )
    return code, " ".join(out.getvalue().split())


def test_an_eval_record_is_compared_with_the_stage_of_its_benchmark(tmp_path: Path) -> None:
    """`t3rl eval +experiment=quickstart --stage eval_reference --out ev`, then `t3rl runs diff <run> ev`:
    results paired by stage name, so the record's `eval` was never compared with the stage it redid
    (`only A has this eval stage's result`, three times). Now it is paired with the one stage of the
    same benchmark identity, said; with none, each stage's first difference is named."""
    stages = {"eval_reference": _summary("bfcl_test", 0.75), "eval_tiny": _summary("bfcl_val", 0.0)}
    code, text = _compared(stages, _summary("bfcl_test", 0.5), tmp_path)
    assert code == 0, text
    assert "its result is compared with A's eval stage eval_reference" in text, text
    assert "eval_reference │ 0.750" in text and "-0.250" in text, text
    code, text = _compared(stages, _summary("bfcl_unseen", 0.5), tmp_path)
    assert "pairs with no eval stage of A (none measured its benchmark: eval_reference: data: split" in text
    assert "eval: only B has this eval stage's result" in text, text
    # The stage its manifest records (`--stage eval_tiny`) is the pair, its identity compared as any.
    code, text = _compared(stages, _summary("bfcl_test", 0.5), tmp_path, stage="eval_tiny")
    assert "a `t3rl eval` record of stage eval_tiny (--stage): its result is compared with A's" in text
    assert code == 1 and "refused: eval_tiny: the two evals measured different benchmarks" in text, text


# ------------------------------------------------ an option of `t3rl runs` its command does not read


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["runs", "--json", "show"], "`t3rl runs show` does not read (it prints no JSON"),
        (["runs", "show", "--json"], "`t3rl runs show` does not read (it prints no JSON"),
        (["runs", "--status", "failed", "show"], "does not read: drop it (it applies to the listing"),
        (
            ["runs", "--metric", "overall.pass@1", "diff", "a", "b"],
            "diff has its own, after it: t3rl runs diff",
        ),
        (["runs", "--runs-dir", "elsewhere", "diff", "a", "b"], "`t3rl runs diff` does not read"),
    ],
    ids=["json-show", "json-after-show", "status-show", "metric-diff", "runs-dir-diff"],
)
def test_an_option_of_runs_its_command_does_not_read_is_refused(argv: list[str], said: str) -> None:
    """`t3rl runs --json show` printed text, `--status failed show` showed the newest run whatever its
    status, `--metric overall.pass@1 diff A B` compared accuracy: the group's options were ignored by a
    command that reads none of them (and `runs show --json` was told to put --json before `show`,
    where it was ignored). Now each is refused naming what reads it (help_format.GROUP_OPTIONS_READ);
    `--runs-dir DIR show`, which show reads, still works (wave four's test)."""
    from typer.testing import CliRunner

    from launch.cli.app import app

    done = CliRunner().invoke(app, argv)
    text = " ".join(done.output.replace("│", " ").split())
    assert done.exit_code == 2 and said in text, text


# ------------------------------------------------ a required argument left out


def _commands_with_a_required_argument() -> list[list[str]]:
    """Each command path (`["runs", "diff"]`) whose first required parameter is an argument."""
    import typer

    from launch.cli.app import app

    found: list[list[str]] = []

    def walk(command: object, path: list[str]) -> None:
        for name, sub in sorted((getattr(command, "commands", None) or {}).items()):
            walk(sub, [*path, name])
        params = getattr(command, "params", [])
        required = [p for p in params if p.required and p.param_type_name != "option"]
        if path and required and not any(p.required for p in params if p.param_type_name == "option"):
            found.append(path)

    walk(typer.main.get_command(app), [])
    return found


def test_every_missing_argument_says_what_it_is_with_an_example() -> None:
    """`t3rl check-template`, `t3rl runs diff A`, `t3rl rollouts show`: Click said only "Missing argument
    'MODEL'." Now what the argument is (its help) and the command's first example giving it, for every
    command that takes one (launch/cli/help_format._argument_missing_shown)."""
    from typer.testing import CliRunner

    from launch.cli.app import app

    paths = _commands_with_a_required_argument()
    assert ["check-template"] in paths and ["runs", "diff"] in paths and len(paths) >= 4, paths
    for path in paths:
        done = CliRunner().invoke(app, path)
        text = " ".join(done.output.replace("│", " ").split())
        assert done.exit_code == 2 and "Missing argument '" in text, (path, text)
        assert f"e.g. t3rl {' '.join(path)} " in text or "--help`)" in text, (path, text)
