"""A section given the name of an option of the group mounted there gets the group choice as its fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix

REPO = Path(__file__).resolve().parents[2]


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


def test_a_valid_config_is_checked_without_loading_hydra(tmp_path: Path) -> None:
    """The fix search needs Hydra's loader; a config that validates must not pay for importing it."""
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('hydra' in sys.modules, file=sys.stderr))\n"
        "sys.argv[0] = 't3rl'\nfrom launch.cli import main\nmain()"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env |= {"PYTHONPATH": str(REPO), "T3RL_NO_CACHE": "1", "T3RL_COMPOSE_AHEAD": "0"}
    done = subprocess.run(
        [sys.executable, "-c", probe, "validate", "+experiment=quickstart"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines()[-1] == "False", done.stderr
