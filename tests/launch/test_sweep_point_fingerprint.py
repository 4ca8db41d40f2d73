"""A sweep point that succeeded but is stale, a stage of it that a resume of it alone would run again
(its command, env or config changed since it ran), is run again by a resume of the sweep, and only
such points; `t3rl runs show <sweep dir>` says so of the point it calls best. Before, both trusted a
point's record to be current once it said succeeded (launch.run.point_stale).

One real two-point sweep of a data-preparation experiment is recorded once; each case changes what its
points compose to (the experiment file, t3rl's code, an environment variable its command reads) or one
point's record, on a copy. The points' runs are stood in for, but in one case, which runs the stale
point for real.
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

from launch.cli.run_command import run_command
from launch.plan.stages import Stage
from launch.run import search_runs, sweep_runs
from launch.run.pipeline import changes, preview
from tests.support.rec_sweep import record_sweep, score_first_best
from tests.support.rec_sweep import shown as _shown

STALE = "stage prepare_data is stale (its command, env or config changed)"


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A finished sweep of `rec` over two test sizes, and the config dir it was composed from."""
    with pytest.MonkeyPatch.context() as patch:
        yield record_sweep(tmp_path_factory.mktemp("sweep"), patch)


@pytest.fixture
def sweep(recorded: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the recorded sweep (from the dir it was started in, where its points compose)."""
    monkeypatch.chdir(recorded[0].parents[2])  # a resume moves there; this way it is put back after
    copy = tmp_path / recorded[0].name
    shutil.copytree(recorded[0], copy, symlinks=True)
    return copy


@pytest.fixture
def experiment(recorded: tuple[Path, Path]) -> Iterator[Path]:
    """The experiment file every point composes, restored after a case edits it."""
    path = recorded[1] / "experiment" / "rec.yaml"
    text = path.read_text()
    yield path
    path.write_text(text)


def _resumed(sweep: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[dict[int, list[str]] | None, str]:
    """Each point a resume of `sweep` runs, with the stages its run would change (None: it ran none),
    and what it printed."""
    ran: list[dict[int, list[str]]] = []

    def run_points(planned: list[sweep_runs.PlannedPoint], *args: object, **kwargs: object) -> None:
        ran.append(
            {p.index: [d.stage for d in changes(preview(p.plan, p.run_dir).decisions)] for p in planned}
        )

    monkeypatch.setattr(sweep_runs, "run_points", run_points)
    out = io.StringIO()
    assert sweep_runs.resume_sweep(sweep, None, None, Console(file=out, width=300)) in (0, None)
    return (ran[0] if ran else None), " ".join(out.getvalue().split())


def _edit_state(run_dir: Path, edit: Callable[[dict], None]) -> None:
    state = json.loads((run_dir / "state.json").read_text())
    edit(state)
    (run_dir / "state.json").write_text(json.dumps(state))


def _recorded_by_another_command(run_dir: Path) -> None:
    """The point's record of its stage names a command other than the one its config plans now."""
    _edit_state(run_dir, lambda s: s["stages"]["prepare_data"].update(fingerprint="0123456789abcdef"))


def _seeded(experiment: Path) -> None:
    """The experiment sets the data's seed (its default before): the data stage's config differs."""
    text = experiment.read_text()
    assert "\n    test_size: 4\n" in text
    experiment.write_text(text.replace("\n    test_size: 4\n", "\n    test_size: 4\n    seed: 7\n"))


def _code_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    """t3rl's code plans the stage's command otherwise than the one that ran."""
    script = Stage.script
    monkeypatch.setattr(Stage, "script", lambda self: script(self) + "\n# planned otherwise now")


# What changes a point's stage after it ran: (how, the points it makes stale).
CHANGES: dict[str, tuple[Callable[[Path, Path, pytest.MonkeyPatch], None], list[int]]] = {
    "the experiment file": (
        lambda sweep, experiment, patch: _seeded(experiment),
        [0, 1],
    ),
    "t3rl's code": (lambda sweep, experiment, patch: _code_changed(patch), [0, 1]),
    "an environment variable its command reads": (
        lambda sweep, experiment, patch: patch.setenv("T3RL_CACHE_DIR", str(sweep.parent / "other-cache")),
        [0, 1],
    ),
    "one point's record": (lambda sweep, experiment, patch: _recorded_by_another_command(sweep / "p00"), [0]),
}


def test_an_unchanged_sweep_resumes_nothing(sweep: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each point composed and checked, none stale: nothing runs, and nothing is said of them (not
    even the config's warnings, which belong to the points' runs)."""
    assert _resumed(sweep, monkeypatch) == (None, f"every point of {sweep} succeeded; nothing to resume")


@pytest.mark.parametrize("change", CHANGES)
def test_a_stale_point_is_run_again_from_its_changed_stage(
    sweep: Path, experiment: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    how, stale = CHANGES[change]
    how(sweep, experiment, monkeypatch)
    ran, out = _resumed(sweep, monkeypatch)
    # The points a resume of each alone would change, with the stages it would run: the same plan.
    assert ran == {index: ["prepare_data"] for index in stale}, out
    for index, point in ((0, "env.data.test_size=3"), (1, "env.data.test_size=4")):
        said = f"point {index} ({point}): its record says succeeded, but {STALE}"
        assert (said in out) == (index in stale), out


def test_the_stale_point_runs_again_and_is_current_after(
    sweep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The resume runs the stale point's stage for real: its record then names the command planned now
    (a resume finds nothing more to do), the other point is left as it was, byte for byte."""
    _recorded_by_another_command(sweep / "p00")
    other = (sweep / "p01" / "state.json").read_bytes()
    out = io.StringIO()
    assert sweep_runs.resume_sweep(sweep, None, None, Console(file=out, width=300)) == 0, out.getvalue()
    assert f"point 0 (env.data.test_size=3): its record says succeeded, but {STALE}" in out.getvalue()
    assert (sweep / "p01" / "state.json").read_bytes() == other
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [p["status"] for p in points] == ["succeeded", "succeeded"]
    assert _resumed(sweep, monkeypatch) == (None, f"every point of {sweep} succeeded; nothing to resume")


def _masked_credential(sweep: Path, experiment: Path) -> None:
    """p00 ran with a literal credential, which its record keeps masked: it cannot be composed again."""
    overrides = sweep / "p00" / "overrides.yaml"
    overrides.write_text(overrides.read_text() + "- +wandb_key=***\n")


UNKNOWN: dict[str, Callable[[Path, Path], None]] = {
    "a credential stored masked": _masked_credential,
    "its experiment gone": lambda sweep, experiment: experiment.unlink(),
}


@pytest.mark.parametrize("unknown", UNKNOWN)
def test_a_succeeded_point_that_cannot_be_composed_is_kept_and_said_so(
    sweep: Path, experiment: Path, unknown: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its record is intact, only whether it is stale is unknown: kept (as before it was checked), and
    the resume says why it cannot tell rather than stopping."""
    UNKNOWN[unknown](sweep, experiment)
    ran, out = _resumed(sweep, monkeypatch)
    assert ran is None, out
    said = "point 0 (env.data.test_size=3): succeeded, kept; whether a stage of it changed since is not known"
    assert f"{said}: its config cannot be composed here: " in out, out


def test_runs_show_says_the_best_point_is_stale(sweep: Path) -> None:
    score_first_best(sweep)
    shown = _shown(sweep)
    assert "best" in shown["p00"] and "stale" not in shown["all"], shown["all"]
    _recorded_by_another_command(sweep / "p00")
    shown = _shown(sweep)
    assert f"best; {STALE}" in shown["p00"], shown["all"]
    assert f"point 0 (env.data.test_size=3): best, but {STALE}: `t3rl run --run-dir {sweep}`" in shown["all"]
    assert "stale" not in shown["p01"], shown["all"]


def test_every_listing_says_each_stale_point(sweep: Path) -> None:
    """Not only the best: a point that is not best is stale too, and `t3rl runs show` and a search's trial
    table say so of it (launch.run.point_stale.stale_points, one reader for both)."""
    score_first_best(sweep)
    _recorded_by_another_command(sweep / "p01")
    shown = _shown(sweep)
    assert STALE in shown["p01"] and "stale" not in shown["p00"], shown["all"]
    assert (
        f"point 1 (env.data.test_size=4): {STALE}: `t3rl run --run-dir {sweep}` runs it again" in shown["all"]
    )
    out = io.StringIO()
    search_runs._print_trials(sweep, Console(file=out, width=400, highlight=False))
    rows = [line for line in out.getvalue().splitlines() if "env.data.test_size=" in line]
    assert [STALE in row for row in rows] == [False, True], out.getvalue()


def test_runs_show_says_when_it_cannot_tell(sweep: Path, experiment: Path) -> None:
    score_first_best(sweep)
    experiment.unlink()
    assert "best; not checked for stale stages: its config cannot be composed here" in _shown(sweep)["p00"]


def test_a_point_run_alone_from_another_dir_is_recorded_in_its_sweep(
    sweep: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`t3rl run --run-dir ../<sweep>/p00` typed in another dir: the resume moves to the dir the point
    was started in, and the point's relative path, read after it, named no sweep: sweep.json kept
    calling the point failed."""
    data = json.loads((sweep / "sweep.json").read_text())
    data["points"][0].update(status="failed", error="exit code 1")
    (sweep / "sweep.json").write_text(json.dumps(data))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code = run_command([], False, f"../{sweep.name}/p00", None, None, [], dry=False)
    assert code == 0
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [(p["status"], p["error"]) for p in points] == [("succeeded", None)] * 2
