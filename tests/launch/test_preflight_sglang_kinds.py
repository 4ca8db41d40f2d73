"""Kinds of mistakes SGLang and verl users report (server flags SGLang's parser or start-up checks
refuse, sampling values a request fails on, greedy group sampling), each expressed as t3rl overrides:
refused at `t3rl validate` with exit 2, the key the user set named and a first fix that validates; the
unusual settings next to them that are valid are accepted."""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import ConfigDict, TypeAdapter, ValidationError
from test_preflight import _invoke
from test_preflight_slime_kinds import (  # the same check of a refusal, on the same experiment
    test_kind_is_refused_with_key_and_a_fix_that_validates as refused_with_a_fix_that_validates,
)
from test_preflight_slime_kinds import workdir  # noqa: F401  (the working directory, used below)

from launch.checks.rules.sglang import SLIME_SAMPLING
from launch.checks.sglang_names import SAMPLING_DOMAINS
from launch.config.schema import CurriculumConfig
from launch.config.server_options import _DOMAINS, SERVER_OPTIONS, human_int, server_argv_problems
from launch.plan.slime_options import known_options
from t3rl_core.config import RolloutConfig
from t3rl_core.eval.config import EvalConfig

E = "+experiment=stage1_bfcl"
C = "stages.train.curriculum"
S = "eval.server.extra_args"
X = "model.architecture.extra_args"

B200 = ["hardware.gpu_type=B200", "hardware.gpu_memory_gib=180", "hardware.sglang_attention_backend=null"]

A100 = ["hardware.gpu_type=A100", "hardware.gpu_memory_gib=80"]

