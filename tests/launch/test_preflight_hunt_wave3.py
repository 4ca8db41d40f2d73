"""A newcomer's and a careless expert's mistakes of kinds no issue listed (hunt wave 3), each refused at the
key that was changed, with a first fix that validates, by a declaration rather than a case of its own:

- Hydra's `null` typed for a credential key (`eval.engine.api_key=null`): it was remembered as a
  credential, so every later "null" the process printed was masked, the pre-flight's fixes included
  (`set eval.engine.url=***`); null is no credential (t3rl_core.secret_names);
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.refusals import errors, fixed


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths of the configs resolve under tmp_path."""
    monkeypatch.chdir(tmp_path)


def _refused_at_key_with_a_fix_that_validates(overrides: list[str], key: str) -> None:
    found = errors(overrides)
    named = [e for e in found if e.key == key]
    assert named, f"not refused at {key}: {[(e.key, e.message) for e in found]}"
    assert "***" not in named[0].fix, named[0].fix
    assert errors(fixed(overrides, named[0])) == []


S2 = "+experiment=stage2_bfcl"

CASES = [
    # null typed for a credential: the next refusal's fix was masked (`set eval.engine.url=***`)
    ([S2, "eval.engine.api_key=null", "eval.engine.url=localhost:30000"], "eval.engine.url"),
]


@pytest.mark.parametrize(("overrides", "key"), CASES, ids=[" ".join(o[1:]) for o, _ in CASES])
def test_a_mistake_is_refused_at_its_key_with_a_fix_that_validates(overrides: list[str], key: str) -> None:
    _refused_at_key_with_a_fix_that_validates(overrides, key)
