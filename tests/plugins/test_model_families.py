"""A model family t3rl does not ship, as YAML in a user config dir: with a template plugin (the example's
ChatML) or a .jinja file plus its tokens (`model.chat.family`); validated, planned and checked by
`t3rl check-template`."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from launch.cli.app import app
from tests.support.plugin_example import EXAMPLE_CONF

FAMILY = """\
name: mine
special_tokens: ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
tag_tokens: ["<tool_call>", "</tool_call>"]
stop_tokens: ["<|im_end|>", "<|endoftext|>"]
eos_token: "<|im_end|>"
pad_token: "<|endoftext|>"
"""


def invoke(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def user_conf(tmp_path, monkeypatch, example_on_path):
    """A config dir with model/mine.yaml: the tiny architecture, a .jinja file and its family tokens."""
    from t3rl_counter.chat import TEMPLATE

    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine.jinja").write_text(TEMPLATE)
    model = tmp_path / "conf" / "model"
    model.mkdir(parents=True)
    family = "\n".join("    " + line for line in FAMILY.splitlines())
    (model / "mine.yaml").write_text(
        "# A user's family: a .jinja template and its tokens.\n"
        "defaults:\n  - tiny_qwen3\n  - _self_\n"
        "name: mine\nfamily: mine\nhf_checkpoint: ${paths.models_dir}/mine\n"
        f"chat:\n  tokenizer: ${{model.hf_checkpoint}}\n  chat_template: {tmp_path / 'mine.jinja'}\n"
        f"  chat_template_kwargs: {{}}\n  family:\n{family}\n"
        "parsers:\n  tool_call_parser: qwen25\n  reasoning_parser: null\n  think_tags: null\n"
    )
    return ["--config-dir", str(tmp_path / "conf")]


@pytest.mark.slow
def test_check_template_of_a_plugin_template_family(example_on_path):
    result = invoke("check-template", "counter_chatml", "--config-dir", str(EXAMPLE_CONF))
    assert result.exit_code == 0, result.output
    assert "counter_chatml (chatml): 4/4 checks pass" in result.output
    # The plugin, and a shipped family, by name alone: checked with their family's own parsers.
    assert (
        "t3rl_counter.chat:CHATML (chatml): 4/4"
        in invoke("check-template", "t3rl_counter.chat:CHATML").output
    )
    assert "glm4 (glm4): 5/5 checks pass" in invoke("check-template", "glm4").output
    refused = invoke("check-template", "glm4", "model.parsers.tool_call_parser=qwen25")
    assert refused.exit_code == 2


def test_a_jinja_family_in_a_user_config_dir_validates_plans_and_checks(user_conf, tmp_path):
    result = invoke("check-template", "mine", *user_conf)
    assert result.exit_code == 0, result.output
    assert "tiny offline one with the mine family's tokens" in result.output
    assert invoke("validate", *user_conf, "+experiment=quickstart", "model=mine").exit_code == 0
    assert invoke("plan", *user_conf, "+experiment=quickstart", "model=mine").exit_code == 0
    (plan_sh,) = tmp_path.rglob("plan.sh")
    assert "--chat-template" in plan_sh.read_text() and "--family-spec" in plan_sh.read_text()


def test_a_parser_that_cannot_read_the_template_fails_the_check(user_conf):
    result = invoke("check-template", "mine", *user_conf, "model.parsers.tool_call_parser=llama3")
    assert result.exit_code == 1 and "FAIL tool-call parser llama3" in result.output


@pytest.mark.parametrize(
    ("override", "key", "message"),
    [
        ("model.chat.family.name=yours", "model.chat.family.name", "describes family 'yours'"),
        ("model.chat.family=null", "model.family", "unknown chat-template family 'mine'"),
        (
            "model.chat.chat_template=t3rl_counter.nochat:CHATML",
            "model.chat.chat_template",
            "does not import",
        ),
        ("model.chat.family.stop_tokenz=[x]", "model.chat.family.stop_tokenz", "did you mean"),
    ],
)
def test_bad_user_families_are_config_errors(user_conf, override, key, message):
    result = invoke("validate", *user_conf, "+experiment=quickstart", "model=mine", override)
    assert result.exit_code == 2
    assert f"error {key}" in result.output and message in result.output
