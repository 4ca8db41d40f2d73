"""Patterns a cold `t3rl validate` / `plan` of stage2_bfcl never matches with are not compiled on its
way (each costs the cold start its compile: benchmarks/cli_startup.py): they are pattern strings that
re compiles, and caches, on first use. Run in a fresh interpreter, as a user runs it."""

from __future__ import annotations

import fractions
import platform
import textwrap
from pathlib import Path

import pytest
import yaml.constructor
import yaml.reader

from launch.config import yaml_readings
from t3rl_core import secret_commands, secret_name_words, secret_shapes
from tests.architecture.cold_command import probed

NEVER_COMPILED = {
    # Only text holding a header word (Authorization, Bearer, X-Api-Key, …) is matched against it.
    "t3rl_core.secret_shapes._HEADER": secret_shapes._HEADER,
    # PyYAML's pure-Python reader's, compiled on import unless deferred (launch.cli.deferred_patterns):
    # libyaml reads every shipped file.
    "yaml.reader.Reader.NON_PRINTABLE": yaml.reader.Reader.NON_PRINTABLE,
    # YAML 1.1's other readings of a number (`0755`, `1:30`): no shipped config holds one.
    "launch.config.yaml_readings._OCTAL": yaml_readings._OCTAL,
    "launch.config.yaml_readings._SEXAGESIMAL": yaml_readings._SEXAGESIMAL,
    # Read only for what a command sets (`redis-cli config set requirepass V`) and a hash under a key.
    "t3rl_core.secret_commands._CONFIG_SECRET_NAMES": secret_commands._CONFIG_SECRET_NAMES,
    "t3rl_core.secret_name_words._HASH": secret_name_words._HASH,
    "t3rl_core.secret_name_words._SECRET_KEY_HEAD": secret_name_words._SECRET_KEY_HEAD,
    # Compiled on import by the standard library and PyYAML unless deferred (launch.cli.deferred_patterns:
    # LIBRARY_MODULES): a Fraction read from text, PyPy's version string, the C library's version read
    # from a binary, a wrapped text, a timestamp read by PyYAML's pure-Python constructor.
    "fractions._RATIONAL_FORMAT": fractions._RATIONAL_FORMAT,
    "platform._pypy_sys_version_parser": platform._pypy_sys_version_parser,
    "platform._libc_search": platform._libc_search,
    "textwrap.TextWrapper.wordsep_re": textwrap.TextWrapper.wordsep_re,
    "yaml.constructor.SafeConstructor.timestamp_regexp": yaml.constructor.SafeConstructor.timestamp_regexp,
}


def _text(pattern: object) -> object:
    """A pattern's text, whether the module holds it compiled or as a string."""
    return getattr(pattern, "pattern", pattern)


PROBE = """
import atexit, json, re, sys
compiled = []
original = re._compiler.compile

def recording(pattern, flags=0):
    compiled.append(pattern if isinstance(pattern, str) else None)
    return original(pattern, flags)

re._compiler.compile = recording
atexit.register(lambda: print(json.dumps([p for p in compiled if p]), file=sys.__stderr__))
sys.argv[0] = "t3rl"
from launch.cli import main
main()
"""


@pytest.mark.parametrize("command", ["validate", "plan"])
def test_unused_patterns_are_not_compiled(command: str, tmp_path: Path) -> None:
    compiled = set(probed(PROBE, [command, "+experiment=stage2_bfcl"], tmp_path))
    assert len(compiled) > 20  # the probe sees the compiles that do happen
    assert [name for name, pattern in NEVER_COMPILED.items() if _text(pattern) in compiled] == []
