"""`launch.checks.model_options.model_option(name)` reads one option's file (and its bases') where
`model_options()` reads every `model/` option: the same declaration, whatever the config dirs hold
(an option replaced, a broken or non-mapping file that leaves the shipped one in force, bases missing,
cyclic or of another group), and the hub-id rules of a run whose option declares its own hub id read
no other option."""

from __future__ import annotations

from pathlib import Path

import pytest

from launch.checks import model_options as options_module
from launch.checks.context import Context
from launch.checks.model_options import model_option, model_options
from launch.checks.rules import hub_ids
from launch.config.resolved import composed_plain
from launch.config.schema import RunConfig
from t3rl_core.home_paths import expand_home

FILES = {
    # a shipped option replaced by the user's
    "qwen3_8b.yaml": "name: qwen3_8b\nhf_id: Someone/Qwen3-8B-Fork\ncontext_length: 8192\n",
    # a broken file and a non-mapping one: the shipped options of these names stay in force
    "qwen3_4b.yaml": "name: [unclosed\n",
    "glm4_9b.yaml": "- a list\n",
    # bases: one shipped, one missing, one of another group, a cycle, `_self_` first
    "mine.yaml": "defaults: [tiny_qwen3, missing, /chat/x, _self_]\nname: mine\nfamily: qwen3\n",
    "loop_a.yaml": "defaults: [loop_b]\nname: loop_a\nhf_id: a/b\n",
    "loop_b.yaml": "defaults: [/model/loop_a, _self_]\nname: loop_b\ncontext_length: 4096\n",
    "first.yaml": "defaults: [_self_, tiny_qwen3]\nname: first\nsynthetic: false\n",
    "empty.yaml": "",
    ".yaml": "name: dot\n",
}
ODD_NAMES = ("", "missing", "sub/x", "chat/x", ".yaml", "..")


@pytest.fixture
def config_dir(tmp_path: Path) -> str:
    (tmp_path / "model" / "sub").mkdir(parents=True)
    for name, text in FILES.items():
        (tmp_path / "model" / name).write_text(text)
    (tmp_path / "model" / "sub" / "x.yaml").write_text("name: x\n")
    return str(tmp_path)


def test_one_option_reads_as_all_options_read_it(config_dir: str) -> None:
    for dirs in ((), (config_dir,)):
        every = model_options(dirs)
        for name in (*every, *ODD_NAMES):
            assert model_option(name, dirs) == every.get(name), (name, dirs)


def _stage2_bfcl() -> Context:
    plain = composed_plain(["+experiment=stage2_bfcl"])
    run = RunConfig.model_validate(expand_home(plain.data))
    return Context(run=run, data=plain.data, provenance=plain.provenance, scopes=())


def test_the_hub_id_rules_of_an_option_with_its_own_hub_id_read_no_other_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no checkpoint here: the rules judge the hub id's download
    ctx = _stage2_bfcl()

    def every_option(folder: str) -> None:
        raise AssertionError(f"read every option of {folder}")

    monkeypatch.setattr(options_module, "_files_in", every_option)
    for rule in (
        hub_ids.hf_id_of_the_model,
        hub_ids.context_within_the_declared,
        hub_ids.architecture_of_the_hub_checkpoint,
    ):
        assert list(rule(ctx)) == []
