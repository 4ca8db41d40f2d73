"""A local tokenizer directory read with `tokenizers` alone (no transformers, no torch).

`t3rl eval` with the reference or SGLang engine and the rollout hooks only encode, decode and render
chat templates; loading transformers' AutoTokenizer for that costs seconds of start-up (it imports
torch). A directory without `tokenizer.json` (a slow, SentencePiece-only tokenizer) still loads
through transformers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from t3rl_core import outside_json
from t3rl_core.chat.template import compile_template, render_template


class TokenizerError(ValueError):
    """A tokenizer directory that cannot be loaded (missing or broken files): the CLI's exit 2."""


# The named special tokens of a tokenizer config (what templates see as bos_token, eos_token, …).
NAMED_TOKENS = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def _token_text(value: Any) -> str | None:
    """A token as tokenizer configs write it: a string or a serialised AddedToken."""
    if isinstance(value, Mapping):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> dict[str, Any]:
    return outside_json.loads(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else {}


def _chat_template(directory: Path, config: Mapping[str, Any]) -> str | None:
    """The directory's default chat template: chat_template.jinja, or the config's `chat_template`."""
    standalone = directory / "chat_template.jinja"
    if standalone.is_file():
        return standalone.read_text(encoding="utf-8")
    template = config.get("chat_template")
    if isinstance(template, list):  # named templates: [{"name": "default", "template": "…"}, …]
        named = {entry.get("name"): entry.get("template") for entry in template if isinstance(entry, Mapping)}
        template = named.get("default")
    return template if isinstance(template, str) else None


class LocalTokenizer:
    """The part of a fast HF tokenizer t3rl uses, over the directory's `tokenizer.json`."""

    def __init__(self, directory: str | Path) -> None:
        from tokenizers import Tokenizer  # lazy: tokenizers, only when a tokenizer file is loaded

        self.name_or_path = str(directory)
        path = Path(directory)
        self.backend_tokenizer = Tokenizer.from_file(str(path / "tokenizer.json"))
        config = _read_json(path / "special_tokens_map.json") | _read_json(path / "tokenizer_config.json")
        self.chat_template = _chat_template(path, config)
        self.special_tokens_map: dict[str, str] = {
            name: text for name in NAMED_TOKENS if (text := _token_text(config.get(name))) is not None
        }
        self.eos_token = self.special_tokens_map.get("eos_token")
        extra = config.get("extra_special_tokens") or config.get("additional_special_tokens") or []
        if isinstance(extra, Mapping):
            extra = list(extra.values())
        added = self.backend_tokenizer.get_added_tokens_decoder().values()
        specials = [*self.special_tokens_map.values(), *map(_token_text, extra)]
        specials += [token.content for token in added if token.special]
        self.all_special_tokens: list[str] = [t for t in dict.fromkeys(specials) if t is not None]
        self._vocab: dict[str, int] | None = None

    def __len__(self) -> int:
        return self.backend_tokenizer.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        if self._vocab is None:
            self._vocab = self.backend_tokenizer.get_vocab(with_added_tokens=True)
        return dict(self._vocab)

    def convert_tokens_to_ids(self, tokens: str | Sequence[str]) -> Any:
        if isinstance(tokens, str):
            return self.backend_tokenizer.token_to_id(tokens)
        return [self.backend_tokenizer.token_to_id(token) for token in tokens]

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens).ids

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
        return self.backend_tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def apply_chat_template(
        self,
        conversation: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        chat_template: str | None = None,
        add_generation_prompt: bool = False,
        tokenize: bool = False,
        **kwargs: Any,
    ) -> Any:
        template = chat_template or self.chat_template
        if template is None:
            raise ValueError(f"the tokenizer at {self.name_or_path} has no chat template")
        text = render_template(
            compile_template(template),
            conversation,
            tools,
            add_generation_prompt=add_generation_prompt,
            variables={**self.special_tokens_map, **kwargs},
        )
        return self.encode(text) if tokenize else text


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer of a local directory: a LocalTokenizer when it has tokenizer.json, else transformers'."""
    directory = Path(path)
    if (directory / "tokenizer.json").is_file():
        return LocalTokenizer(directory)
    from transformers import AutoTokenizer  # lazy: transformers, only when a tokenizer is loaded

    return AutoTokenizer.from_pretrained(str(directory), local_files_only=True)