# (id, overrides, key named, a fragment of the message)
BAD = [
    (
        "quantization_for_a_newer_gpu",
        [f"{S}=[--quantization,w8a8_fp8]", *A100],
        S,
        "needs compute capability 8.9 or newer",
    ),
    (
        "sglang_backend_misspelt",
        ["hardware.sglang_attention_backend=flashinfr"],
        "hardware.sglang_attention_backend",
        "not an attention backend of SGLang",
    ),
    ("server_backend_not_on_gpu", [f"{S}=[--attention-backend,fa3]", *B200], S, "cannot run on a B200"),
    (
        "server_mla_backend_on_dense_model",
        [f"{S}=[--attention-backend,flashmla]"],
        S,
        "multi-latent attention",
    ),
    ("server_flag_misspelt", [f"{S}=[--atention-backend,fa3]"], S, "not an option of SGLang"),
    ("server_flag_ambiguous", [f"{S}=[--cuda-graph-max-bs,'64']"], S, "is ambiguous"),
    ("server_choice_misspelt", [f"{S}=[--kv-cache-dtype,fp8_e4m]"], S, "invalid choice 'fp8_e4m'"),
    ("server_choice_unknown", [f"{S}=[--schedule-policy,fifo]"], S, "invalid choice 'fifo'"),
    ("server_quantization_unknown", [f"{S}=[--quantization,fp6]"], S, "invalid choice 'fp6'"),
    ("server_page_size_zero", [f"{S}=[--page-size,'0']"], S, "not a whole number >= 1"),
    ("server_max_running_zero", [f"{S}=[--max-running-requests,'0']"], S, "not a whole number >= 1"),
    ("server_mem_fraction_over_one", [f"{S}=[--mem-fraction-static,'1.2']"], S, "not a fraction in (0, 1]"),
    ("server_context_not_a_number", [f"{S}=[--context-length,32q]"], S, "human-readable integer"),
    ("server_context_longer_than_model", [f"{S}=[--context-length,1M]"], S, "longer than the model's"),
    (
        "server_dp_attention_not_dividing_tp",
        [f"{S}=[--dp-size,'3',--enable-dp-attention]", "eval.server.tp=4"],
        S,
        "does not divide the server's tp 4",
    ),
    ("server_dp_replicas_over_gpus", [f"{S}=[--dp,'16']"], S, "need 16 GPUs"),
    ("server_ep_not_dividing_tp", [f"{S}=[--ep-size,'3']", "eval.server.tp=4"], S, "must divide it"),
    (
        "server_chunk_not_whole_pages",
        [f"{S}=[--chunked-prefill-size,'1000',--page-size,'64']"],
        S,
        "not a whole number of pages",
    ),
    ("slime_sglang_choice", [f"{X}=[--sglang-kv-cache-dtype,fp9]"], X, "invalid choice 'fp9'"),
    ("slime_sglang_dp_over_engine", [f"{X}=[--sglang-dp-size,'4']"], X, "need 4 GPUs"),
    ("slime_rollout_top_k_zero", [f"{X}=[--rollout-top-k,'0']"], X, "top_k must be -1 (off)"),
    ("slime_eval_top_p_zero", [f"{X}=[--eval-top-p,'0']"], X, "top_p must be in (0, 1]"),
    ("slime_eval_temperature_negative", [f"{X}=[--eval-temperature,'-0.5']"], X, "temperature must be"),
    (
        "template_kwarg_misspelt",
        ["+model.chat.chat_template_kwargs={enable_thinkng:false}"],
        "model.chat.chat_template_kwargs",
        "reads no variable enable_thinkng",
    ),
    (
        "thinking_switch_on_a_template_without_one",
        ["model=llama3_1_8b_instruct", "+model.chat.chat_template_kwargs={enable_thinking:false}"],
        "model.chat.chat_template_kwargs",
        "template llama3 reads no variable enable_thinking",
    ),
    (
        "server_flags_sglang_refuses_together",
        [f"{S}=[--enable-torch-compile,--disable-cuda-graph-padding]"],
        S,
        "refuses it next to --enable-torch-compile",
    ),
    (
        "server_flag_needing_another",
        [f"{S}=[--retraction-policy,priority]"],
        S,
        "--enable-priority-scheduling",
    ),
    (
        "priority_scheduling_with_another_policy",
        [f"{S}=[--enable-priority-scheduling,--schedule-policy,lpm]"],
        S,
        "fcfs or lof only",
    ),
    (
        "server_context_below_a_call",
        [f"{S}=[--context-length,'4096']", "eval.max_new_tokens=8192"],
        "eval.max_new_tokens",
        "leaves no room for a prompt",
    ),
    (
        "engine_context_below_a_call",
        [f"{X}=[--sglang-context-length,'8192']"],
        X,
        "before rollout_max_response_len 10000",
    ),
    (
        "greedy_group_sampling",
        [f"{C}.rollout_temperature=0"],
        f"{C}.rollout_temperature",
        "every advantage 0",
    ),
]

# Each CLI case validates in the module's working directory and composition cache.
pytestmark = pytest.mark.usefixtures("workdir")

UNUSUAL = [
    ("server_context_above_a_call", [f"{S}=[--context-length,'16384']", "eval.max_new_tokens=8192"]),
    ("priority_retraction", [f"{S}=[--retraction-policy,priority,--enable-priority-scheduling]"]),
    ("fp8_weights_on_ampere", [f"{S}=[--quantization,fp8]", *A100]),
    ("thinking_off", ["+model.chat.chat_template_kwargs={enable_thinking:false}"]),
    ("sglang_backend_flashinfer", ["hardware.sglang_attention_backend=flashinfer"]),
    ("server_backend_for_blackwell", [f"{S}=[--attention-backend,fa4]", *B200]),
    ("dp_attention_on_the_whole_server", [f"{S}=[--dp-size,'8',--enable-dp-attention]", "eval.server.tp=8"]),
    ("context_in_si_units", [f"{S}=[--context-length,32k]"]),
    ("abbreviated_flag", [f"{S}=[--mem-fraction,'0.7']"]),
    ("chunked_prefill_off", [f"{S}=[--chunked-prefill-size,'-1']"]),
    ("chunk_in_whole_pages", [f"{S}=[--chunked-prefill-size,'4096',--page-size,'64']"]),
    ("slime_sglang_switch", [f"{X}=[--sglang-enable-dp-attention,--sglang-dp-size,'1']"]),
    ("slime_top_k_off", [f"{X}=[--rollout-top-k,'-1']"]),
    (
        "sampled_eval_with_top_k",
        ["eval.temperature=0.7", "eval.top_k=20", "eval.samples=4", "eval.pass_k=[1,4]"],
    ),
]

