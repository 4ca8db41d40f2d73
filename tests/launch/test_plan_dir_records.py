"""A planned run dir's records as the plain writers would write them: `t3rl plan +experiment=stage2_bfcl`
run as a user runs it, with credentials planted in its environment, then every YAML file is PyYAML's
own emitter's text of its data (not libyaml's, nor t3rl_core.yaml_text.block_text's), config.yaml is the
config scrubbed one text at a time (`_scrub`, the definition scrub_obj now shortcuts), every JSON record
is the standard library's text of its data, and no record (YAML, JSON, plan.sh, command.sh) holds the
planted credentials. Guards the shortcuts a cold plan takes to write them
(joined scrubs, the block YAML writer, the shortcuts of scrubbing long texts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from launch.checks.resolve import resolve
from launch.config.secrets import _known, _scrub
from t3rl_core.yaml_text import WIDTH

SECRET = "hf_" + "Q7x" * 12  # the shape of a Hugging Face token
OVERRIDES = ["+experiment=stage2_bfcl"]


def _pyyaml(data: object) -> str:
    return yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, width=WIDTH)


def test_records_as_the_plain_writers_write_them(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    planted = {"T3RL_NO_CACHE": "1", "HF_TOKEN": SECRET, "WANDB_API_KEY": SECRET[::-1]}
    env = {**os.environ, **planted}
    command = [sys.executable, "-m", "launch", "plan", *OVERRIDES, "--out", str(out)]
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    config = resolve(OVERRIDES).config
    text = (out / "config.yaml").read_text()
    assert text == _pyyaml(_scrub(config, frozenset() | _known(), ""))
    files = sorted(p for p in out.rglob("*") if p.is_file())
    assert len([p for p in files if p.suffix == ".yaml"]) > 4
    for path in files:
        written = path.read_text()
        assert SECRET not in written and SECRET[::-1] not in written, path
        if path.suffix == ".yaml":
            assert written == _pyyaml(yaml.safe_load(written)), path
        elif path.suffix == ".json":
            assert written == json.dumps(json.loads(written), indent=2) + "\n", path
