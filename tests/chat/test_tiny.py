"""The offline tiny tokenizer builder: real BPE, the family's control tokens and template, deterministic."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from t3rl_core.chat import tiny
from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.format import ChatFormat
from t3rl_core.chat.shipped import load_template


def test_builds_are_byte_identical(tmp_path: Path) -> None:
    first = tiny.build_tokenizer("llama3", tmp_path / "a")
    second = tiny.build_tokenizer("llama3", tmp_path / "b")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (first / name).read_bytes() == (second / name).read_bytes(), name


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_control_tokens_are_single_tokens_and_the_template_ships(family: str) -> None:
    spec = FAMILIES[family]
    chat = ChatFormat.from_pretrained(tiny.shared_tokenizer_dir(family))
    assert chat.template == load_template(family)
    for token in (*spec.special_tokens, *spec.tag_tokens):
        assert len(chat.encode(token)) == 1, token
        assert chat.decode(chat.encode(token)) == token
    special = set(chat.tokenizer.all_special_tokens)
    assert spec.eos_token in special and not set(spec.tag_tokens) & special
    text = 'Hello, wörld! {"name": "ls", "arguments": {"a": 1}}\n\n  indented'
    assert chat.decode(chat.encode(text)) == text  # byte-level: any text round-trips


def test_corpus_dir_trains_a_larger_vocabulary(tmp_path: Path) -> None:
    corpus = tmp_path / "data"
    corpus.mkdir()
    lines = [
        json.dumps({"prompt": [{"role": "user", "content": f"move file_{i}.txt to folder_{i % 7}"}]})
        for i in range(400)
    ]
    (corpus / "train.jsonl").write_text("\n".join(lines))
    plain = ChatFormat.from_pretrained(tiny.build_tokenizer("qwen3", tmp_path / "plain"))
    trained = ChatFormat.from_pretrained(tiny.build_tokenizer("qwen3", tmp_path / "trained", corpus))
    assert len(trained.tokenizer) > len(plain.tokenizer)
    sample = "move file_12.txt to folder_5"
    assert len(trained.encode(sample)) < len(plain.encode(sample))


def test_empty_corpus_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"no \*\.jsonl files"):
        tiny.build_tokenizer("qwen3", tmp_path / "out", tmp_path)


def test_cli_builds_a_tokenizer_dir(tmp_path: Path) -> None:
    out = tmp_path / "glm"
    done = subprocess.run(
        [sys.executable, "-m", "t3rl_core.chat.tiny", "--family", "glm4", "--out", str(out), "--no-model"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert json.loads(done.stdout) == {"family": "glm4", "dir": str(out)}
    assert ChatFormat.from_pretrained(out).family.name == "glm4"
    assert not (out / "config.json").exists()
