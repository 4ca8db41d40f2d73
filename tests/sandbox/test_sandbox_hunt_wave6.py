"""Hunt wave six (docs/explanation/sandbox.md, "Hunt wave six"): what a cell may read is one list.

- `readable_paths` naming a checkout or a data directory gave cells every file in it: a `.env`, the
  checkout's `.git/config` (a token in its remote's URL), a key file beside the data. The files
  credentials are kept in are one list (`t3rl_core.secret_files`, also what Ray's uploads leave out);
  each found below a readable path is covered in every cell's root, as `hidden_paths` are.
- a readable path below a hidden one (`~/.cache/huggingface/datasets` under the default `~/.cache`) was
  accepted and silently covered: cells did not see what the user asked them to read. Refused, naming both.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from launch.plan import secret_uploads
from t3rl_core import secret_files
from t3rl_core.sandbox.config import LocalSandboxConfig
from t3rl_core.sandbox.local import LocalSandbox, cell_hidden_paths
from t3rl_core.secret_files import SecretFileSearch

CREDENTIAL_FILES = [
    ".env",
    ".env.prod",
    ".git/config",
    "keys/server.pem",
    "sub/.aws/credentials",
    "hf/huggingface/token",
]
# A CA bundle shares a key's name: public, read by its content (no private key), it stays readable.
DATA_FILES = ["data.txt", "sub/train.jsonl", "environment.yaml", "keys.md", "tokenizer.json", "certs/ca.pem"]


def _tree(root: Path) -> Path:
    for name in CREDENTIAL_FILES + DATA_FILES:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        key = "-----BEGIN PRIVATE KEY-----\n" if name in CREDENTIAL_FILES and name.endswith(".pem") else ""
        (root / name).write_text(f"{key}content of {name}\n")
    return root


def test_one_list_of_credential_files_for_uploads_and_cells() -> None:
    excludes = secret_uploads.with_upload_excludes({"working_dir": "."})["excludes"]
    assert excludes == list(secret_files.SECRET_FILES)


def test_the_search_finds_the_credential_files_and_no_data(tmp_path: Path) -> None:
    found = {os.path.relpath(p, tmp_path) for p in SecretFileSearch(str(_tree(tmp_path))).found}
    assert found == {".env", ".env.prod", ".git", "keys/server.pem", "sub/.aws", "hf/huggingface/token"}
    assert SecretFileSearch(str(tmp_path / ".env")).found == [str(tmp_path / ".env")]  # a file named itself
    assert SecretFileSearch(str(tmp_path / "data.txt")).found == []


def test_the_search_stops_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(secret_files, "SEARCHED_ENTRIES", 3)
    for i in range(5):
        (tmp_path / f"d{i}").mkdir()
    assert SecretFileSearch(str(tmp_path)).stopped


def test_cells_cover_what_the_readable_paths_hold(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _tree(home / "proj")
    (home / ".ssh").mkdir()
    config = LocalSandboxConfig(readable_paths=[str(home)], hidden_paths=[str(home / ".ssh")])
    hidden = cell_hidden_paths(config)
    assert hidden[0] == str(home / ".ssh")  # the configured ones first, then what the search found
    assert str(home / "proj" / ".env") in hidden and str(home / "proj" / ".git") in hidden
    assert not any(h.endswith(("data.txt", "train.jsonl")) for h in hidden)
    assert hidden.count(str(home / ".ssh")) == 1  # already hidden: not twice


@pytest.mark.parametrize("readable", ["~/.cache/huggingface/datasets", "~/.cache", "~/.ssh/"])
def test_a_readable_path_below_a_hidden_one_is_refused(readable: str) -> None:
    with pytest.raises(ValidationError) as refused:
        LocalSandboxConfig(readable_paths=[readable])
    message = str(refused.value)
    assert "readable_paths" in message and "which covers it: cells would not see it" in message


def test_a_readable_path_above_a_hidden_one_is_valid() -> None:
    """The hidden path is covered inside it (a home with its `.ssh`), as before."""
    assert LocalSandboxConfig(readable_paths=["~"]).readable_paths == ["~"]
    home = os.path.expanduser("~")
    kept = LocalSandboxConfig(
        readable_paths=[f"{home}/.cache/huggingface/datasets"], hidden_paths=[f"{home}/.ssh"]
    )
    assert kept.readable_paths


READS = """
import os, sys
for name in sys.argv[1:] if len(sys.argv) > 1 else NAMES:
    try:
        with open(os.path.join(ROOT, name)) as f:
            print(name, repr(f.read()))
    except OSError as error:
        print(name, type(error).__name__)
"""


def test_a_cell_reads_the_data_but_no_credential_file(visible_dir: Path) -> None:
    """End to end, one sandbox: the cell reads the data of a readable checkout-like directory and finds
    each credential file empty or absent (covered by /dev/null, or an empty directory)."""
    root = _tree(visible_dir / "proj")
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    code = f"ROOT = {str(root)!r}\nNAMES = {CREDENTIAL_FILES + DATA_FILES!r}\n" + READS

    async def run() -> str:
        sandbox = LocalSandbox(
            LocalSandboxConfig(timeout_s=30, readable_paths=[str(root)], max_concurrency=1)
        )
        try:
            result = await sandbox.run(code)
        finally:
            await sandbox.aclose()
        assert result.status == "success", result
        return result.stdout

    lines = dict(line.split(" ", 1) for line in asyncio.run(run()).splitlines())
    for name in DATA_FILES:
        assert lines[name] == repr(f"content of {name}\n"), (name, lines)
    for name in CREDENTIAL_FILES:
        assert "content of" not in lines[name], (name, lines)
