"""The tiny quickstart model is cached under a name keyed by its definition: the family and template,
the model config, the corpus (the prepared data's content key) and the builder (its source and the
packages that write the files). It is built in a temporary dir and renamed, so a dir of that name is
a whole build, and a partial one there is rebuilt, never reused."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from run_configs import make_run

from launch.plan.build import PlanContext, build_plan
from t3rl_core.chat import tiny

STAGES = {"prepare_data": {"kind": "prepare_data"}, "prepare_model": {"kind": "prepare_model"}}
CTX = PlanContext(Path("/run"), Path("/base"), "/t3rl", "/venv/bin/python", "test-run", {})


def _model_dir(change: str = "") -> str:
    run = make_run(stages=STAGES, model="model/tiny_qwen3")
    model, env = run.model, run.env
    if change == "config":
        model = model.model_copy(
            update={"architecture": model.architecture.model_copy(update={"vocab_size": 4160})}
        )
    elif change == "template":  # another template: other tokenizer files
        model = model.model_copy(update={"chat": model.chat.model_copy(update={"chat_template": "qwen2_5"})})
    elif change == "corpus":  # other prepared data: another content key
        env = env.model_copy(update={"data": env.data.model_copy(update={"seed": 7})})
    run = run.model_copy(update={"model": model, "env": env})
    return build_plan(run, CTX).stage("prepare_model").outputs["hf"]


def test_the_dir_is_the_configured_name_plus_a_key_of_the_definition() -> None:
    path = _model_dir()
    assert re.fullmatch(r"/cache/models/tiny_qwen3-[0-9a-f]{16}", path)
    assert _model_dir() == path  # the same definition, the same dir


@pytest.mark.parametrize("change", ["config", "template", "corpus"])
def test_a_change_to_the_definition_names_a_new_dir(change: str) -> None:
    assert _model_dir(change) != _model_dir()


def test_a_change_to_the_builder_names_a_new_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _model_dir()
    edited = tmp_path / "tiny.py"
    edited.write_bytes(Path(tiny.__file__).read_bytes() + b"\n# a later builder\n")
    monkeypatch.setattr(tiny, "__file__", str(edited))
    assert _model_dir() != before


def test_the_key_holds_the_installed_versions_of_the_packages_that_write_the_files(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The versions importlib.metadata reads, found without parsing a METADATA file (definition_key
    parsed four with the email parser in every plan of a tiny model)."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str | None:
        try:
            return version(name)
        except PackageNotFoundError:
            return None

    expected = {name: installed(name) for name in tiny._BUILD_PACKAGES}
    seen: list[dict[str, object]] = []
    monkeypatch.setattr(tiny.json, "dumps", lambda payload, **kw: seen.append(payload) or "{}")
    import importlib.metadata

    def no_metadata(*args: object, **kwargs: object) -> None:
        raise AssertionError("a METADATA file parsed")

    monkeypatch.setattr(importlib.metadata.PathDistribution, "metadata", property(no_metadata))
    tiny.definition_key({"family": "qwen3"})
    assert seen[0]["packages"] == expected


FAKE_BUILDER = """#!/bin/bash
# Stands in for `python -m t3rl_core.chat.tiny … --out DIR`: writes config.json into DIR.
out="${@: -1}"
[ -n "${FAIL_BUILD:-}" ] && { echo half > "$out/config.json"; exit 1; }
echo '{"built": true}' > "$out/config.json"
"""


def _run_stage(tmp_path: Path, **environ: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    python = tmp_path / "fake_python"
    python.write_text(FAKE_BUILDER)
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    ctx = PlanContext(tmp_path / "run", tmp_path, "/t3rl", str(python), "test-run", {})
    run = make_run(stages=STAGES, model="model/tiny_qwen3", paths={
        "runs_dir": "runs", "checkpoints_dir": "/ckpt", "models_dir": "/models",
        "cache_dir": str(tmp_path / "cache"), "slime_root": "/root/slime",
        "megatron_root": "/root/Megatron-LM", "python": "python3",
    })  # fmt: skip
    stage = build_plan(run, ctx).stage("prepare_model")
    done = subprocess.run(
        ["bash", "-c", stage.script()],
        capture_output=True,
        text=True,
        env={**os.environ, **environ},
        timeout=30,
    )
    return done, Path(stage.outputs["hf"])


def test_a_partial_dir_is_rebuilt_and_a_failed_build_leaves_none(tmp_path: Path) -> None:
    # A build that dies half way leaves nothing under the keyed name (only its temporary dir).
    failed, model = _run_stage(tmp_path, FAIL_BUILD="1")
    assert failed.returncode != 0 and not model.exists()

    # A dir under that name without the completion marker (written by hand, or by an older,
    # non-atomic build) is replaced by a whole build, not reused.
    model.mkdir(parents=True)
    (model / "config.json").write_text("half")
    (model / "stray.bin").write_text("x")
    done, model = _run_stage(tmp_path)
    assert done.returncode == 0, done.stderr
    assert (model / "config.json").read_text() == '{"built": true}\n'
    assert not (model / "stray.bin").exists() and (model / ".t3rl-complete").exists()
    # The configured name links to the latest build.
    link = tmp_path / "cache" / "models" / "tiny_qwen3"
    assert link.is_symlink() and link.resolve() == model.resolve()

    # A complete build is reused as it is.
    again, _ = _run_stage(tmp_path)
    assert again.returncode == 0 and "built before: same definition" in again.stdout
