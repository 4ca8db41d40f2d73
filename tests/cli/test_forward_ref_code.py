"""launch.cli.forward_ref_code: typing's ForwardRefs of one text share one code object, and behave as
ForwardRefs compiled by the builtin do."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import typing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.cli.forward_ref_code import compiled_once, exec_compiled_once, share_compiled

REPO = Path(__file__).resolve().parents[2]

TEXTS = ["bool", "dict[str, Any]", "Required[CoreSchema]", "int | None", "list['Inner']", "x.y[z]"]


@pytest.fixture(autouse=True)
def shared() -> None:
    share_compiled()  # importing launch.cli already did; idempotent


def test_typing_compiles_through_the_shared_compile() -> None:
    assert vars(typing)["compile"] is compiled_once
    first, second = typing.ForwardRef("dict[str, int]"), typing.ForwardRef("dict[str, int]")
    assert first.__forward_code__ is second.__forward_code__


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TEXTS) | st.text(alphabet="abc[]|,. '0", min_size=1, max_size=16))
def test_a_forward_ref_behaves_as_the_builtin_makes_it(text: str) -> None:
    try:
        # as typing compiles it: typing has no future flags (this module has)
        expected = compile(text, "<string>", "eval", dont_inherit=True)
    except SyntaxError:
        with pytest.raises(SyntaxError, match="Forward reference must be an expression"):
            typing.ForwardRef(text)
        return
    code = typing.ForwardRef(text).__forward_code__
    for attribute in ("co_code", "co_consts", "co_names", "co_flags", "co_filename"):
        assert getattr(code, attribute) == getattr(expected, attribute), attribute


def test_a_forward_ref_evaluates_as_before() -> None:
    namespace = {"Inner": int, "Any": typing.Any}
    ref = typing.ForwardRef("dict[str, Inner]")
    assert typing._eval_type(ref, namespace, namespace) == dict[str, int]


def test_pydantic_core_compiles_each_text_once_after_launch_cli() -> None:
    """In a fresh interpreter: importing pydantic-core after launch.cli compiles each distinct
    annotation text once (without the shared compile: ~740 compiles of ~200 texts)."""
    probe = (
        "import sys\n"
        "seen = []\n"
        "callers = ('typing.py', 'forward_ref_code.py')\n"
        "sys.addaudithook(lambda event, args: event == 'compile' and args[1] == '<string>'"
        " and sys._getframe(1).f_code.co_filename.endswith(callers) and seen.append(args[0]))\n"
        "import launch.cli, pydantic_core\n"
        "print(len(seen), len(set(seen)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    compiles, distinct = map(int, done.stdout.split())
    assert distinct > 50
    assert compiles == distinct


def test_dataclasses_exec_through_the_shared_compile() -> None:
    assert vars(dataclasses)["exec"] is exec_compiled_once

    @dataclasses.dataclass(frozen=True)
    class One:
        func: int

    @dataclasses.dataclass(frozen=True)
    class Other:
        func: int

    assert One.__eq__.__code__ is Other.__eq__.__code__  # one text, one code
    assert One.__eq__ is not Other.__eq__ and One.__init__.__qualname__.startswith("test_")


# A dataclass of every kind of field dataclasses writes code for, described by what its generated
# methods do: run in fresh interpreters, with and without launch.cli's shared compile.
DATACLASS_PROBE = """
import sys
if sys.argv[1] == "cli":
    import launch.cli
import dataclasses, inspect, json
from typing import ClassVar

@dataclasses.dataclass(frozen=True, slots=True, order=True)
class Point:
    x: int
    y: "tuple[int, ...]" = dataclasses.field(default_factory=tuple)
    z: ClassVar[int] = 3
    w: dataclasses.InitVar[int] = 0
    label: str = dataclasses.field(default="p", repr=False, compare=False)

@dataclasses.dataclass(kw_only=True)
class Bare:
    a: float = 1.5

p = Point(1, (2,), 4, label="q")
try:
    p.x = 2
    frozen = "assigned"
except dataclasses.FrozenInstanceError as error:
    frozen = str(error)
print(json.dumps([
    repr(p), str(inspect.signature(Point)), {k: str(v) for k, v in Point.__init__.__annotations__.items()},
    p == Point(1, (2,), label="r"), p < Point(2), hash(p) == hash(Point(1, (2,))), frozen, Point.__doc__,
    repr(Bare()), str(inspect.signature(Bare)), Bare(a=2.0) == Bare(a=2.0), Bare.__init__.__qualname__,
]))
"""


def test_a_dataclass_behaves_as_the_builtin_exec_makes_it() -> None:
    """Annotations stay objects (compiled without this module's future flags), defaults, factories,
    frozen assignment, ordering, hashing, keyword-only fields and names as dataclasses makes them."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def run(mode: str) -> list[object]:
        done = subprocess.run(
            [sys.executable, "-c", DATACLASS_PROBE, mode], env=env, capture_output=True, text=True, check=True
        )
        return json.loads(done.stdout)

    with_cli, plain = run("cli"), run("plain")
    assert with_cli == plain
    assert with_cli[2]["x"] == "<class 'int'>"
