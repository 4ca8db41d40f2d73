"""First hour, hunted (wave seven): one test per kind a newcomer hunt found answered badly
(docs/reference/cli-behaviour.md, "First hour, hunted (wave seven)"). Each fails on the code before its
fix; in-process where the kind allows."""

from __future__ import annotations

import contextlib
import io
import re
import runpy
import sys
import warnings
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# ------------------------------------------------ `python -m t3rl_core.X --help` of every module a doc names


def _modules_the_docs_run() -> list[str]:
    """Every `python -m t3rl_core.…` module named in README.md or the docs site's pages."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    found = {m for page in pages for m in re.findall(r"python -m (t3rl_core[\w.]*\w)", page.read_text())}
    return sorted(found)


def _help_of(module: str) -> tuple[object, str]:
    """`python -m MODULE --help` in this process: its exit code and stdout."""
    out = io.StringIO()
    code: object = 0
    argv = sys.argv
    sys.argv = [module, "--help"]
    try:
        with contextlib.redirect_stdout(out), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module was imported before
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        code = stop.code
    finally:
        sys.argv = argv
    return code or 0, out.getvalue()


def test_the_docs_name_the_modules_they_run() -> None:
    """The scan below reads what it must (else the next test would pass on nothing)."""
    assert {"t3rl_core.data.check", "t3rl_core.lifetime", "t3rl_core.sandbox.local"} <= set(_modules_the_docs_run())


@pytest.mark.parametrize("module", _modules_the_docs_run())
def test_every_module_a_doc_runs_answers_help(module: str) -> None:
    """`python -m t3rl_core.data.check --help` (resume.md tells users to run it). Was: `--help/manifest.json:
    not a readable data manifest` (exit 1); `lifetime --help` tried to exec `--help`, `sandbox.local --help`
    ran the probe, `secret_launch --help` printed its usage on stderr, exit 2. Now every module the docs
    name prints its usage on stdout and exits 0 (`t3rl_core/module_help.py` for those reading argv by hand)."""
    code, out = _help_of(module)
    assert code == 0 and out.startswith("usage:") and module in out.splitlines()[0], (code, out[:300])
