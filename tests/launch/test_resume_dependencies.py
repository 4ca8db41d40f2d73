"""A rerun propagates along what stages read, not down the plan order.

A stage reruns when a stage whose output it reads (its `inputs`, `Stage.reads_from`) ran again,
directly or through another stage; a later stage that reads none of them stays cached.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pipeline_helpers import count, run, stage
from run_configs import group, make_run
from typer.testing import CliRunner

from launch.cli.app import app
from launch.plan.build import Plan, PlanContext, build_plan
from launch.run.output_digest import digests
from launch.run.pipeline import PipelineError, decide, verified_outputs
from launch.run.rundir import RunState, StageRecord

# The GPU pipeline with an eval of the base model beside the eval of the trained one.
GPU_STAGES = {
    "data": {"kind": "prepare_data"},
    "base": {"kind": "convert_hf_to_torch_dist"},
    "eval_reference": {"kind": "eval"},
    "train": {"kind": "train", "curriculum": group("curriculum/bfcl_stage1")},
    "export": {"kind": "convert_torch_dist_to_hf", "source": "train"},
    "eval": {"kind": "eval", "checkpoint": "export"},
}


def gpu_plan(root: Path) -> Plan:
    paths = {
        "runs_dir": str(root / "runs"), "checkpoints_dir": str(root / "ckpt"),
        "models_dir": str(root / "models"), "cache_dir": str(root / "cache"),
        "slime_root": "/root/slime", "megatron_root": "/root/Megatron-LM", "python": "python3",
    }  # fmt: skip
    run_config = make_run(stages=GPU_STAGES, paths=paths)
    return build_plan(run_config, PlanContext(root / "run", root, "/t3rl", "/venv/bin/python", "r", {}))


def test_each_stage_kind_reads_from_the_stages_whose_outputs_it_uses(tmp_path: Path) -> None:
    plan = gpu_plan(tmp_path)
    assert {s.name: set(s.reads_from()) for s in plan.stages} == {
        "data": set(),
        "base": set(),  # the base model's HF dir is outside the run
        "eval_reference": {"data"},
        "train": {"data", "base"},
        "export": {"train"},
        "eval": {"data", "export"},
    }


def finished_state(plan: Plan) -> RunState:
    """Every stage of `plan` succeeded, with each declared output on disk and its digest recorded."""
    state, ids = RunState(), {}
    for s in plan.stages:
        for path in (*s.verify, *s.complete_when):
            p = Path(path)
            if path in s.verify and not p.suffix:
                p.mkdir(parents=True, exist_ok=True)
                (p / "index.json").write_text(json.dumps({"stage": s.name}))
                for marker in s.verify[path].markers:  # what the stage declares a whole output holds
                    (p / marker).write_text(s.name)
            else:
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(s.name)
        outputs_json = plan.run_dir / "stages" / s.name / "outputs.json"
        outputs_json.parent.mkdir(parents=True, exist_ok=True)
        outputs_json.write_text(json.dumps(dict(s.outputs)))
        ids[s.name] = f"id-{s.name}"
        upstream = {name: ids[name] for name in s.reads_from()}
        outputs = digests(verified_outputs(plan, s))
        record = StageRecord("succeeded", s.fingerprint(), ids[s.name], upstream, outputs=outputs)
        state.stages[s.name] = record
    return state


def actions(plan: Plan, state: RunState, **selection: str) -> dict[str, tuple[str, str]]:
    return {d.stage: (d.action, d.reason) for d in decide(plan, state, **selection)}


def test_a_rerun_train_reruns_its_export_and_eval_not_the_base_models_eval(tmp_path: Path) -> None:
    plan = gpu_plan(tmp_path)
    state = finished_state(plan)
    assert {a for a, _ in actions(plan, state).values()} == {"cached"}
    state.stages["train"].fingerprint = "an older command"
    assert actions(plan, state) == {
        "data": ("cached", "unchanged since it succeeded"),
        "base": ("cached", "unchanged since it succeeded"),
        "eval_reference": ("cached", "unchanged since it succeeded"),
        "train": ("run", "its command, env or config changed"),
        "export": ("run", "upstream ran again: train"),
        "eval": ("run", "upstream ran again: export"),
    }


def test_damaged_prepared_data_reruns_every_stage_that_reads_it(tmp_path: Path) -> None:
    plan = gpu_plan(tmp_path)
    state = finished_state(plan)
    split = next(p for p in plan.stage("data").verify if p.endswith(".jsonl"))
    Path(split).write_text("garbage\n")
    decided = actions(plan, state)
    assert decided["data"][0] == "run" and decided["data"][1].startswith("output damaged: ")
    assert decided["base"] == ("cached", "unchanged since it succeeded")
    assert decided["eval_reference"] == ("run", "upstream ran again: data")
    assert decided["train"] == ("run", "upstream ran again: data")
    # export reads only train: it reruns because train does, and says so.
    assert decided["export"] == ("run", "upstream ran again: train")
    assert decided["eval"] == ("run", "upstream ran again: data, export")


def test_a_damaged_eval_summary_reruns_that_eval_only(tmp_path: Path) -> None:
    plan = gpu_plan(tmp_path)
    state = finished_state(plan)
    Path(plan.stage("eval_reference").outputs["summary"]).unlink()
    decided = actions(plan, state)
    assert decided.pop("eval_reference") == (
        "run",
        "output damaged: stages/eval_reference/summary.json is missing",
    )
    assert {a for a, _ in decided.values()} == {"cached"}


def diamond(run_dir: Path, marks: Path) -> Plan:
    """data → eval_a and data → eval_b, each eval writing a summary."""
    data = run_dir / "stages" / "data" / "train.jsonl"
    evals = []
    for name in ("eval_a", "eval_b"):
        summary = run_dir / "stages" / name / "summary.json"
        evals.append(stage(name, marks, f"echo '{{}}' > {summary}", reads=("data",), verify=(str(summary),)))
    write = f"mkdir -p {data.parent} && echo '{{}}' > {data}"
    return Plan("test", run_dir, (stage("data", marks, write, verify=(str(data),)), *evals))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    run_dir, marks = tmp_path / "run", tmp_path / "marks"
    run_dir.mkdir()
    marks.mkdir()
    return run_dir, marks


def test_executing_a_damaged_eval_reruns_it_alone_and_records_only_what_it_reads(dirs) -> None:
    run_dir, marks = dirs
    plan = diamond(run_dir, marks)
    assert run(plan, run_dir).status == "succeeded"
    (run_dir / "stages" / "eval_a" / "summary.json").write_text("garbage")
    result = run(plan, run_dir)
    assert [(d.stage, d.action) for d in result.decisions] == [
        ("data", "cached"),
        ("eval_a", "run"),
        ("eval_b", "cached"),
    ]
    assert [count(marks, n, "done") for n in ("data", "eval_a", "eval_b")] == [1, 2, 1]
    records = json.loads((run_dir / "state.json").read_text())["stages"]
    assert records["eval_b"]["upstream"] == {"data": records["data"]["run_id"]}
    # The next resume finds everything as it left it.
    assert {d.action for d in run(plan, run_dir).decisions} == {"cached"}


def test_from_an_eval_leaves_the_eval_beside_it_cached(dirs) -> None:
    run_dir, marks = dirs
    plan = diamond(run_dir, marks)
    run(plan, run_dir)
    result = run(plan, run_dir, from_stage="eval_a")
    assert [(d.action, d.reason) for d in result.decisions] == [
        ("outside", "not selected"),
        ("run", "selected by --from/--only"),
        ("cached", "unchanged since it succeeded"),
    ]


def test_a_record_that_lists_every_earlier_stage_as_upstream_is_still_cached(dirs) -> None:
    # Records written before upstreams were per dependency hold every earlier stage's run id.
    run_dir, marks = dirs
    plan = diamond(run_dir, marks)
    run(plan, run_dir)
    state_file = run_dir / "state.json"
    state = json.loads(state_file.read_text())
    records = state["stages"]
    records["eval_b"]["upstream"]["eval_a"] = records["eval_a"]["run_id"]
    state_file.write_text(json.dumps(state))
    assert {d.action for d in run(plan, run_dir).decisions} == {"cached"}


def test_only_needs_the_outputs_the_stage_reads(dirs) -> None:
    run_dir, marks = dirs
    plan = diamond(run_dir, marks)
    run(plan, run_dir)
    (run_dir / "stages" / "eval_a" / "summary.json").unlink()
    # eval_b does not read eval_a: a damaged eval_a does not stop it.
    result = run(plan, run_dir, only="eval_b")
    assert [d.action for d in result.decisions] == ["outside", "outside", "run"]


def test_a_stage_that_reads_a_later_stage_is_refused(dirs) -> None:
    run_dir, marks = dirs
    plan = Plan("test", run_dir, (stage("a", marks, reads=("b",)), stage("b", marks)))
    with pytest.raises(PipelineError, match="stage 'a' reads the output of b, which is not an earlier stage"):
        decide(plan, RunState())


# The quickstart's stages at their smallest: one category's data, one task of it evaluated once. Both
# evals use the scripted engine: which engine an eval runs decides nothing here (eval_tiny still reads
# the data and the model), and the tiny model's transformers eval costs a fresh process ~10 s of both
# cores per run (tests/e2e/test_quickstart.py runs it).
QUICKSTART = [
    "+experiment=quickstart",
    # One category's data (the tiny tokenizer and model are built on it): what reruns is decided by what
    # each stage reads, whatever the data's size.
    "env.data.categories=[multi_turn_base]",
    *(
        setting.format(stage)
        for stage in ("eval_reference", "eval_tiny")
        for setting in (
            "stages.{}.eval.limit_per_category=1",
            "+stages.{}.eval.categories=[multi_turn_base]",
            "stages.{}.eval.repeats=1",
        )
    ),
    "~stages.eval_tiny.eval.engine",
    "+stages.eval_tiny.eval.engine={name: reference}",
]


def t3rl(*args: str) -> str:
    """The command in this process (the stages still run as their own processes): what is tested is
    what the run decides, not the CLI's start-up."""
    # Wide enough that no reason is wrapped in the plan table.
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "400"}, catch_exceptions=False)
    assert result.exit_code == 0, result.output[-3000:]
    return result.output


