"""A config's interpolations see OmegaConf's `oc.*` resolvers alone, whatever else the process registered.

Hydra registers `now`, `hydra` and `python_version` process-wide as soon as anything creates a Hydra app
(t3rl's Optuna sweeps do): before, `seed=${now:%H}` was refused in a fresh process and accepted after a
sweep had run in it, so the pre-flight's verdict depended on what ran before it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hydra.core.utils import setup_globals
from hypothesis import given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf
from omegaconf.basecontainer import BaseContainer

from tests.support.refusals import errors as _errors
from tests.support.refusals import fixed as _fixed


@pytest.fixture
def hydra_resolvers() -> Iterator[None]:
    before = dict(BaseContainer._resolvers)
    setup_globals()
    yield
    BaseContainer._resolvers.clear()
    BaseContainer._resolvers.update(before)


@pytest.mark.parametrize("value", ["${now:%H}", "${python_version:}", "${hydra:job.name}"])
@pytest.mark.usefixtures("hydra_resolvers")
def test_a_resolver_hydra_registered_in_the_process_is_still_refused(value: str) -> None:
    args = ["+experiment=stage1_bfcl", f"seed={value}"]
    (error,) = _errors(args)
    assert error.key == "seed", error
    assert error.fix.startswith("drop `seed="), error
    assert _errors(_fixed(args, error)) == []
    assert "now" in BaseContainer._resolvers, "the process's resolvers are given back after the check"


@settings(max_examples=5, deadline=None)
@given(name=st.from_regex(r"[a-z][a-z_]{2,12}", fullmatch=True).filter(lambda name: name != "oc"))
def test_any_resolver_registered_outside_t3rl_is_refused(name: str) -> None:
    OmegaConf.register_new_resolver(name, lambda *_: 7, replace=True)
    try:
        (error,) = _errors(["+experiment=stage1_bfcl", f"seed=${{{name}:}}"])
    finally:
        BaseContainer._resolvers.pop(name, None)
    assert error.key == "seed", error
    assert f"no resolver {name}" in error.message + error.fix, error
