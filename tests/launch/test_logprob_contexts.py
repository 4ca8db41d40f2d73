"""Truncated importance sampling on tokens trained in another context than they were sampled in (an
env's `off_context_logprobs()`: tau2's repaired turns) is refused; kept as context, or without the
repair, it is accepted."""

from __future__ import annotations

from pathlib import Path

from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from t3rl_core.envs.tau2.config import Tau2EnvConfig
from tests.support.fix_applier import apply_first_fix

TAU2 = "+experiment=tau2_pipeline"
TIS = "stages.grpo.curriculum.algorithm.use_tis=true"


def test_tis_on_repaired_turns_is_refused_and_the_fix_validates(sandbox: Path) -> None:  # noqa: F811
    overrides = [TAU2, TIS]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if "importance sampling" in e["message"]]
    assert error["key"] == "stages.grpo.curriculum.algorithm.use_tis", out
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after


def test_tis_without_off_context_tokens_is_accepted(sandbox: Path) -> None:  # noqa: F811
    for setting in ("env.format_repair=null", "env.format_repair.keep_in_history.train=true"):
        code, out = _invoke("validate", TAU2, TIS, setting)
        assert code == 0, f"{setting}:\n{out}"


def test_which_repairs_train_off_context_tokens() -> None:
    assert Tau2EnvConfig().off_context_logprobs() == "format_repair.train_on_repaired"
    assert Tau2EnvConfig(format_repair=None).off_context_logprobs() is None
    assert Tau2EnvConfig(format_repair={"train_on_repaired": False}).off_context_logprobs() is None
