"""launch.cli.deferred_patterns: PyYAML's reader pattern, deferred by the CLI, reads and refuses text as
the pattern compiled on import does (in fresh interpreters: the test process imported yaml long ago)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml
from hypothesis import given
from hypothesis import strategies as st

from launch.cli.deferred_patterns import YAML_NON_PRINTABLE, DeferredPattern, _deferring, defer

REPO = Path(__file__).resolve().parents[2]

# Loads texts with PyYAML's pure-Python loader (the one that uses the reader's pattern) and prints what
# each gave or the error it raised, and whether the pattern was deferred and is now compiled.
PROBE = """
import json, re, sys
if sys.argv[1] == "cli":
    import launch.cli
import yaml
import yaml.reader
from launch.cli.deferred_patterns import DeferredPattern
pattern = yaml.reader.Reader.NON_PRINTABLE
deferred = isinstance(pattern, DeferredPattern)
compiled_first = deferred and pattern._compiled is not None
answers = []
for text in json.loads(sys.argv[2]):
    try:
        answers.append(["ok", yaml.load(text, Loader=yaml.SafeLoader)])
    except yaml.YAMLError as error:
        answers.append([type(error).__name__, str(error)])
real = pattern.compiled() if deferred else pattern
print(json.dumps({
    "deferred": deferred,
    "compiled_first": compiled_first,
    "answers": answers,
    "same": [real.pattern, real.flags] == [pattern.pattern, pattern.flags],
    "cached": re.compile(real.pattern) is real,
}))
"""

TEXTS = [
    "a: b\nc: [1, 2]\n",
    "a: b\x07\n",
    "key: \x85value\n",
    "k: \ufffe\n",
    "k: \U0001f600 \ud7ff\n",
    "\x1b[31mred: 1\n",
]


def _run(mode: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, mode, json.dumps(TEXTS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout)


def test_the_cli_defers_the_reader_pattern_and_yaml_reads_the_same() -> None:
    with_cli, plain = _run("cli"), _run("plain")
    assert with_cli["deferred"] and not with_cli["compiled_first"]
    assert not plain["deferred"]
    assert with_cli["answers"] == plain["answers"]
    assert [a[0] for a in plain["answers"]].count("ReaderError") >= 3  # the pattern refused some
    assert with_cli["same"] and with_cli["cached"]  # compiled as re would, then in re's cache


def test_the_text_is_pyyamls() -> None:
    pattern = yaml.reader.Reader.NON_PRINTABLE
    assert (pattern.pattern, pattern.flags) == (YAML_NON_PRINTABLE, re.compile(YAML_NON_PRINTABLE).flags)


@given(st.text(), st.integers(min_value=0, max_value=3))
def test_a_deferred_pattern_answers_as_the_compiled_one(text: str, start: int) -> None:
    source = r"(?i)[a-z]+(\d*)|[^\x20-\x7e]"
    deferred, real = DeferredPattern(source), re.compile(source)
    assert [m.span() for m in deferred.finditer(text)] == [m.span() for m in real.finditer(text)]
    found, expected = deferred.search(text, start), real.search(text, start)
    assert (found and (found.span(), found.groups())) == (expected and (expected.span(), expected.groups()))
    assert deferred.sub("-", text) == real.sub("-", text)
    assert (deferred.pattern, deferred.flags, deferred.groups) == (real.pattern, real.flags, real.groups)


def test_defer_answers_the_stand_in_until_used_then_the_compiled_pattern() -> None:
    source = "deferred-pattern-test-[0-9]+"
    defer(source)
    stand_in = re.compile(source)
    assert isinstance(stand_in, DeferredPattern) and stand_in._compiled is None
    assert stand_in.fullmatch("deferred-pattern-test-12") is not None
    compiled = re.compile(source)
    assert isinstance(compiled, re.Pattern) and compiled is stand_in.compiled()
    defer(source)  # already compiled and cached: left as it is
    assert re.compile(source) is compiled


# Imports each module of LIBRARY_MODULES (after the CLI with "cli") and prints, for every pattern its
# module or classes hold, its text and flags and whether it is a stand-in, then what each module's
# users get from those patterns.
LIBRARY_PROBE = """
import re, sys
if sys.argv[1] == "cli":
    import launch.cli
import fractions, json, json.scanner, locale, platform, textwrap, tokenize, io
import yaml, yaml.constructor
from launch.cli.deferred_patterns import LIBRARY_MODULES, DeferredPattern
held = {}
for name in sorted(LIBRARY_MODULES):
    module = sys.modules[name]
    classes = [(k, v) for k, v in vars(module).items() if isinstance(v, type) and v.__module__ == name]
    places = [(name, vars(module))] + [(f"{name}.{k}", vars(v)) for k, v in classes]
    for place, names in places:
        for key, value in names.items():
            if isinstance(value, re.Pattern | DeferredPattern):
                stand_in = isinstance(value, DeferredPattern)
                held[f"{place}.{key}"] = [repr(value.pattern), value.flags, stand_in]
uses = [
    str(fractions.Fraction(" -3.25e-1 ")),
    str(fractions.Fraction("22/7")),
    textwrap.fill("a deferred pattern. Splits words-with-hyphens and   spaces, " * 3, width=23),
    textwrap.dedent("    a\\n      b\\n"),
    list(platform._sys_version("3.11.7 (main, May  9 2026, 07:35:25) [GCC 12.2.0]")),
    str(yaml.load("2001-12-14 21:59:43.10 -5", Loader=yaml.SafeLoader)),
    tokenize.detect_encoding(io.BytesIO(b"# -*- coding: latin-1 -*-\\nx = 1\\n").readline)[0],
    locale.format_string("%.2f and %d", (1.5, 3)),
    json.scanner.NUMBER_RE.match("-12.5e3,").groups(),
]
print(json.dumps({"held": held, "uses": uses}))
"""


def _library(mode: str) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("T3RL_")}
    env["PYTHONPATH"] = str(REPO)
    done = subprocess.run(
        [sys.executable, "-c", LIBRARY_PROBE, mode], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_library_patterns_are_deferred_with_their_text_and_flags_and_answer_alike() -> None:
    with_cli, plain = _library("cli"), _library("plain")
    held, own = with_cli["held"], plain["held"]
    assert isinstance(held, dict) and isinstance(own, dict)
    assert held.keys() == own.keys() and len(held) > 15
    assert {k: v[:2] for k, v in held.items()} == {k: v[:2] for k, v in own.items()}
    assert not any(deferred for _, _, deferred in own.values())
    # Every module compiled some of its patterns as it was imported: each is deferred under the CLI.
    deferred_in = {key.split(".")[0] for key, (_, _, deferred) in held.items() if deferred}
    assert deferred_in >= {"fractions", "platform", "textwrap", "yaml", "tokenize", "locale", "json"}
    assert with_cli["uses"] == plain["uses"]


def test_only_the_module_being_imported_gets_stand_ins() -> None:
    """Another caller of `re.compile` meanwhile (another module, another thread) gets `re`'s pattern."""
    own = _deferring(re.compile, globals())
    assert isinstance(own(r"x+\d", re.IGNORECASE), DeferredPattern)
    assert own(r"x+\d", re.IGNORECASE).flags == re.compile(r"x+\d", re.IGNORECASE).flags
    other = _deferring(re.compile, {})
    assert isinstance(other(r"x+\d"), re.Pattern)
