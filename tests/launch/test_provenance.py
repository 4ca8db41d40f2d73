"""Where each key came from: the group file, the experiment that chose it, overrides, deletions,
interpolations, user config dirs — and `t3rl show --explain` printing it."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from launch.checks.resolve import resolve
from launch.cli.app import app
from launch.config.composed import compose_resolved

CONF = Path(__file__).resolve().parents[2] / "conf"


@pytest.fixture(scope="module")
def stage2():
    return compose_resolved(
        [
            "+experiment=stage2_bfcl",
            "model=qwen3_8b",
            "hardware.nodes=2",
            "+stages.train.hardware.pipeline_parallel=1",
            "~stages.eval",
        ]
    ).provenance


def test_default_group_file(stage2) -> None:
    origin = stage2.origin("eval.split")
    assert origin.source.endswith("conf/eval/default.yaml")
    assert origin.chosen_by == ""


def test_group_file_chosen_by_an_experiment(stage2) -> None:
    origin = stage2.origin("hardware.tensor_parallel")
    assert origin.source.endswith("conf/hardware/h200x8.yaml")
    assert origin.chosen_by == "experiment/stage2_bfcl.yaml"
    assert origin.raw == 2


def test_group_file_chosen_on_the_command_line_beats_the_experiment(stage2) -> None:
    origin = stage2.origin("model.architecture.hidden_size")
    assert origin.source.endswith("conf/model/qwen3_8b.yaml")
    assert origin.chosen_by == "override `model=qwen3_8b`"


def test_experiment_body_and_mounted_curriculum(stage2) -> None:
    assert stage2.origin("stages.train.hardware.context_parallel").source.endswith(
        "conf/experiment/stage2_bfcl.yaml"
    )
    curriculum = stage2.origin("stages.train.curriculum.train_split")
    assert curriculum.source.endswith("conf/curriculum/bfcl_stage2.yaml")
    assert curriculum.chosen_by == "experiment/stage2_bfcl.yaml"
    # The curriculum file does not "set" the stage that contains it.
    assert stage2.origin("stages.train").source.endswith("conf/experiment/stage2_bfcl.yaml")


def test_overrides_come_last(stage2) -> None:
    assert stage2.source("hardware.nodes") == "override `hardware.nodes=2`"
    assert stage2.source("stages.train.hardware.pipeline_parallel") == (
        "override `+stages.train.hardware.pipeline_parallel=1`"
    )
    assert stage2.order("hardware.nodes") > stage2.order("hardware.gpus_per_node")


def test_deleted_key_names_the_deletion(stage2) -> None:
    origin = stage2.origin("stages.eval")
    assert origin.deleted
    assert stage2.source("stages.eval.checkpoint") == "deleted by override `~stages.eval`"


def test_interpolation_keeps_the_written_form(stage2) -> None:
    assert stage2.origin("model.chat.tokenizer").raw == "${model.hf_checkpoint}"


def test_unset_key_has_no_source(stage2) -> None:
    assert stage2.source("no.such.key") == ""


def test_primary_config_keys() -> None:
    provenance = compose_resolved([]).provenance
    for key in ("seed", "stages"):  # the file and the line where it writes the key
        file, _, line = provenance.source(key).rpartition(":")
        assert file.endswith("conf/config.yaml"), provenance.source(key)
        assert Path(file).read_text().splitlines()[int(line) - 1].startswith(f"{key}:"), line


def test_manifest_form_lists_every_leaf() -> None:
    provenance = resolve(["+experiment=stage1_bfcl"]).provenance
    table = provenance.to_dict()
    assert table["stages.train.curriculum.num_rollout"].startswith("conf/curriculum/bfcl_stage1.yaml")
    assert all(isinstance(v, str) and v for v in table.values())


def test_user_config_dir_adds_an_option_and_names_its_file(tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    text = (CONF / "model" / "qwen3_8b.yaml").read_text().replace("name: qwen3_8b", "name: my_qwen")
    (model_dir / "my_qwen.yaml").write_text(text)
    resolved = resolve(["model=my_qwen"], [str(tmp_path)])
    assert resolved.run.model.name == "my_qwen"
    assert str(model_dir / "my_qwen.yaml") in resolved.provenance.source("model.name")
    # the same through hydra.searchpath, Hydra's own spelling
    via_searchpath = resolve(["model=my_qwen", f"hydra.searchpath=[file://{tmp_path}]"])
    assert via_searchpath.run.model.name == "my_qwen"
    # and our options are still there
    assert resolve(["model=qwen3_8b"], [str(tmp_path)]).run.model.name == "qwen3_8b"


def test_explain_prints_value_source_and_written_form() -> None:
    result = CliRunner().invoke(
        app,
        [
            "show",
            "+experiment=stage1_bfcl",
            "hardware.tensor_parallel=4",
            "--explain",
            "hardware.tensor_parallel",
            "--explain",
            "model.chat.tokenizer",
            "-e",
            "hardware.recompute",
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    assert "hardware.tensor_parallel = 4\n    set in: override `hardware.tensor_parallel=4`" in out
    assert "model.chat.tokenizer = models/Qwen3-4B-Instruct-2507" in out
    assert "written as: ${model.hf_checkpoint}" in out
    assert "chosen by: experiment/stage1_bfcl.yaml" in out
    assert "hardware.recompute.num_layers = 2" in out


def test_explain_names_schema_defaults(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    text = (CONF / "model" / "qwen3_8b.yaml").read_text()
    kept = [line for line in text.splitlines() if not line.startswith("synthetic:")]
    (tmp_path / "model" / "lean.yaml").write_text("\n".join(kept) + "\n")
    args = ["show", "model=lean", "-e", "model.synthetic", "-e", "model.name", "--config-dir", str(tmp_path)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "model.synthetic = false\n    set in: (schema default" in result.output
    assert f"set in: {tmp_path / 'model' / 'lean.yaml'}" in result.output


def test_explain_unknown_key_suggests_and_exits_2() -> None:
    result = CliRunner().invoke(app, ["show", "--explain", "hardware.tensor_paralel"])
    assert result.exit_code == 2
    assert "did you mean --explain hardware.tensor_parallel?" in result.output


def test_show_prints_the_config_even_when_it_does_not_validate() -> None:
    result = CliRunner().invoke(app, ["show", "hardware.tensor_parallel=3", "-e", "hardware.tensor_parallel"])
    assert result.exit_code == 2
    assert "hardware.tensor_parallel = 3" in result.output
    assert "not divisible by TP 3" in result.output
