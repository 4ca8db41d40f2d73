"""JSON from outside nested past Python's recursion, at the places t3rl reads it besides the HTTP
bodies of tests/envs/test_outside_json_bodies.py: a tool call's string argument rendered for GLM
(SGLang's readings were tried with json.loads: RecursionError out of the render), a dataset's row, a
model directory's config.json, the Ray dashboard's status. Each was a RecursionError in Python's
words; each is now the reader's own refusal naming the limit, or (the render) the value written as
every reading gives it back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from launch.checks.hf_config import json_object
from launch.config.errors import ConfigError
from launch.run.executors.ray_capacity import gpu_usage
from t3rl_core.data.rows import DataError, read_jsonl
from t3rl_core.outside_json import MAX_DEPTH
from t3rl_core.parsers.render import render_calls
from t3rl_core.types import ToolCall
from tests.support.body_server import answering

LIMIT = f"nested at most {MAX_DEPTH} levels (t3rl_core.outside_json.MAX_DEPTH)"
DEEP = ["[" * levels + "]" * levels for levels in (MAX_DEPTH + 1, 5_000, 100_000)]


@pytest.mark.parametrize("text", [*DEEP, '{"a": ' * 5_000 + "1" + "}" * 5_000])
def test_a_deep_string_argument_is_rendered_for_glm_json_quoted(text: str) -> None:
    rendered = render_calls("glm45", [ToolCall("f", {"a": text})])
    value = rendered.split("<arg_value>")[1].split("</arg_value>")[0]
    assert json.loads(value) == text  # quoted: SGLang's first reading gives the string back


@pytest.mark.parametrize("text", DEEP)
def test_a_dataset_row_nested_past_the_limit_is_a_data_error_naming_its_line(
    tmp_path: Path, text: str
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_text('{"prompt": "a"}\n{"prompt": ' + text + "}\n")
    with pytest.raises(DataError) as caught:
        list(read_jsonl(path))
    assert f"{path}:2: the row nests more than {MAX_DEPTH} levels" in str(caught.value)
    assert LIMIT in str(caught.value)


def test_a_model_config_nested_past_the_limit_is_a_problem_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    path.write_text('{"hidden_size": 8, "x": ' + DEEP[1] + "}")
    config, problem = json_object(path)
    assert config is None and problem is not None
    assert problem.startswith(f"{path} nests more than {MAX_DEPTH}") and LIMIT in problem


def test_the_ray_status_nested_past_the_limit_is_a_config_error_naming_the_endpoint() -> None:
    with answering(('{"data": ' + DEEP[2] + "}").encode()) as url, pytest.raises(ConfigError) as caught:
        gpu_usage(url)
    assert f"{url}'s /api/cluster_status nests more than" in str(caught.value) and LIMIT in str(caught.value)