def run_ids(run_dir: Path) -> dict[str, str]:
    return {k: v["run_id"] for k, v in json.loads((run_dir / "state.json").read_text())["stages"].items()}


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_real_quickstart_run_reruns_only_what_reads_a_damaged_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    paths = [f"paths.runs_dir={tmp_path / 'runs'}", f"paths.cache_dir={tmp_path / 'cache'}"]
    t3rl("run", *QUICKSTART, *paths)
    (run_dir,) = (tmp_path / "runs" / "quickstart").iterdir()

    # Both evals come after prepare_model; eval_tiny comes after eval_reference but does not read it.
    before = run_ids(run_dir)
    (run_dir / "stages" / "eval_reference" / "summary.json").unlink()
    preview = t3rl("plan", "--run-dir", str(run_dir))
    out = t3rl("run", "--run-dir", str(run_dir))
    for text in (preview, out):
        assert "run (output damaged: stages/eval_reference/summary.json is missing)" in text, text
        assert "upstream ran again" not in text, text
    after = run_ids(run_dir)
    assert {name for name in before if after[name] != before[name]} == {"eval_reference"}

    # The tiny model is built on the prepared data, and both evals read the data and the model.
    split = run_dir / "stages" / "prepare_data" / "data" / "bfcl_test.jsonl"
    split.write_bytes(split.read_bytes() + b"garbage\n")
    preview = t3rl("plan", "--run-dir", str(run_dir))
    out = t3rl("run", "--run-dir", str(run_dir))
    for text in (preview, out):
        assert "run (output damaged: stages/prepare_data/data/bfcl_test.jsonl changed" in text, text
        # The model is content-keyed in the shared cache: an identical one is adopted, not rebuilt.
        assert "complete (output exists and is complete)" in text, text
        assert "upstream ran again: prepare_data, prepare_model" in text, text
    assert preview.count("upstream ran again: prepare_data, prepare_model") == 2, preview  # both evals
    final = run_ids(run_dir)
    assert all(final[name] != after[name] for name in ("prepare_data", "eval_reference", "eval_tiny"))