# (id, overrides, key, a fragment of the warning)
WARNED = [
    ("server_chat_template", [f"{S}=[--chat-template,llama-3]"], S, "renders nothing"),
    ("expert_parallel_on_dense_model", [f"{S}=[--ep-size,'2']", "eval.server.tp=2"], S, "has no experts"),
    ("greedy_eval_top_k", ["eval.top_k=20"], "eval.top_k", "temperature 0 decodes greedily"),
]


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_kind_is_refused_with_key_and_a_fix_that_validates(
    overrides: list[str], key: str, message: str
) -> None:
    refused_with_a_fix_that_validates(overrides, key, message, Path.cwd())


@pytest.mark.parametrize("overrides", [c[1] for c in UNUSUAL], ids=[c[0] for c in UNUSUAL])
def test_unusual_but_valid_setting_is_accepted(overrides: list[str]) -> None:
    code, out = _invoke("validate", E, *overrides)
    assert code == 0, out


@pytest.mark.parametrize(("overrides", "key", "message"), [c[1:] for c in WARNED], ids=[c[0] for c in WARNED])
def test_probably_wrong_setting_is_warned(overrides: list[str], key: str, message: str) -> None:
    code, out = _invoke("validate", E, *overrides)
    assert code == 0, out
    assert re.search(rf"^warning {re.escape(key)}: .*{re.escape(message)}", out, re.M), out


def _tokenizer(root: Path, tokens: list[str]) -> str:
    root.mkdir()
    added = {str(i): {"content": token, "special": True} for i, token in enumerate(tokens)}
    (root / "tokenizer_config.json").write_text(json.dumps({"added_tokens_decoder": added}))
    return str(root)


def test_another_familys_tokenizer_is_refused(tmp_path: Path) -> None:
    llama = _tokenizer(tmp_path / "llama", ["<|begin_of_text|>", "<|eot_id|>"])
    refused_with_a_fix_that_validates(
        [f"model.chat.tokenizer={llama}"], "model.chat.tokenizer", "has no <|endoftext|>", Path.cwd()
    )


