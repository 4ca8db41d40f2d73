"""One walk over a validated config's `Secret`s (launch.config.secrets.secret_references), read by both the
masking (`remember_revealed`) and the pre-flight probe of references (launch.checks.rules.kinds): two walks
had been written, and one passed by what the other read. The walk must find what a walk of every
attribute, mapping, list and tuple finds, under the same keys, whatever the field's type; and no other
module of launch/ may look for `Secret`s on its own."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from launch.checks.resolve import resolve
from launch.config import secrets
from launch.config.secrets import secret_references
from t3rl_core.secret import Secret

ROOT = Path(__file__).resolve().parents[2]


def every_secret(node: Any, prefix: str = "") -> list[tuple[str, Secret]]:
    """Every `Secret` under `node`, reading every field of every model (the plain definition)."""
    if isinstance(node, Secret):
        return [(prefix, node)]
    if isinstance(node, BaseModel):
        items: Any = ((name, getattr(node, name)) for name in type(node).model_fields)
    elif isinstance(node, dict):
        items = node.items()
    elif isinstance(node, list | tuple):
        items = enumerate(node)
    else:
        return []
    found = []
    for name, value in items:
        found += every_secret(value, f"{prefix}.{name}" if prefix else str(name))
    return found


class Leaf(BaseModel):
    key: Secret | None = None
    count: int = 0


class Holder(BaseModel):
    """A `Secret` in every kind of place a config may hold one."""

    bare: Secret
    optional: Annotated[Secret | None, Field(description="x")] = None
    listed: list[Secret] = Field(default_factory=list)
    mapped: dict[str, Secret] = Field(default_factory=dict)
    leaf: Leaf = Field(default_factory=Leaf)
    leaves: list[Leaf] = Field(default_factory=list)
    leaf_map: dict[str, Leaf] = Field(default_factory=dict)
    pair: tuple[Leaf, ...] = ()
    anything: Any = None
    names: list[str] = Field(default_factory=list)


HOLDER = Holder(
    bare="env:A",
    optional="env:B",
    listed=["env:C", "file:/d"],
    mapped={"m": "env:E"},
    leaf={"key": "env:F"},
    leaves=[{"key": "env:G"}, {}],
    leaf_map={"x": {"key": "env:H"}},
    pair=({"key": "env:I"},),
    anything={"deep": [Secret("env:J")]},
    names=["env:NOT_A_SECRET"],
)


def _same(found: list[tuple[str, Secret]], expected: list[tuple[str, Secret]]) -> None:
    assert [(k, id(s)) for k, s in found] == [(k, id(s)) for k, s in expected]


def test_every_place_a_model_holds_a_secret_is_walked() -> None:
    found = list(secret_references(HOLDER))
    _same(found, every_secret(HOLDER))
    assert len(found) == 10  # A to J (d the second listed): the plain walk itself finds them all
    _same(list(secret_references(HOLDER.leaf_map, "root")), every_secret(HOLDER.leaf_map, "root"))


def test_remember_revealed_reveals_every_secret_the_walk_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    revealed: list[str] = []
    monkeypatch.setattr(Secret, "reveal", lambda self: revealed.append(self.reference) or "")
    secrets.remember_revealed(HOLDER)
    assert revealed == [s.reference for _, s in every_secret(HOLDER)]


@pytest.fixture(scope="module")
def composed() -> Any:
    """A config with references in a train stage's section (tau2's customer) and the eval's."""
    return resolve(
        [
            "+experiment=tau2_pipeline",
            "env.user.api_key=env:T3RL_WALK_ONE",
            "eval.engine.api_key=file:/t3rl-walk-one/key",
            "executor=slurm",  # not probed here: the walk alone is under test
        ]
    ).run


def test_a_composed_config_is_walked_as_every_field_is(composed: Any) -> None:
    found = list(secret_references(composed))
    _same(found, every_secret(composed))
    assert {k for k, _ in found} >= {"env.user.api_key", "eval.engine.api_key"}


def _walks_secrets(path: Path) -> bool:
    """Whether the module tests a value for being a `Secret` (`isinstance(x, Secret)`)."""
    text = path.read_text()
    if "Secret" not in text:  # most modules: not parsed
        return False
    for node in ast.walk(ast.parse(text)):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "isinstance"
            and len(node.args) == 2
        ):
            kinds = node.args[1]
            names = kinds.elts if isinstance(kinds, ast.Tuple) else [kinds]
            if any(getattr(n, "id", None) == "Secret" for n in names):
                return True
    return False


def test_no_second_walk_for_secrets_in_launch() -> None:
    walkers = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "launch").rglob("*.py") if _walks_secrets(p))
    assert walkers == ["launch/config/secrets.py"], (
        "read a config's Secrets with launch.config.secrets.secret_references, not a walk of its own"
    )
