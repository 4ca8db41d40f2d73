"""A section given the name of an option of the group mounted there gets the group choice as its fix."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix


@pytest.mark.parametrize(
    ("overrides", "choice"),
    [
        (["+experiment=tau2_pipeline", "user_sim=scripted", "env.user=llm"], "user_sim=llm"),
        (["+experiment=tau2_pipeline", "env.user=scripted"], "user_sim=scripted"),
    ],
)
def test_a_group_option_given_as_the_section_gets_the_group_choice(
    overrides: list[str],
    choice: str,
    sandbox: Path,  # noqa: F811
) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    (error,) = _errors(out)
    assert error["key"] == "env.user" and error["fix"].startswith(f"set {choice} instead of"), out
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None and overrides[-1] not in fixed
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


def test_a_word_that_is_no_option_keeps_the_schema_fix(sandbox: Path) -> None:  # noqa: F811
    code, out = _invoke("validate", "+experiment=tau2_pipeline", "env.user=robot")
    assert code == 2, out
    assert "instead of" not in out and "env.user" in out, out
