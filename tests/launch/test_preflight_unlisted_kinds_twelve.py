"""A twelfth round of kinds of mistakes no issue listed, each refused at the key that was changed, with a
first fix that validates, by a declaration rather than by a case of its own:

- a user or group id no POSIX system has (`env.sandbox.cell_uid=2**32`): every id field declares the POSIX
  id domain (t3rl_core.fields.PosixId), and a walk over the schema finds any id field that does not.

Each case is judged as the mutation harness judges it (tests/support/preflight_mutations.py).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from t3rl_core.fields import Domain
from tests.support.preflight_mutations import Mutation, judge
from tests.support.schema_leaves import config_models, import_all, leaves


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative paths of the configs (the tracker's dir, the data) resolve under tmp_path."""
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------------------------------ POSIX ids

_ID_FIELD = re.compile(r"(^|_)(uid|gid)$")


def test_every_id_field_declares_the_posix_id_domain() -> None:
    import_all()
    ids = [leaf for model in config_models() for leaf in leaves(model) if _ID_FIELD.search(leaf.field)]
    assert ids, "the walk found no uid or gid field"
    undeclared = [
        leaf.name
        for leaf in ids
        if not any(isinstance(m, Domain) and m.name == "POSIX id" for m in leaf.metadata)
    ]
    assert undeclared == []


ID_CASES = [
    Mutation("retool", "huge", f"env.sandbox.cell_{which}", str(value))
    for which in ("uid", "gid")
    for value in (2**32, 2**32 - 1, 10**12)  # past uid_t; (uid_t) -1, "unchanged"; round eleven's huge
]


@pytest.mark.parametrize("mutation", ID_CASES, ids=[str(m) for m in ID_CASES])
def test_an_id_no_posix_system_has_is_refused_at_its_key(mutation: Mutation) -> None:
    verdict = judge(mutation)  # was accepted
    assert verdict.outcome == "refused, fix validates", verdict.detail


def test_the_largest_posix_id_is_accepted() -> None:
    verdict = judge(Mutation("retool", "huge", "env.sandbox.cell_uid", str(2**32 - 2)))
    assert verdict.outcome == "accepted", verdict.detail
