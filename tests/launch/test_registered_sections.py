"""A section a registry validates (`env`, `reward`: `t3rl_core.registry.registered`) is dumped as the entry's
own config model, with the fields its subclass adds, not as the field's base (`EnvConfig` holds `name`
only): the plan's runtime config and the run record are written from these dumps."""

from __future__ import annotations

from launch.checks.resolve import resolve
from t3rl_core.config import EnvConfig


def test_env_and_reward_are_dumped_with_their_entry_s_own_fields() -> None:
    run = resolve(["+experiment=stage2_bfcl"]).run
    assert set(type(run.env).model_fields) > set(EnvConfig.model_fields)  # BFCL's env adds fields
    for mode in ("python", "json"):
        dumped = run.model_dump(mode=mode)
        assert dumped["env"] == run.env.model_dump(mode=mode)
        assert dumped["reward"] == run.reward.model_dump(mode=mode)
