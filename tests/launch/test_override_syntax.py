"""Issue 20 §7: an override syntax mistake is refused (exit 2) with the key, the override as typed and
the corrected override as the fix; the fix, applied as a shell would pass it, validates."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.cli.app import app

S1 = "+experiment=stage1_bfcl"
# pass@2 needs two samples per task at a temperature above 0.
TWO_SAMPLES = [S1, "eval.samples=2", "eval.temperature=1.0"]
_BLOCK = re.compile(
    r"^error (?P<key>.*?): (?P<message>.*?)\n\s+set in: (?P<source>.*?)\n\s+fix: (?P<fix>.*?)$", re.M
)

# id, arguments as the shell passes them, the key the error names, the fix's first alternative.
CASES = [
    ("colon", [S1, "name:foo"], "name", "name=foo"),
    ("yaml-colon-space", [S1, "name:", "foo"], "name", "name=foo"),
    ("space-after-equals", [S1, "name=", "foo"], "name", "name=foo"),
    ("space-before-equals", [S1, "name", "=foo"], "name", "name=foo"),
    ("spaces-around-equals", [S1, "name", "=", "foo"], "name", "name=foo"),
    ("unclosed-list", [*TWO_SAMPLES, "eval.pass_k=[1,2"], "eval.pass_k", '"eval.pass_k=[1,2]"'),
    ("list-split-by-shell", [*TWO_SAMPLES, "eval.pass_k=[1,", "2]"], "eval.pass_k", '"eval.pass_k=[1,2]"'),
    ("unclosed-quote", [S1, "tracking.project='my"], "tracking.project", "\"tracking.project='my'\""),
    ("quotes-lost", [S1, "tracking.project=my", "project"], "tracking.project", "\"tracking.project='my"),
    ("list-as-sweep", [*TWO_SAMPLES, "eval.pass_k=1,2"], "eval.pass_k", '"eval.pass_k=[1,2]"'),
    ("dash-option", [S1, "--lr=1e-6"], "stages.train.curriculum.optimizer.lr", "optimizer.lr=1e-6"),
    ("dash-option-spaced", [S1, "--tensor-parallel", "4"], "hardware.tensor_parallel", "parallel=4"),
    ("dash-flag", [S1, "--colocate"], "hardware.colocate", "hardware.colocate=true"),
    ("option-without-group", ["stage1_bfcl"], "experiment", "+experiment=stage1_bfcl"),
    ("delete-misspelt", [S1, "~tracking.projct"], "tracking.projct", "~tracking.project"),
    ("delete-missing", [S1, "~no_such_key"], "no_such_key", "drop `~no_such_key`"),
    ("number-for-string", [S1, "tracking.project=1e3"], "tracking.project", "\"tracking.project='1e3'\""),
    ("boolean-for-string", [S1, "name=true"], "name", "\"name='true'\""),
    ("misspelt-parent", [S1, "trackin.project=x"], "trackin.project", "tracking.project=x"),
    # Values holding characters Hydra's grammar reserves: quoted, each element of a list on its own.
    (
        "reserved-in-list",
        [S1, "executor=slurm", "executor.extra_sbatch=[--qos=high,--constraint=h100]"],
        "executor.extra_sbatch",
        "\"executor.extra_sbatch=['--qos=high','--constraint=h100']\"",
    ),
    (
        "home-path",
        [S1, "paths.cache_dir=~/t3rl-cache"],
        "paths.cache_dir",
        "\"paths.cache_dir='~/t3rl-cache'\"",
    ),
]


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    return result.exit_code, result.output


def _errors(output: str) -> list[dict[str, str]]:
    return [m.groupdict() for m in _BLOCK.finditer(output)]


def apply_fix(args: list[str], error: dict[str, str]) -> list[str]:
    """The arguments with the blamed ones (the source's override, as typed) replaced by the first
    alternative of the fix, split as a shell splits it; a fix saying "drop `X`" removes X."""
    blamed = re.fullmatch(r"override `(.*)`", error["source"])
    assert blamed, error
    spans = [
        (start, end)
        for start in range(len(args))
        for end in range(start + 1, len(args) + 1)
        if " ".join(args[start:end]) == blamed.group(1)
    ]
    assert spans, f"the source {error['source']} is not among the arguments {args}"
    start, end = spans[0]
    rest = args[:start] + args[end:]
    first = re.split(r"; |, or | or | \(", error["fix"], maxsplit=1)[0]
    if first.startswith("drop `"):
        return rest
    return rest + [w for w in shlex.split(first) if "=" in w or w.startswith("~")]


@pytest.mark.parametrize(("args", "key", "fix"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_syntax_mistake_gets_the_corrected_override(args: list[str], key: str, fix: str) -> None:
    code, out = _invoke("validate", *args)
    assert code == 2, out
    errors = _errors(out)
    assert [e["key"] for e in errors] == [key], out
    assert "Traceback" not in out and fix in errors[0]["fix"], out
    fixed = apply_fix(args, errors[0])
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after the fix {fixed}:\n{after}"


def test_a_scalar_swept_in_a_single_run_is_a_sweep_under_validate_m() -> None:
    args = [S1, "tracking.project=a,b"]
    code, out = _invoke("validate", *args)
    assert code == 2, out
    (error,) = _errors(out)
    assert error["fix"].startswith("add -m to sweep it"), out
    code, out = _invoke("validate", "-m", *args)
    assert code == 0, out
    # Its other alternative, one value, validates too.
    one = re.search(r"pick one value: (\S+)", error["fix"])
    assert one and _invoke("validate", S1, one.group(1))[0] == 0


def test_an_absent_section_of_the_schema_is_added_with_plus() -> None:
    code, out = _invoke("validate", S1, "objective.stage=eval")
    assert code == 2, out
    (error,) = _errors(out)
    assert error["key"] == "objective.stage" and error["fix"].endswith("+objective.stage=eval"), out


def test_several_mistakes_are_reported_together() -> None:
    code, out = _invoke("validate", S1, "name:foo", "tracking.project=", "x")
    assert code == 2, out
    assert [(e["key"], e["fix"]) for e in _errors(out)] == [
        ("name", "name=foo"),
        ("tracking.project", "tracking.project=x"),
    ], out


def test_a_misspelt_option_of_the_command_is_named() -> None:
    code, out = _invoke("run", S1, "--run_dir", "runs/x")
    assert code == 2, out
    assert "did you mean the option --run-dir?" in out and "Traceback" not in out, out
