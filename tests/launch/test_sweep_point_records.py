"""A sweep point's own record, not `sweep.json`, says whether it succeeded: each kind of damage to one
point's run dir makes a resume of the sweep run that point again, and only that one, `t3rl runs show
<sweep dir>` list it as not succeeded and rank it nowhere; a point sweep.json calls failed whose record
says it succeeded is kept, not run again. (Each trusted sweep.json's word before.)

One real two-point sweep of a data-preparation experiment (a second or two a point) is recorded once;
each case damages a copy of it. The points' runs are stood in for: what is checked is which points the
resume would run (it composes each point, to check the succeeded ones for stale stages:
test_sweep_point_fingerprint.py).
"""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from rich.console import Console

from launch.run import sweep_runs
from tests.support.rec_sweep import record_sweep, score_first_best
from tests.support.rec_sweep import shown as _shown


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A finished sweep of `rec` over two test sizes."""
    with pytest.MonkeyPatch.context() as patch:
        yield record_sweep(tmp_path_factory.mktemp("sweep"), patch)[0]


@pytest.fixture
def sweep(recorded: Path, tmp_path: Path) -> Path:
    """A copy of the recorded sweep, to damage."""
    copy = tmp_path / recorded.name
    shutil.copytree(recorded, copy, symlinks=True)
    return copy


def _state(run_dir: Path) -> dict:
    return json.loads((run_dir / "state.json").read_text())


def _edit_state(edit: Callable[[dict], None]) -> Callable[[Path], None]:
    def damage(run_dir: Path) -> None:
        state = _state(run_dir)
        edit(state)
        (run_dir / "state.json").write_text(json.dumps(state))

    return damage


def _output(run_dir: Path) -> Path:
    """An output the point's stage recorded a digest of: its outputs.json (its data files are links
    into the shared data cache, which every copy reads)."""
    output = run_dir / "stages" / "prepare_data" / "outputs.json"
    assert str(output).replace(str(run_dir), "") in json.dumps(_state(run_dir)["stages"]["prepare_data"])
    return output


def _cut_short(path: Path) -> None:
    text = path.read_text()
    path.write_text(text[: len(text) // 2])


DAMAGE: dict[str, Callable[[Path], None]] = {
    "state.json deleted": lambda run_dir: (run_dir / "state.json").unlink(),
    "state.json cut short": lambda run_dir: _cut_short(run_dir / "state.json"),
    "state.json not JSON": lambda run_dir: (run_dir / "state.json").write_text("{not json"),
    "stage failed": _edit_state(lambda s: s["stages"]["prepare_data"].update(status="failed", message="x")),
    "stage running": _edit_state(lambda s: s["stages"]["prepare_data"].update(status="running")),
    "stage record gone": _edit_state(lambda s: s["stages"].pop("prepare_data")),
    "pipeline failed": _edit_state(lambda s: s["pipeline"].update(status="failed")),
    "stage field damaged": _edit_state(lambda s: s["stages"]["prepare_data"].update(outputs=None)),
    "config.yaml not YAML": lambda run_dir: (run_dir / "config.yaml").write_text("a: [1\n"),
    "output deleted": lambda run_dir: _output(run_dir).unlink(),
    "output changed": lambda run_dir: _output(run_dir).write_bytes(_output(run_dir).read_bytes() + b"x"),
}


def _resumed(sweep: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[int] | None, str]:
    """The indexes of the points a resume of `sweep` runs (None: it ran none), and what it printed."""
    ran: list[list[int]] = []
    monkeypatch.setattr(sweep_runs, "run_points", lambda run, *a, **k: ran.append([p.index for p in run]))
    out = io.StringIO()
    assert sweep_runs.resume_sweep(sweep, None, None, Console(file=out, width=300)) in (0, None)
    return (ran[0] if ran else None), " ".join(out.getvalue().split())


def test_the_recorded_sweep_resumes_nothing_and_lists_both_points_succeeded(
    sweep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _resumed(sweep, monkeypatch) == (None, f"every point of {sweep} succeeded; nothing to resume")
    shown = _shown(sweep)
    assert "succeeded" in shown["p00"] and "succeeded" in shown["p01"], shown["all"]


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_point_is_run_again_alone_and_listed_as_not_succeeded(
    sweep: Path, damage: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    DAMAGE[damage](sweep / "p00")
    ran, out = _resumed(sweep, monkeypatch)
    assert ran == [0], out
    assert "point 0 (env.data.test_size=3): sweep.json says succeeded, but its record says" in out, out
    assert "(a resume of the sweep runs it again)" in out
    shown = _shown(sweep)
    assert "succeeded" not in shown["p00"], shown["all"]
    assert "succeeded" in shown["p01"], shown["all"]
    assert "point 0 (env.data.test_size=3): sweep.json says succeeded" in shown["all"]


def test_a_damaged_point_is_never_the_best(sweep: Path) -> None:
    """Scored as a search's trials are, p00 best; damaged, it is not ranked and p01 is best."""
    score_first_best(sweep)
    shown = _shown(sweep)
    assert "best" in shown["p00"] and "best" not in shown["p01"], shown["all"]
    DAMAGE["output deleted"](sweep / "p00")
    shown = _shown(sweep)
    assert "best" not in shown["p00"] and "0.9" not in shown["p00"], shown["all"]
    assert "best" in shown["p01"], shown["all"]


def test_a_point_sweep_json_calls_failed_whose_record_succeeded_is_kept(
    sweep: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sweep.json says p01 failed (a launcher that died before recording its end), its record says it
    succeeded: the resume runs nothing, says so, and sweep.json says succeeded from then on."""
    data = json.loads((sweep / "sweep.json").read_text())
    data["points"][1].update(status="failed", error="exit code 1")
    (sweep / "sweep.json").write_text(json.dumps(data))
    assert "succeeded" in _shown(sweep)["p01"]
    ran, out = _resumed(sweep, monkeypatch)
    assert ran is None, out
    assert "point 1 (env.data.test_size=4): sweep.json says failed, but its record says it succeeded" in out
    points = json.loads((sweep / "sweep.json").read_text())["points"]
    assert [(p["status"], p["error"]) for p in points] == [("succeeded", None)] * 2
