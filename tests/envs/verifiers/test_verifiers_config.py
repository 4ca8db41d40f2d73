"""env.args against the environment loader's signature at validation, without importing verifiers."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from tests.envs.verifiers.conftest import CALCULATOR, HUB_ENVS


def test_arguments_of_the_loader_validate() -> None:
    config = VerifiersEnvConfig(id=CALCULATOR, args={"num_examples": 2, "max_turns": 3})
    assert config.split_names() == ["verifiers_train", "verifiers_eval"]
    assert VerifiersEnvConfig(id="owner/vf-guess", args={"secret": 3}).id == "owner/vf-guess"
    assert VerifiersEnvConfig(id="vf_guess").args == {}


@pytest.mark.parametrize(
    ("env_id", "args", "words"),
    [
        (CALCULATOR, {"num_exampels": 2}, r"no argument \['num_exampels'\].*'num_examples'"),
        ("vf_not_installed", {}, "no installed module 'vf_not_installed'.*prime env install"),
    ],
)
def test_bad_arguments_are_refused(env_id: str, args: dict, words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        VerifiersEnvConfig(id=env_id, args=args)


def test_a_required_argument_must_be_given(tmp_path, monkeypatch) -> None:
    (tmp_path / "vf_needs_key.py").write_text("def load_environment(split, *, level=1, **kw):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ValidationError, match=r"needs \['split'\]"):
        VerifiersEnvConfig(id="vf_needs_key", args={"level": 2, "anything": 1})
    assert VerifiersEnvConfig(id="vf_needs_key", args={"split": "train", "anything": 1})


def test_validation_does_not_import_verifiers() -> None:
    code = (
        "import sys\n"
        f"sys.path.insert(0, {str(HUB_ENVS)!r})\n"
        "from t3rl_core.envs.verifiers.config import VerifiersEnvConfig\n"
        f"VerifiersEnvConfig(id={CALCULATOR!r}, args={{'num_examples': 1}})\n"
        "VerifiersEnvConfig(id='vf_guess', args={'secret': 2})\n"
        f"assert not {{'verifiers', {CALCULATOR!r}, 'vf_guess'}} & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
