"""A model's files that are here but cannot be what they claim (a config.json that is no JSON object, a
size that is no number, a file where the checkpoint's or the tokenizer's directory belongs) are refused
at the key that points at them, with a fix that validates; no content of them crashes pre-flight.

Before, a broken config.json or a tokenizer_config.json holding a list ended `t3rl validate` with
"t3rl failed unexpectedly" (JSONDecodeError, AttributeError, a TypeError comparing the vocabulary
with a dict), `hidden_size: true` and `hidden_size: 1e400` equalled the model's size, and a file given
as the checkpoint got "download it first … --local-dir <the file>".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from test_preflight import _errors, _invoke, sandbox  # noqa: F401  (sandbox is a fixture)

from tests.support.fix_applier import apply_first_fix

S1 = "+experiment=stage1_bfcl"
CKPT, TOKENIZER = "model.hf_checkpoint", "model.chat.tokenizer"

# Texts no config.json of a model holds, each with what the refusal must say.
BROKEN_CONFIGS = {
    "empty": ("", "is not JSON"),
    "cut short": ('{"hidden_size": 2560,', "is not JSON"),
    "not UTF-8": ("\udcff{", "no UTF-8"),
    "null": ("null", "not a JSON object"),
    "a list": ("[1, 2]", "not a JSON object"),
    "a string": ('"qwen"', "not a JSON object"),
    "text_config a number": ('{"text_config": 5}', "text_config 5"),
    "a size as text": ('{"num_hidden_layers": "36"}', 'num_hidden_layers "36"'),
    "a size as a flag": ('{"hidden_size": true}', "hidden_size true"),
    "an infinite size": ('{"hidden_size": 1e400}', "hidden_size Infinity"),
    "a negative size": ('{"vocab_size": -1}', "vocab_size -1"),
    "a vocabulary as an object": ('{"vocab_size": {"a": 1}}', 'vocab_size {"a": 1}'),
    "a flag as a number": ('{"tie_word_embeddings": 1}', "tie_word_embeddings 1"),
    "a zero epsilon": ('{"rms_norm_eps": 0}', "rms_norm_eps 0"),
    "a nested theta": ('{"rope_parameters": {"rope_theta": "1e6"}}', "rope_parameters.rope_theta"),
    "a context as a flag": ('{"max_position_embeddings": true}', "max_position_embeddings true"),
}


def _refused_with_a_fix(overrides: list[str], key: str, said: str) -> None:
    code, out = _invoke("validate", *overrides)
    assert code == 2, out
    assert "failed unexpectedly" not in out, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    assert said in error["message"], out
    fixed = apply_first_fix(overrides, error)
    assert fixed is not None, out
    code, after = _invoke("validate", *fixed)
    assert code == 0, f"after {fixed}:\n{after}"


@pytest.mark.parametrize("name", sorted(BROKEN_CONFIGS))
def test_a_config_json_that_is_no_model_config_is_refused(name: str, sandbox: Path) -> None:  # noqa: F811
    text, said = BROKEN_CONFIGS[name]
    checkpoint = sandbox / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_bytes(text.encode("utf-8", "surrogateescape"))
    _refused_with_a_fix([S1, f"{CKPT}={checkpoint}"], CKPT, said)


def test_a_config_json_that_is_a_directory_is_refused(sandbox: Path) -> None:  # noqa: F811
    (sandbox / "ckpt" / "config.json").mkdir(parents=True)
    _refused_with_a_fix([S1, f"{CKPT}={sandbox / 'ckpt'}"], CKPT, "cannot be read")


@pytest.mark.parametrize(
    ("key", "name", "text"),
    [(CKPT, "config.json", '{"num_hidden_layers": 36}'), (TOKENIZER, "tokenizer.json", "{}")],
    ids=["checkpoint", "tokenizer"],
)
def test_a_file_given_for_its_directory_gets_the_directory(
    key: str,
    name: str,
    text: str,
    sandbox: Path,  # noqa: F811
) -> None:
    directory = sandbox / "model"
    directory.mkdir()
    (directory / name).write_text(text)
    code, out = _invoke("validate", S1, f"{key}={directory / name}")
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == key]
    assert error["fix"] == f"set {key}={directory} (the directory holding it)", out
    code, after = _invoke("validate", S1, f"{key}={directory}")
    assert code == 0, after


def test_another_file_given_as_the_checkpoint_is_refused(sandbox: Path) -> None:  # noqa: F811
    data = sandbox / "rows.jsonl"
    data.write_text("{}\n")
    _refused_with_a_fix([S1, f"{CKPT}={data}"], CKPT, "is a file")


@pytest.mark.parametrize(
    ("text", "said"),
    [("[1]", "not a JSON object"), ("{bad", "is not JSON"), ("", "is not JSON")],
    ids=["a list", "not JSON", "empty"],
)
def test_a_tokenizer_config_that_is_no_json_object_is_refused(text: str, said: str, sandbox: Path) -> None:  # noqa: F811
    tokenizer = sandbox / "tok"
    tokenizer.mkdir()
    (tokenizer / "tokenizer_config.json").write_text(text)
    _refused_with_a_fix([S1, f"{TOKENIZER}={tokenizer}"], TOKENIZER, said)


def test_a_rewritten_config_json_is_read_again(sandbox: Path) -> None:  # noqa: F811
    # The file is read once per pre-flight, by every rule that asks: not once per process.
    checkpoint = sandbox / "ckpt"
    checkpoint.mkdir()
    (checkpoint / "config.json").write_text("[1]")
    code, out = _invoke("validate", S1, f"{CKPT}={checkpoint}")
    assert code == 2, out
    (checkpoint / "config.json").write_text('{"num_hidden_layers": 36, "hidden_size": 2560}')
    code, out = _invoke("validate", S1, f"{CKPT}={checkpoint}")
    assert code == 0, out


@pytest.mark.parametrize(
    ("name", "text", "said"),
    [
        ("open.jinja", "{% for x in %}", "does not compile (line 1"),
        ("unclosed.jinja", "{{ messages", "does not compile (line 1"),
        ("latin1.jinja", "\udcff{{ x }}", "is not UTF-8 text"),
        ("template.txt", "{{ x }}", "not named .jinja"),
    ],
)
def test_a_chat_template_file_the_runtime_cannot_load_is_refused(
    name: str,
    text: str,
    said: str,
    sandbox: Path,  # noqa: F811
) -> None:
    # Before, each validated; every stage that renders a prompt then failed (t3rl_core.chat.shipped
    # loads only a .jinja, and Jinja compiles it at the first render).
    template = sandbox / name
    template.write_bytes(text.encode("utf-8", "surrogateescape"))
    _refused_with_a_fix(
        ["+experiment=quickstart", f"model.chat.chat_template={template}"], "model.chat.chat_template", said
    )


def test_a_chat_template_file_that_compiles_is_accepted(sandbox: Path) -> None:  # noqa: F811
    template = sandbox / "mine.jinja"
    template.write_text("{% for m in messages %}{{ m.content }}{% endfor %}")
    code, out = _invoke("validate", "+experiment=quickstart", f"model.chat.chat_template={template}")
    assert code == 0, out


@pytest.mark.parametrize(
    ("make", "said"),
    [("file", "a file without execute permission"), ("dir", "a directory"), (None, "no such file")],
)
def test_an_interpreter_that_is_no_executable_is_told_what_it_is(
    make: str | None,
    said: str,
    sandbox: Path,  # noqa: F811
) -> None:
    # Before, a data file given as the sandbox's python was "no such file", beside the file.
    python = sandbox / "python"
    if make == "file":
        python.write_text("#!/bin/sh\n")
    elif make == "dir":
        python.mkdir()
    code, out = _invoke("validate", "+experiment=retool", f"env.sandbox.python={python}")
    assert code == 2, out
    (error,) = [e for e in _errors(out) if e["key"] == "env.sandbox.python"]
    assert f"({said};" in error["message"], out
