"""The string kinds and numeric domains of t3rl_core.fields: what each accepts, what it refuses, and the
corrected value a refusal carries (launch prints it as the fix `set <key>=<value>`)."""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from pydantic import TypeAdapter, ValidationError

from t3rl_core import fields
from t3rl_core.fields import Corrected, OutOfOrder
from t3rl_core.strict import StrictModel


def _check(kind: Any, value: Any) -> Any:
    return TypeAdapter(kind).validate_python(value)


def _cause(kind: Any, value: Any) -> Exception:
    with pytest.raises(ValidationError) as caught:
        _check(kind, value)
    (error,) = caught.value.errors()
    return error.get("ctx", {}).get("error") or ValueError(error["msg"])


CORRECTED = [
    # The SGLang engine POSTs to <url>/generate at the server's root.
    ("SGLangUrl", "http://h:30000/generate", "http://h:30000"),
    ("SGLangUrl", "http://h:30000/generate/", "http://h:30000"),
    ("SGLangUrl", "http://h:30000/v1", "http://h:30000"),
    ("SGLangUrl", "http://h:30000/v1/chat/completions", "http://h:30000"),
    ("SGLangUrl", "h:30000", "http://h:30000"),
    ("SGLangUrl", "h:30000/generate", "http://h:30000"),
    # The openai client POSTs to <base_url>/chat/completions.
    ("OpenAIBaseUrl", "http://h:30001/v1/chat/completions", "http://h:30001/v1"),
    ("OpenAIBaseUrl", "https://api.example.org/v1/completions", "https://api.example.org/v1"),
    ("SandboxFusionUrl", "http://localhost:8080/run_code", "http://localhost:8080"),
    # Jobs go to the dashboard (8265); 6379 is the GCS, 10001 the Ray Client server.
    ("RayAddress", "http://head:6379", "http://head:8265"),
    ("RayAddress", "head:6379", "http://head:8265"),
    ("RayAddress", "ray://head:6379", "http://head:8265"),
    ("RayAddress", "ray://head:8265", "http://head:8265"),
    ("RayAddress", "http://head:10001", "ray://head:10001"),
    ("RayAddress", "http://head:8265/api/jobs/", "http://head:8265"),
    ("Hostname", "http://node-1:30001", "node-1"),
    ("Hostname", "node-1:30001", "node-1"),
    ("HookPath", "my_pkg.filters:keep_mixed", "my_pkg.filters.keep_mixed"),
    ("PathComponent", "../../x", "x"),
    ("PathComponent", "my run", "my_run"),
    ("LocalPath", " /data/x ", "/data/x"),
    ("SbatchOption", "#SBATCH --qos=high", "--qos=high"),
]


@pytest.mark.parametrize(("kind", "value", "corrected"), CORRECTED)
def test_a_refused_value_carries_the_corrected_one(kind: str, value: str, corrected: str) -> None:
    cause = _cause(getattr(fields, kind), value)
    assert isinstance(cause, Corrected) and cause.value == corrected
    assert _check(getattr(fields, kind), corrected) == corrected


ACCEPTED = [
    ("SGLangUrl", "https://sglang.example.org/api"),
    ("SGLangUrl", "http://[::1]:30000"),
    ("OpenAIBaseUrl", "http://127.0.0.1:30001/v1"),
    ("RayAddress", "http://head:8265"),
    ("RayAddress", "ray://head:10001"),
    ("Hostname", "0.0.0.0"),
    ("Hostname", "::1"),
    ("Hostname", "sandbox_fusion"),
    ("EnvVarName", "NCCL_NVLS_ENABLE"),
    ("HfHubId", "Qwen/Qwen3-4B-Instruct-2507"),
    ("HookPath", "t3rl_core.rewards.tau2.rejection_sampling_filter"),
    ("ModuleName", "numpy.linalg"),
    ("Interpreter", "python3"),
    ("Interpreter", "/opt/t3rl/.venv/bin/python"),
    ("ArgvToken", "--mem-fraction-static"),
    ("ArgvToken", '--json-model-override-args={"a": 1}'),
    ("ArgvToken", "a value with spaces"),
    ("ChatTag", "<|im_start|>"),
    ("DottedKey", "categories.multi_turn_base.pass@1"),
    ("UrlPath", "/v1"),
    ("StageRef", "train"),
    ("StageRef", "run:runs/stage1_bfcl/2025-01-01_00-00-00:train"),
    ("StageRef", "/shared/rollouts"),
    ("ContainerMount", "/shared:/shared:ro"),
    ("ContainerImage", "nvcr.io/nvidia/pytorch:24.07-py3"),
    ("Name", "deepseek-r1"),
    ("Label", "BytedTsinghua-SIA/DAPO-Math-17k"),
    ("Text", ""),
]


