"""Hub environments: a verifiers environment that is not installed is blamed on env.id with the nearest
installed module as the fix; a row limit below a batch of prompts is refused like any small split."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from t3rl_core.import_paths import nearest_module, resolve
from tests.support.fix_applier import apply_first_fix

HUB = "+experiment=hub_env_grpo"


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("env.id=t3rl_core.envs.verifiers.calculator_exampl", "env.id"),
        ("env.id=someone/not-installed-env", "env.id"),
        ("env.data.limit=4", "env.data.limit"),
    ],
)
def test_refused_at_the_key_with_a_fix_that_validates(override: str, key: str, sandbox: Path) -> None:  # noqa: F811
    overrides = [HUB, override]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    errors = _errors(out)
    assert [e["key"] for e in errors] == [key], out
    code, after = _invoke("validate", *apply_first_fix(overrides, errors[0]))
    assert code == 0, after


def test_a_misspelt_module_gets_the_installed_one() -> None:
    assert (
        nearest_module("t3rl_core.envs.verifiers.calculator_exampl")
        == "t3rl_core.envs.verifiers.calculator_example"
    )
    assert nearest_module("t3rl_core.no_such_package.x") is None


def test_a_missing_top_level_package_gets_no_unrelated_module() -> None:
    """A plugin package that is not on the path is not `rlcompleter`: among all installed top-level
    modules only a near-spelling is proposed."""
    unresolved = resolve("t3rl_corpus.world:CounterWorld")  # 0.8 like t3rl_core: no near-spelling
    assert unresolved is not None and unresolved.package_missing and unresolved.nearest is None