def test_a_tokenizer_of_the_family_is_accepted(tmp_path: Path) -> None:
    qwen = _tokenizer(tmp_path / "qwen", ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    code, out = _invoke("validate", E, f"model.chat.tokenizer={qwen}")
    assert code == 0, out


def test_a_misspelt_choice_is_corrected_to_the_nearest() -> None:
    argv = ["--kv-cache-dtype", "fp8_e4m", "--trust-remote-code"]
    [problem] = server_argv_problems(argv, "k", tp=1, gpus=1, context_length=None)
    assert problem.fix == "set k=[--kv-cache-dtype,fp8_e4m3,--trust-remote-code]"


def test_slime_prefix_reads_only_sglang_flags() -> None:
    argv = ["--lr", "2", "--sglang-page-sise", "16"]
    [problem] = server_argv_problems(argv, "k", tp=1, gpus=1, context_length=None, prefix="--sglang-")
    assert "did you mean --sglang-page-size?" in problem.message
    assert problem.fix == "set k=[--lr,'2',--sglang-page-size,'16']"


def test_human_readable_ints_as_sglang_reads_them() -> None:
    assert [human_int(v) for v in ("32768", "32k", "1.5k", "32Ki", "1M")] == [
        32768,
        32000,
        1500,
        32768,
        10**6,
    ]
    with pytest.raises(ValueError):
        human_int("32 k")


def test_declared_flags_are_options() -> None:
    """A misspelt flag in a declaration would make its domain never apply."""
    assert sorted(f for f in _DOMAINS if f not in SERVER_OPTIONS) == []
    options = known_options()
    assert sorted(f for f in SLIME_SAMPLING if f not in options) == []


_PROBES = [-3.0, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 100.0, math.inf, math.nan]
# t3rl's own sampling fields → the SGLang parameter each one sets.
_T3RL_SAMPLING = [
    (RolloutConfig, "temperature", "temperature"),
    (RolloutConfig, "top_p", "top_p"),
    (CurriculumConfig, "rollout_temperature", "temperature"),
    (CurriculumConfig, "rollout_top_p", "top_p"),
    (EvalConfig, "temperature", "temperature"),
    (EvalConfig, "top_p", "top_p"),
    (EvalConfig, "top_k", "top_k"),
]


def _accepts(model: Any, field: str, value: float) -> bool:
    info = model.model_fields[field]
    config = ConfigDict(allow_inf_nan=model.model_config.get("allow_inf_nan", True))
    adapter = TypeAdapter(Annotated[info.annotation, *info.metadata], config=config)
    try:
        adapter.validate_python(int(value) if field == "top_k" and math.isfinite(value) else value)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize(
    ("model", "field", "parameter"), _T3RL_SAMPLING, ids=lambda x: getattr(x, "__name__", x)
)
def test_t3rl_sampling_fields_have_exactly_sglangs_domains(model: Any, field: str, parameter: str) -> None:
    test, _ = SAMPLING_DOMAINS[parameter]
    probes = [v for v in _PROBES if field != "top_k" or (math.isfinite(v) and v == int(v))]
    differ = [v for v in probes if _accepts(model, field, v) != test(v)]
    assert differ == [], f"{model.__name__}.{field} and SGLang's {parameter} disagree on {differ}"


_TABLE_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "gen_sglang_server_options.py"


@pytest.fixture(scope="module")
def sglang_answers() -> dict[str, Any]:
    """What the installed SGLang says of t3rl's sampling domains and server option table, asked in one
    child (SGLang imports torch: ~12 s a child on this machine, so both questions share one import)."""
    code = f"""
import json
import math
import runpy
import sys
from sglang.srt.sampling.sampling_params import SamplingParams
from launch.checks.sglang_names import SAMPLING_DOMAINS
differ = []
for name, (test, _) in SAMPLING_DOMAINS.items():
    for value in [float(x) for x in {[str(v) for v in _PROBES]!r}]:
        if name in ("top_k", "min_new_tokens", "max_new_tokens"):
            if not math.isfinite(value) or value != int(value):
                continue
            value = int(value)
        extra = {{"max_new_tokens": None}} if name == "min_new_tokens" else {{}}
        try:
            SamplingParams(**{{name: value}}, **extra).verify(1000)
            ok = True
        except ValueError:
            ok = False
        if ok != test(value):
            differ.append((name, value, ok))
sys.argv = [{str(_TABLE_SCRIPT)!r}, "--check"]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
    table = None
except SystemExit as stop:
    table = None if stop.code in (None, 0) else str(stop.code)
print(json.dumps({{"sampling": differ, "table": table}}))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_sampling_domains_are_sglangs(sglang_answers: dict[str, Any]) -> None:
    """SAMPLING_DOMAINS accepts exactly what SGLang's SamplingParams.verify accepts."""
    assert sglang_answers["sampling"] == []


@pytest.mark.slow
def test_server_option_table_is_current(sglang_answers: dict[str, Any]) -> None:
    """The generated table equals what the installed SGLang's launch_server parses."""
    assert sglang_answers["table"] is None, sglang_answers["table"]
