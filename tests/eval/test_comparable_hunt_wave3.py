"""Comparable results, hunt wave three (docs/explanation/comparable-results.md, "Hunt wave three").

Two evals stopped at other points (or leaving other tasks unscored) averaged over other tasks and
recorded equal identities, so `t3rl runs diff` showed them `same`; a resume whose engine served another
model kept the earlier model's episodes and named the new one. Each is closed where every comparison
(or every resume) reads it: the identity's `coverage` records which tasks an eval scored when not all
(`identity.coverage_of`); the kept records carry the model that played them (`resume.Resumed.model`).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from t3rl_core.config import RewardConfig
from t3rl_core.eval import runner
from t3rl_core.eval.identity import coverage_of, differences, scorer_record
from t3rl_core.eval.resume import Resumed
from t3rl_core.eval.runner import run_eval
from tests.eval.test_comparable_kinds import rows
from tests.eval.test_identity_guard import _run
from tests.support.eval_runs import bfcl_runtime, reference_config


def _records(*tasks: str, aborted: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    return [
        {"category": "multi_turn_base", "task_id": t, "status": "aborted" if t in aborted else "completed"}
        for t in tasks
    ]


def test_two_evals_stopped_at_other_tasks_are_not_one_benchmark(tmp_path: Path) -> None:
    """Both `complete: false, unscored: 0`: equal identities over other tasks, shown `same`."""
    early = coverage_of(_records("t0", "t1"), complete=False)
    late = coverage_of(_records("t2", "t3"), complete=False)
    (found,) = differences({"coverage": early}, {"coverage": late})
    assert found.startswith("coverage: scored_tasks_sha256 "), found
    # The same tasks reached (an eval and its copy, or two stopped at the same point) still compare.
    assert differences({"coverage": early}, {"coverage": coverage_of(_records("t1", "t0"), False)}) == []
    # A complete eval's coverage is as before: summaries of every task stay equal to older ones.
    assert coverage_of(_records("t0", "t1"), complete=True) == {"complete": True, "unscored": 0}
    # Complete, each leaving another task unscored (the engine failed it, within the rate).
    one = coverage_of(_records("t0", "t1", aborted=("t0",)), complete=True)
    other = coverage_of(_records("t0", "t1", aborted=("t1",)), complete=True)
    assert one["unscored"] == other["unscored"] == 1 and differences({"coverage": one}, {"coverage": other})


def test_runs_diff_refuses_two_interrupted_evals_of_other_tasks(tmp_path: Path) -> None:
    base = {
        "complete": False,
        "reason": "stopped by the user before every episode finished; --resume goes on",
        "overall": {"accuracy": 1.0, "tasks": 2, "episodes": 2},
        "identity": {"coverage": coverage_of(_records("t0", "t1"), complete=False)},
    }
    other = copy.deepcopy(base)
    other["overall"]["accuracy"] = 0.5
    other["identity"]["coverage"] = coverage_of(_records("t2", "t3"), complete=False)
    done = CliRunner().invoke(
        app, ["runs", "diff", str(_run(tmp_path, "a", base)), str(_run(tmp_path, "b", other))]
    )
    text = " ".join(done.output.split())
    assert done.exit_code == 1 and "refused: eval: " in text and "scored_tasks_sha256" in text
    assert "finish the incomplete eval (`--resume`" in text


def _served(fingerprint: str) -> Any:
    def record(engine: Any, served: Any, checkpoint: Any) -> dict[str, Any]:
        return {
            "engine": "sglang",
            "url": "http://gpu-node:30000",
            "served_model": "ckpt",
            "checkpoint": {"path": "/ckpt", "fingerprint": fingerprint, "files": 3, "bytes": 9},
        }

    return record


def test_a_resume_whose_engine_serves_another_model_adds_no_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job fingerprint holds the engine's settings, not the model its server serves: a resume against
    a server now serving another checkpoint kept the earlier model's episodes, and the summary named the
    new model alone."""
    config, two = reference_config(concurrency=1), rows()[:2]
    monkeypatch.setattr(runner, "model_record", _served("sha256:" + "a" * 64))
    first = asyncio.run(run_eval(bfcl_runtime(), config, two, tmp_path, show_progress=False))
    lines = (tmp_path / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "trajectories.jsonl").write_text("".join(lines[:-1]))  # its last episode to play again
    monkeypatch.setattr(runner, "model_record", _served("sha256:" + "b" * 64))
    mixed = asyncio.run(run_eval(bfcl_runtime(), config, two, tmp_path, resume=True, show_progress=False))
    assert mixed["complete"] is False and mixed["reason"].startswith("not resumed: the 1 episode(s) kept")
    assert "sha256:aaaa" in mixed["reason"] and "sha256:bbbb" in mixed["reason"]
    assert f"which always resumes: remove {tmp_path} and run the stage again" in mixed["reason"]
    assert mixed["model"] == first["model"]  # the summary stays the kept episodes' model's
    assert mixed["attempts"]["episodes_by_attempt"] == {"1": 1}
    # The same checkpoint served elsewhere (another url) is the same model: a resume goes on.
    kept = Resumed(records={("t", 0, 0): {}}, model=first["model"])
    assert kept.another_model(first["model"] | {"url": "http://other-node:30000"}, tmp_path) is None
    assert kept.another_model(mixed["model"], tmp_path) is None
    nothing_kept = Resumed(model=first["model"])
    assert nothing_kept.another_model({"engine": "reference"}, tmp_path) is None


