"""launch.cli.forward_ref_code: typing's ForwardRefs of one text share one code object, and behave as
ForwardRefs compiled by the builtin do."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from launch.cli.forward_ref_code import compiled_once, share_compiled

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
