"""Pre-flight of a verifiers environment that is installed but cannot be played as asked: read from the
installed module's source and its package's metadata (nothing imported), blamed on the key that asks."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix

HUB = "+experiment=hub_env_grpo"
LOADER = "def load_environment(num_examples: int = 3, split: str = 'train'):\n    raise AssertionError\n"


@pytest.fixture
def install(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], str]:  # noqa: F811
    """Install module `name` 0.1.0 (the LOADER), its package's metadata requiring `requires`."""

    def installed(name: str, requires: str = "") -> str:
        site = sandbox / f"site_{name}"
        info = site / f"{name}-0.1.0.dist-info"
        info.mkdir(parents=True)
        (site / f"{name}.py").write_text(LOADER)
        lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 0.1.0"]
        (info / "METADATA").write_text(
            "\n".join([*lines, *([f"Requires-Dist: {requires}"] * bool(requires))])
        )
        monkeypatch.syspath_prepend(str(site))
        return name

    return installed


@pytest.mark.parametrize(
    ("override", "words"),
    [
        ("env.args={num_examples:many}", "takes num_examples: int, got str 'many'"),
        ("env.args={split:[train]}", "takes split: str, got list"),
    ],
)
def test_env_args_of_the_wrong_type(override: str, words: str, install: Callable[..., str]) -> None:
    name = install("vf_kinds_typed")
    code, out = _invoke("validate", HUB, f"env.id={name}", override)
    assert code == 2, out
    assert [e["key"] for e in _errors(out)] == ["env.args"] and words in out, out


@pytest.mark.parametrize(
    ("env_id", "words"),
    [
        ("owner/vf_kinds_old", "requires verifiers<0.2, but verifiers 0.2"),
        ("owner/vf_kinds_old@0.3.0", "asks for version 0.3.0 of 'owner/vf_kinds_old'"),
    ],
)
def test_an_installed_environment_of_another_version(
    env_id: str, words: str, install: Callable[..., str]
) -> None:
    install("vf_kinds_old", "verifiers<0.2")
    code, out = _invoke("validate", HUB, f"env.id={env_id}")
    assert code == 2, out
    assert [e["key"] for e in _errors(out)] == ["env.id"] and words in out, out


@pytest.mark.parametrize("endpoint", ["/ws", "/schema", "/health/", "/step"])
def test_an_openenv_url_of_an_endpoint_gets_the_root(endpoint: str, sandbox: Path) -> None:  # noqa: F811
    overrides = [HUB, "env=openenv", f"env.url=http://127.0.0.1:8765{endpoint}"]
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    errors = _errors(out)
    assert [e["key"] for e in errors] == ["env.url"] and f"appends {endpoint.rstrip('/')} itself" in out, out
    code, after = _invoke("validate", *apply_first_fix(overrides, errors[0]))
    assert code == 0, after
