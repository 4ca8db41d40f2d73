"""Hub environments, by kind: an installed verifiers environment whose own dependency is missing.

`prime env install` or `pip install` of an environment's package can leave out a module it imports (an
extra not chosen, a dependency its metadata forgot, a second machine). Pre-flight only looked the
environment's module up, so `t3rl validate` passed and `t3rl eval` failed at load time telling the user
to install the environment, which was installed. Now pre-flight reads the module's top-level imports
(ast, nothing imported) and blames env.id naming the missing module; the load-time message names it too.
Imports under try, if (TYPE_CHECKING) or inside functions stay the module's affair; a package's own
modules that its files import relatively at their top (`from .env import load_environment`) are read too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from t3rl_core.envs.verifiers.config import VerifiersEnvConfig
from t3rl_core.envs.verifiers.loader_args import dependency_problem
from tests.envs.test_hub_kinds_one import module

LOADER = "\ndef load_environment(**kwargs):\n    raise RuntimeError('not called by validation')\n"
MISSING = "h83_absent_dependency"


@pytest.mark.parametrize(
    "imports",
    [
        f"import {MISSING}\n",
        f"import json, {MISSING}.sub as sub\n",
        f"from {MISSING}.things import thing\n",
        f"from __future__ import annotations\nimport os\nfrom {MISSING} import x\n",
    ],
)
def test_a_missing_dependency_is_blamed_on_env_id(imports: str, tmp_path, monkeypatch) -> None:
    name = module(tmp_path, monkeypatch, "h83_env_missing_dep", imports + LOADER)
    problem = dependency_problem(name)
    assert problem is not None and f"imports '{MISSING}', which is not" in problem
    with pytest.raises(ValidationError, match=rf"id\n.*imports '{MISSING}', which is not: install"):
        VerifiersEnvConfig(id=name)


@pytest.mark.parametrize(
    "imports",
    [
        f"try:\n    import {MISSING}\nexcept ImportError:\n    {MISSING} = None\n",
        f"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import {MISSING}\n",
        f"def later():\n    import {MISSING}\n",
        "import json\nfrom collections import abc\n",
    ],
)
def test_optional_and_deferred_imports_validate(imports: str, tmp_path, monkeypatch) -> None:
    name = module(tmp_path, monkeypatch, "h83_env_optional_dep", imports + LOADER)
    assert dependency_problem(name) is None
    assert VerifiersEnvConfig(id=name).id == name


def test_the_load_time_message_names_the_dependency(tmp_path, monkeypatch) -> None:
    boundary = pytest.importorskip("t3rl_core.envs.verifiers.boundary")
    name = module(tmp_path, monkeypatch, "h83_env_missing_dep_load", f"import {MISSING}\n{LOADER}")
    with pytest.raises(boundary.EnvLoadError, match=rf"installed but imports '{MISSING}', which is not"):
        boundary.loaded(name, {})
    with pytest.raises(
        boundary.EnvLoadError, match=r"install it \(`prime env install h83_env_not_installed`"
    ):
        boundary.loaded("h83_env_not_installed", {})


def _package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, files: dict[str, str]) -> str:
    for relative, text in files.items():
        (tmp_path / name / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name / relative).write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, name, raising=False)
    return name


@pytest.mark.parametrize(
    ("files", "refused"),
    [
        (
            {"__init__.py": "from .env import load_environment\n", "env.py": f"import {MISSING}\n{LOADER}"},
            "env.py",
        ),
        (
            {
                "__init__.py": "from . import rubric\nfrom .env import load_environment\n",
                "rubric/__init__.py": "from .scoring import score\n",
                "rubric/scoring.py": f"from {MISSING} import judge\n",
                "env.py": LOADER,
            },
            "scoring.py",
        ),
        (
            {
                "__init__.py": "from .env import load_environment\n",
                "env.py": f"try:\n    import {MISSING}\nexcept ImportError:\n    pass\n{LOADER}",
            },
            None,
        ),
    ],
)
def test_a_packages_own_modules_are_read_too(files: dict, refused: str | None, tmp_path, monkeypatch) -> None:
    name = _package(tmp_path, monkeypatch, f"h83_pkg_env_{len(files)}_{refused is None}", files)
    problem = dependency_problem(name)
    if refused is None:
        assert problem is None
    else:
        assert problem is not None and f"imports '{MISSING}'" in problem and refused in problem
