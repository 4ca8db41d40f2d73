"""`t3rl check-template` writes the tiny tokenizer without transformers (`build_local_tokenizer`): what
`LocalTokenizer`, the reader of every check, reads of it is what it reads of `build_tokenizer`'s
directory (saved by transformers), for every shipped family."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from t3rl_core.chat.families import FAMILIES
from t3rl_core.chat.tiny import build_local_tokenizer, build_tokenizer
from t3rl_core.chat.tokenizer import LocalTokenizer

TEXT = '<|im_start|>user\nhello world ∑ 12 <tool_call>{"a": 1}</tool_call><|im_end|><think>x</think>'


def _read(directory: Path) -> tuple[Any, ...]:
    tokenizer = LocalTokenizer(directory)
    added = tokenizer.backend_tokenizer.get_added_tokens_decoder()
    ids = tokenizer.encode(TEXT)
    return (
        tokenizer.get_vocab(),
        {
            i: (t.content, t.special, t.normalized, t.lstrip, t.rstrip, t.single_word)
            for i, t in added.items()
        },
        tokenizer.special_tokens_map,
        tokenizer.all_special_tokens,
        tokenizer.chat_template,
        tokenizer.eos_token,
        ids,
        tokenizer.encode(TEXT, add_special_tokens=True),
        tokenizer.decode(ids),
        tokenizer.decode(ids, skip_special_tokens=True),
    )


@pytest.mark.parametrize("name", list(FAMILIES))
def test_the_local_tiny_tokenizer_reads_as_transformers_saves_it(name: str, tmp_path: Path) -> None:
    spec = FAMILIES[name]
    template = "{{ bos_token }}{% for m in messages %}{{ m.content }}{% endfor %}" if name == "glm4" else None
    saved = build_tokenizer(spec, tmp_path / "transformers", template=template)
    assert _read(build_local_tokenizer(spec, tmp_path / "local", template=template)) == _read(saved)


def test_check_template_builds_its_tokenizer_without_transformers(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import transformers

    from launch.cli.check_template import check_template_command

    def saved_by_transformers(*args: object, **kwargs: object) -> None:
        raise AssertionError("the tiny tokenizer was built with transformers")

    monkeypatch.setattr(transformers, "PreTrainedTokenizerFast", saved_by_transformers)
    with pytest.raises(typer.Exit) as done:
        check_template_command("qwen3", None, None, None)
    assert done.value.exit_code == 0 and "5/5 checks pass" in capsys.readouterr().out