@pytest.mark.parametrize(("kind", "value"), ACCEPTED)
def test_kinds_accept_their_values(kind: str, value: str) -> None:
    assert _check(getattr(fields, kind), value) == value


REFUSED = [
    ("SGLangUrl", "ftp://h:30000"),
    ("SGLangUrl", "http://h:99999"),
    ("SGLangUrl", "http://"),
    ("EnvVarName", "1NAME"),
    ("EnvVarName", "MY-VAR"),
    ("HfHubId", "just-a-name"),
    ("HookPath", "function"),
    ("ModuleName", "numpy linalg"),
    ("Interpreter", "venv/bin/python"),
    ("Interpreter", "python3 -u"),
    ("ArgvToken", "--tp 2"),
    ("ChatTag", ""),
    ("DottedKey", "overall..accuracy"),
    ("UrlPath", "v1"),
    ("ContainerMount", "/a:/b,/c:/d"),
    ("ContainerImage", "my image"),
    ("SbatchOption", "qos=high"),
    ("Name", "two words"),
    ("Label", " padded"),
    ("Identifier", "enable-thinking"),
    ("Device", "gpu0"),
    ("SlurmDuration", "2days"),
    ("ClusterPath", "relative/path"),
]


@pytest.mark.parametrize(("kind", "value"), REFUSED)
def test_kinds_refuse_what_they_do_not_denote(kind: str, value: str) -> None:
    with pytest.raises(ValidationError):
        _check(getattr(fields, kind), value)


@pytest.mark.parametrize(
    ("kind", "inside", "outside"),
    [
        ("Probability", [0, 0.5, 1], [-1e-9, 1.000001]),
        ("Seed", [0, 2**32 - 1], [-1, 2**32]),
        ("Port", [1, 65535], [0, 65536]),
        ("Seconds", [0.001], [0, -1]),
        ("Delay", [0, 2.5], [-0.1]),
        ("GpuId", [0, 7], [-1]),
        ("OffOrPositiveInt", [-1, 1, 4096], [0, -2]),
        ("PositiveInt", [1], [0]),
        ("NonNegativeInt", [0], [-1]),
        ("FiniteReal", [-3.0, 1e300], [float("inf"), float("nan")]),
    ],
)
def test_numeric_domains(kind: str, inside: list[float], outside: list[float]) -> None:
    class Holder(StrictModel):
        value: getattr(fields, kind)  # type: ignore[valid-type]

    for value in inside:
        assert Holder(value=value).value == value
    for value in outside:
        with pytest.raises(ValidationError):
            Holder(value=value)


class _Range(StrictModel):
    low: float = 0.0
    high: Annotated[float, fields.AtLeast("low")] = 1.0
    top: Annotated[float, fields.Above("high")] | None = None


def test_an_order_is_checked_on_the_later_field_also_against_a_default() -> None:
    assert _Range(low=1.0, high=1.0)
    for data, field in [({"low": 2.0}, "high"), ({"high": -1.0}, "high"), ({"top": 1.0}, "top")]:
        with pytest.raises(ValidationError) as caught:
            _Range.model_validate(data)
        (error,) = caught.value.errors()
        assert error["loc"] == (field,)
        assert isinstance(error["ctx"]["error"], OutOfOrder)
    # A field that failed its own check is not compared again.
    with pytest.raises(ValidationError) as caught:
        _Range.model_validate({"low": "inf"})
    assert [e["loc"] for e in caught.value.errors()] == [("low",)]
