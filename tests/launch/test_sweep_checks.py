"""Issue 20 §6: a sweep or a search is checked as a whole before any point runs (`t3rl validate -m`, and
`plan -m` / `run -m` before they write anything): every point, a search's space at each bound and
choice, points sharing a directory, points that would hold one machine's ports and GPUs at once, points
that are the same run. Each refusal's fix, applied as the shell passes it, validates."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from test_override_syntax import apply_fix
from typer.testing import CliRunner

from launch.cli.app import app

S1 = "+experiment=stage1_bfcl"
SEARCH = [S1, "hparams_search=bfcl_lr_kl_reward"]
LR = "stages.train.curriculum.optimizer.lr"
KL = "stages.train.curriculum.algorithm.kl_loss_coef"
_BLOCK = re.compile(
    r"^(?P<severity>error|warning) (?P<key>.*?): (?P<message>.*?)\n\s+set in: (?P<source>.*?)\n"
    r"\s+fix: (?P<fix>.*?)$",
    re.M,
)


@pytest.fixture(scope="module")
def _module_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sweep_checks")


@pytest.fixture(autouse=True)
def workdir(_module_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """One working directory and composition cache for the module: the searches' edges (each composed
    with Hydra, ~0.3 s) recur between its cases, and the cache key holds the working directory. Nothing
    here writes into it (the refusals assert so)."""
    monkeypatch.chdir(_module_dir)
    monkeypatch.setenv("T3RL_CACHE_DIR", str(_module_dir / "cache"))
    for name in ("T3RL_RUNS_DIR", "T3RL_PLANS_DIR"):
        monkeypatch.delenv(name, raising=False)
    return _module_dir


def _invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"})
    return result.exit_code, result.output


def _problems(output: str, severity: str = "error") -> list[dict[str, str]]:
    return [m.groupdict() for m in _BLOCK.finditer(output) if m["severity"] == severity]


def _refused_then_fixed(args: list[str], refusals: dict[str, str]) -> list[dict[str, str]]:
    """`validate -m` refuses exactly the keys of `refusals`, each with its fix (first alternative), and
    accepts the arguments with every fix applied."""
    code, out = _invoke("validate", "-m", *args)
    assert code == 2, out
    errors = _problems(out)
    assert sorted(e["key"] for e in errors) == sorted(refusals), out
    fixed = list(args)
    for error in errors:
        assert refusals[error["key"]] in error["fix"], out
        fixed = apply_fix(fixed, error)
    code, after = _invoke("validate", "-m", *fixed)
    assert code == 0, f"after the fixes {fixed}:\n{after}"
    return errors


WD = "stages.train.curriculum.optimizer.weight_decay"
# Entries of the search space given on the command line (replacing the file's), the refused keys and
# the first alternative of each fix; several at once, as `validate -m` reports them together.
SEARCH_CASES = [
    (
        "log-from-zero, bound-outside-domain, choice-outside-group",
        [
            f"{LR}=tag(log, interval(0, 1e-5))",
            f"{KL}=interval(-0.1, 0.1)",
            "reward=choice(progress, binary, nope)",
        ],
        {
            LR: f'"{LR}=tag(log, interval(1e-08, 1e-05))"',
            KL: f'"{KL}=interval(0.0, 0.1)"',
            "reward": '"reward=choice(progress, binary)"',
        },
    ),
    (
        "low-above-high, searched-key-missing, empty-range",
        [f"{LR}=interval(1e-5, 1e-7)", f"{KL}x=interval(0.0, 0.1)", f"{WD}=range(5, 1)"],
        {
            LR: f'"{LR}=interval(1e-07, 1e-05)"',
            f"{KL}x": f'"{KL}=interval(0.0, 0.1)"',
            WD: f'"{WD}=range(1, 5, 1)"',
        },
    ),
    ("trials-at-once", ["hydra.sweeper.n_jobs=2"], {"hydra.sweeper.n_jobs": "hydra.sweeper.n_jobs=1"}),
]


@pytest.mark.parametrize(
    ("extra", "refusals"), [c[1:] for c in SEARCH_CASES], ids=[c[0] for c in SEARCH_CASES]
)
def test_a_search_space_is_checked_at_every_bound_and_choice(
    extra: list[str], refusals: dict[str, str]
) -> None:
    _refused_then_fixed([*SEARCH, *extra], refusals)


def test_the_shipped_search_is_valid_and_a_bad_one_never_starts(workdir: Path) -> None:
    code, out = _invoke("validate", "-m", *SEARCH)
    assert code == 0 and "valid" in out, out
    code, out = _invoke("run", "-m", *SEARCH, f"{KL}=interval(-0.1, 0.1)")
    assert code == 2 and _problems(out)[0]["key"] == KL, out
    assert not (workdir / "runs").exists(), "a refused search wrote its sweep dir"


def test_a_file_entry_is_blamed_on_the_file(tmp_path: Path) -> None:
    conf = tmp_path / "conf" / "hparams_search"
    conf.mkdir(parents=True)
    shipped = Path(__file__).parents[2] / "conf" / "hparams_search" / "bfcl_lr_kl_reward.yaml"
    text = shipped.read_text().replace("interval(0.0, 0.1)", "tag(log, interval(0.0, 0.1))")
    (conf / "bad_kl.yaml").write_text(text)
    code, out = _invoke("validate", "-m", "--config-dir", str(tmp_path / "conf"), S1, "hparams_search=bad_kl")
    assert code == 2, out
    (error,) = _problems(out)
    assert error["key"] == f"hydra.sweeper.params.{KL}" and "bad_kl.yaml" in error["source"], out
    # The fix is the entry as a command-line sweep, which replaces the file's.
    (entry,) = shlex.split(error["fix"].split(" (", 1)[0])
    code, out = _invoke(
        "validate", "-m", "--config-dir", str(tmp_path / "conf"), S1, "hparams_search=bad_kl", entry
    )
    assert code == 0, out


def test_points_sharing_a_tensorboard_dir_are_refused(workdir: Path) -> None:
    args = [S1, f"tracking.dir={workdir}/tb", "seed=1,2"]
    (error,) = _refused_then_fixed(args, {"tracking.dir": "tracking.dir="})
    assert "p00 (seed=1) and p01 (seed=2) both write" in error["message"]
    code, out = _invoke("plan", "-m", *args)
    assert code == 2 and not (workdir / "plans").exists(), out


def test_points_run_at_once_on_one_machine_are_refused(workdir: Path) -> None:
    args = [S1, "executor.max_parallel=2", "seed=1,2"]
    (error,) = _refused_then_fixed(args, {"executor.max_parallel": "executor.max_parallel=1"})
    assert error["source"] == "override `executor.max_parallel=2`", error
    code, out = _invoke("run", "-m", *args)
    assert code == 2 and not (workdir / "runs").exists(), out


def test_points_that_are_the_same_run_are_a_warning_with_each_run_once() -> None:
    code, out = _invoke("validate", "-m", S1, "seed=1,2,1")
    assert code == 0, out
    # the points' own warnings (a checkout missing here) are printed too, as `plan -m` prints them
    (warning,) = [w for w in _problems(out, "warning") if w["key"] == "seed"]
    assert "p02 (seed=1) is p00 (seed=1)" in warning["message"], out
    assert warning["fix"].startswith("seed=1,2 "), out


def test_every_point_is_checked_and_named() -> None:
    code, out = _invoke("validate", "-m", S1, "hardware.tensor_parallel=2,3", "tracking.projct=a")
    assert code == 2, out
    assert out.count("unknown key 'projct'") == 2 and "tensor_parallel=3" in out, out


def test_a_syntax_mistake_in_a_sweep_gets_the_corrected_override() -> None:
    code, out = _invoke("plan", "-m", S1, "name:foo", "seed=1,2")
    assert code == 2, out
    assert [(e["key"], e["fix"]) for e in _problems(out)] == [("name", "name=foo")], out