EDITED_WORLD = """
from t3rl_core.config import EnvConfig


class EditedConfig(EnvConfig):
    name: str = "edited_world:World"


def score(answer):
    return {score}
"""


@pytest.mark.parametrize("editable", [True, False], ids=["editable", "released"])
def test_a_plugin_edited_under_its_version_is_another_scorer_when_installed_editable(
    editable: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin installed with `pip install -e` keeps its version while its code changes: edited between
    two points of a sweep (or two attempts of a resume), both scored as one benchmark."""
    package = tmp_path / "edited_world"
    package.mkdir()
    info = tmp_path / "edited_world-0.3.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: edited_world\nVersion: 0.3.0\n")
    if editable:
        url = {"url": package.as_uri(), "dir_info": {"editable": True}}
        (info / "direct_url.json").write_text(json.dumps(url))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "edited_world", raising=False)
    found = []
    for score in ("answer == 1", "answer >= 1"):  # the world's scoring edited, the version kept
        (package / "__init__.py").write_text(EDITED_WORLD.format(score=score))
        importlib.invalidate_caches()
        module = (
            importlib.reload(sys.modules["edited_world"])
            if found
            else importlib.import_module("edited_world")
        )
        found.append(scorer_record(module.EditedConfig(), RewardConfig(name="env_score")))
    assert found[0]["version"] == "0.3.0"
    if editable:
        assert found[0]["source_sha256"] != found[1]["source_sha256"]
    else:  # a released version follows its code: recorded as before, by its version alone
        assert found[0] == found[1] == {"package": "edited_world", "version": "0.3.0"}


TEMPLATE_PLUGIN = """
from t3rl_core.chat.custom import ChatTemplate
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.shipped import load_template

MINE = ChatTemplate(FAMILIES["qwen3"], load_template("qwen3"){edit})
"""


def test_a_chat_template_plugin_edited_under_its_name_is_another_protocol(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `.jinja` file was compared by its content, a template plugin (`my_pkg.chat:MINE`) by its name:
    its template edited, or another release of its package, measured as the same protocol."""
    from t3rl_core.eval.identity import _plugin_template_digest, protocol_of

    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mine_chat", raising=False)
    runtime = bfcl_runtime()
    found = []
    for edit in ("", '.replace("<|im_start|>system", "<|im_start|>system\\\\nBe brief.")'):
        (tmp_path / "mine_chat.py").write_text(TEMPLATE_PLUGIN.format(edit=edit))
        importlib.invalidate_caches()
        if "mine_chat" in sys.modules:
            importlib.reload(sys.modules["mine_chat"])
        chat = runtime.chat.model_copy(update={"chat_template": "mine_chat:MINE"})
        found.append(protocol_of(runtime.model_copy(update={"chat": chat})))
    assert found[0]["chat_sha256"] != found[1]["chat_sha256"]
    # A shipped template is compared by its name, as before (its source follows t3rl's commit).
    assert runtime.chat.chat_template == "qwen3" and _plugin_template_digest("qwen3") is None
