"""A config field in words (launch.config.field_docs): the comment above it, its type, domain and default,
and the comments of config files; `t3rl show --explain` and the configuration reference print the same."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field
from typer.testing import CliRunner

from launch.cli.app import app
from launch.config.field_docs import comment_in_file, doc_at, field_doc, yaml_comments
from launch.config.schema import AlgorithmConfig, HardwareConfig
from t3rl_core.fields import AtLeast, Port, Probability, RegistryName
from t3rl_core.strict import StrictModel

REPO = Path(__file__).resolve().parents[2]


class Base(StrictModel):
    # The base's own field,
    # described on two lines.
    name: RegistryName = "x"


class Child(Base):
    note: str = "# not a comment"  # a trailing comment is not the field's description
    # Chance of a hint.
    chance: Probability = 0.5

    # A blank line above the field ends its comment block.
    port: Port = 30000
    low: float = Field(0.1, gt=0, le=1)
    high: Annotated[float, AtLeast("low")] = 0.2
    kind: Literal["a", "b"] = "a"
    sizes: list[Annotated[int, Field(ge=1)]] = Field(default_factory=lambda: [1], min_length=1)
    needed: int


def test_the_comment_block_right_above_a_field_is_its_description() -> None:
    assert field_doc(Child, "chance").comment == "Chance of a hint."
    assert field_doc(Child, "port").comment == "A blank line above the field ends its comment block."
    assert field_doc(Child, "note").comment == ""
    assert field_doc(Child, "name").comment == "The base's own field, described on two lines."


def test_the_domain_is_read_from_the_declarations() -> None:
    assert field_doc(Child, "chance").domain == "probability: a number in [0, 1]"
    assert field_doc(Child, "port").domain == "port: a TCP port in [1, 65535]"
    assert field_doc(Child, "low").domain == "> 0 and ≤ 1"
    assert field_doc(Child, "high").domain == ">= low"
    assert field_doc(Child, "kind").domain == "one of: a, b"
    assert field_doc(Child, "sizes").domain == "at least 1 item(s); items: ≥ 1"
    assert field_doc(Child, "name").domain.startswith("registry name: ")
    clip_high = field_doc(AlgorithmConfig, "eps_clip_high").domain
    assert clip_high == "positive real: a finite number > 0; >= eps_clip"


def test_type_and_default_read_as_in_a_config_file() -> None:
    sizes = field_doc(Child, "sizes")
    assert (sizes.type, sizes.default) == ("list[int]", "[1]")
    assert field_doc(Child, "needed").default == "required"
    recompute = field_doc(HardwareConfig, "recompute")
    assert (recompute.type, recompute.default) == ("RecomputeConfig | null", "null")
    assert recompute.comment == "Megatron activation recomputation."  # its model's docstring
    assert field_doc(Child, "kind").summary() == "str · one of: a, b · default a"


def test_a_key_is_described_by_the_model_its_section_narrows_to() -> None:
    data = {"env": {"name": "bfcl_multi_turn"}}
    doc = doc_at("env.augmentation.probability", data)
    assert doc is not None and doc.domain == "probability: a number in [0, 1]"
    assert doc_at("env.no_such_field", data) is None
    assert doc_at("hardware.env_vars.HF_TOKEN", {}) is None  # a free-form dict's entry


def test_yaml_comments_are_read_per_key_outside_quotes() -> None:
    text = 'a: 1  # one\nb:  # section\n  c: "x # y"  # the real one\n  d: [1, 2]\nlist:\n  - e: 3  # item\n'
    assert yaml_comments(text) == {"a": "one", "b": "section", "b.c": "the real one"}
    comments = {"name": "run name", "stages.train.curriculum.name": "curriculum name"}
    assert comment_in_file("stages.train.curriculum.name", comments) == "curriculum name"
    assert comment_in_file("hardware.name", {"name": "shown in plans"}) == "shown in plans"


def test_explain_prints_the_reference_text_of_the_key() -> None:
    result = CliRunner().invoke(app, ["show", "--explain", "hardware.gpus_per_engine"])
    assert result.exit_code == 0, result.output
    doc = field_doc(HardwareConfig, "gpus_per_engine")
    assert f"    {doc.summary()}\n    {doc.comment}\n" in result.output
    assert "conf/hardware/h200x8.yaml: GPUs per SGLang engine (SGLang tensor parallel)" in result.output
    reference = (REPO / "docs" / "reference" / "config" / "hardware.md").read_text()
    row = next(line for line in reference.splitlines() if line.startswith("| `hardware.gpus_per_engine` |"))
    assert f"| {doc.type} · {doc.domain} | `{doc.default}` | {doc.comment} |" in row
