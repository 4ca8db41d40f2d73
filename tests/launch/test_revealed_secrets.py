"""Every value a `Secret` revealed is masked in everything t3rl writes or prints, whatever the variable
or file holding it is called (issue 22 §2): a plugin's data preparation reveals its credential
(env:NAME with a name that does not look secret, file:PATH, or `${oc.env:NAME}` in its config file)
and one it builds itself, prints one and fails with the other in its message. The stage runs for real
(`t3rl run`, its own process under the local executor): its log.txt, the terminal, the run dir and
the composition cache hold neither value."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from t3rl_core.redact import mask_output
from tests.support.leaky_plugin import write_plugin
from tests.support.planted import invoke, isolate, leaks, shown

PLANTED = {
    "configured": "leaky-cred-value-8e3f1a",  # the plugin's configured credential
    "session": "session-value-77ab12c4",  # a Secret the plugin builds itself
}


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))  # the plugin imports here (validation) and in its stage
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), *sys.path]))
    monkeypatch.delitem(sys.modules, "leaky_world", raising=False)
    # Names that do not look secret.
    return isolate(
        tmp_path, monkeypatch, {"LEAKY_CRED": PLANTED["configured"], "LEAKY_SESSION": PLANTED["session"]}
    )


@pytest.mark.parametrize(
    "credential", ["env:LEAKY_CRED", "file:KEYFILE", "${oc.env:LEAKY_CRED}"], ids=["env", "file", "oc-env"]
)
def test_a_value_a_plugin_reveals_is_masked_in_its_log_the_terminal_and_every_file(
    workdir: Path, credential: str
) -> None:
    (workdir / "keyfile").write_text(PLANTED["configured"] + "\n")
    conf = write_plugin(workdir, credential.replace("KEYFILE", str(workdir / "keyfile")))
    code, out = invoke("run", "--config-dir", str(conf), "+experiment=leaky")
    assert code == 1, out  # the plugin failed its stage
    (log,) = (workdir / "runs" / "leaky").glob("*/stages/prepare_data/log.txt")
    text = log.read_text()
    # The stage's own lines are there, with both values masked.
    assert "data service session ***" in text and "refused the credential ***" in text
    assert "refused the credential ***" in out
    assert shown(PLANTED, out) == []
    assert [leak for leak in leaks(PLANTED, workdir / "runs", workdir / "cache")] == []


def test_the_copier_masks_a_process_and_its_childrens_output() -> None:
    """t3rl_core.redact.mask_output: fd 1 and 2 of this process and its children go through a copier
    that masks the values, also when one arrives split across writes (no newline for 64 KiB)."""
    value = "sk-copier-planted-91be"
    child = (
        "import os, subprocess, sys\n"
        "from t3rl_core.redact import mask_output\n"
        f"mask_output([{value!r}])\n"
        f"print('out', {value!r}, flush=True)\n"
        f"print('err', {value!r}, file=sys.stderr, flush=True)\n"
        f"subprocess.run(['echo', 'child', {value!r}])\n"
        f"os.write(1, b'x' * 70000 + {value!r}[:5].encode())\n"
        f"os.write(1, {value!r}[5:].encode() + b' end')\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert value.encode() not in done.stdout + done.stderr
    assert b"out ***\n" in done.stdout and b"child ***\n" in done.stdout and done.stderr == b"err ***\n"
    assert done.stdout.endswith(b"x" * 100 + b"*** end")


def test_nothing_to_mask_leaves_the_streams_alone() -> None:
    before = os.fstat(1).st_ino
    mask_output([])
    assert os.fstat(1).st_ino == before


def test_an_evals_records_and_summary_mask_what_a_secret_revealed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The files a t3rl_core process writes itself (trajectories.jsonl, summary.json): an episode's
    error message may quote a credential its plugin revealed."""
    from t3rl_core.eval.jsonl import record_line
    from t3rl_core.secret import Secret, mask_revealed

    monkeypatch.setenv("LEAKY_CRED", PLANTED["configured"])
    value = Secret("env:LEAKY_CRED").reveal().get_secret_value()
    line = record_line({"error": f"RuntimeError: refused {value}", "response_ids": [1, 2]})
    assert value not in line and '"error": "RuntimeError: refused ***"' in line
    assert mask_revealed(f"first error: {value}") == "first error: ***"
