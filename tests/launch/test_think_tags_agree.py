"""The reasoning tags an env's prompt asks for (`EnvConfig.prompt_think_tags()`) are the ones the model's
parser strips (`model.parsers.think_tags`): a mismatch is refused with the tags to use, and a prompt
asking for tags nothing strips warns."""

from __future__ import annotations

from pathlib import Path

from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix

S1 = "+experiment=stage1_bfcl"


def test_a_prompt_asking_for_other_tags_than_the_parser_strips_is_refused(sandbox: Path) -> None:  # noqa: F811
    overrides = [S1, "env.data.think_tags=['<think>','</think>']"]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "env.data.think_tags"]
    assert "<thinking>" in error["fix"], out
    code, after = _invoke("validate", *apply_first_fix(overrides, error))
    assert code == 0, after


def test_tags_nothing_strips_warn_and_following_the_parser_is_accepted(sandbox: Path) -> None:  # noqa: F811
    none = ["model.parsers.think_tags=null", "model.parsers.reasoning_parser=null"]
    code, out = _invoke("validate", S1, *none, "env.data.think_tags=['<r>','</r>']")
    assert code == 0 and "warning env.data.think_tags" in out and "strips no reasoning" in out, out
    # The env follows the parser through its interpolation: changing the parser's tags changes both.
    code, out = _invoke("validate", S1, "model.parsers.think_tags=['<think>','</think>']")
    assert code == 0 and "think_tags" not in out, out
