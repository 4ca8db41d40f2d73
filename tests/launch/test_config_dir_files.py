"""A file given to --config-dir: a config file gets the command that chooses it from the directory above
its group; any other file (a data file, a script) gets no group choice made up from its name."""

from __future__ import annotations

from pathlib import Path

from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)


def test_a_config_file_given_as_the_config_dir_gets_the_choice_that_validates(sandbox: Path) -> None:  # noqa: F811
    mine = sandbox / "confs" / "experiment" / "mine.yaml"
    mine.parent.mkdir(parents=True)
    mine.write_text("# @package _global_\ndefaults:\n  - quickstart\n")
    code, out = _invoke("validate", "--config-dir", str(mine))
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "--config-dir"]
    assert error["fix"].startswith(f"--config-dir {mine.parent.parent} +experiment=mine"), out
    code, after = _invoke("validate", "--config-dir", str(mine.parent.parent), "+experiment=mine")
    assert code == 0, after


def test_another_file_given_as_the_config_dir_gets_no_made_up_group(sandbox: Path) -> None:  # noqa: F811
    # Before: "fix: --config-dir <sandbox's parent> <sandbox's name>=data.jsonl", a group named after
    # the directory that held the file and an option named after the file.
    data = sandbox / "data.jsonl"
    data.write_text('{"a": 1}\n')
    code, out = _invoke("validate", "--config-dir", str(data), "+experiment=quickstart")
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "--config-dir"]
    assert f"{sandbox.name}=" not in error["fix"] and "no config file" in error["fix"], out
