"""Build a tiny offline model of any chat family: a real byte-level BPE tokenizer trained here with
the family's control tokens and chat template, plus a small random Qwen3-architecture model.

Used by the tests of every family (tokenizer only) and by the CPU quickstart (tokenizer + model):

    python -m t3rl_core.chat.tiny --family qwen3 --out DIR [--corpus PATH_OR_DIR_OF_JSONL] [--no-model]

Deterministic: the same family, corpus and sizes give byte-identical files.
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from t3rl_core import outside_json
from t3rl_core.chat.custom import resolve
from t3rl_core.chat.families import FAMILIES, Family, family
from t3rl_core.chat.shipped import load_template
from t3rl_core.config import ChatConfig
from t3rl_core.counts import counted
from t3rl_core.installed import package_versions

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# Pre-tokenization of the Qwen2 / Llama-3 tokenizers: a newline run is its own piece, so a text split
# at a newline tokenizes as the whole does (TITO deltas end with the generation prompt's newline).
_PIECES = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
# Cap on corpus text read, so a build stays a few seconds whatever the corpus.
_MAX_CORPUS_CHARS = 4_000_000

_BUILTIN_TEXT = """\
You are a helpful assistant. Think step by step, then answer the user's question.
The user asked: can you list the files in the current directory and move report.txt to the archive folder?
Sure. First I will list the files, then I will move the file and confirm the result to you.
{"name": "ls", "arguments": {"a": true}}
{"name": "mv", "arguments": {"source": "report.txt", "destination": "archive"}}
{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city.",
"parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string",
"enum": ["celsius", "fahrenheit"]}}, "required": ["city"]}}}
The result was: {"current_directory_content": ["report.txt", "notes.md", "data.csv"]} and the move succeeded.
Error during execution: file not found. Please check the path and try again with a valid argument.
What is 12 * 7 + 3? Let me compute: 12 * 7 = 84, and 84 + 3 = 87. The answer is 87.
def add(a: int, b: int) -> int:
    return a + b
print(add(40, 2))
I have updated some more functions you can choose from. What about now?
Booking a flight from San Francisco to New York on 2024-05-01 for 2 passengers costs 450.00 dollars.
Thank you! Is there anything else I can help you with today? No, that is all. Goodbye.
"""


def _corpus_texts(corpus: Path | None) -> Iterator[str]:
    """Lines of the built-in text, then of the corpus file (or of every *.jsonl in a corpus dir)."""
    yield from _BUILTIN_TEXT.splitlines(keepends=True)
    if corpus is None:
        return
    files = sorted(corpus.glob("*.jsonl")) if corpus.is_dir() else [corpus]
    if not files:
        raise ValueError(f"no *.jsonl files in corpus dir {corpus}")
    budget = _MAX_CORPUS_CHARS
    for path in files:
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                if budget <= 0:
                    return
                budget -= len(line)
                yield line


def build_tokenizer(
    family_name: str | Family,
    out_dir: str | Path,
    corpus: str | Path | None = None,
    vocab_size: int = 2048,
    template: str | None = None,
) -> Path:
    """Train and save a byte-level BPE tokenizer of the family (with its template) into `out_dir`; a
    family t3rl does not ship is given as a `Family` with its `template` source."""
    # lazy: transformers, only when the tiny tokenizer is trained
    from transformers import PreTrainedTokenizerFast

    spec = family_name if isinstance(family_name, Family) else family(family_name)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=_trained(spec, corpus, vocab_size),
        bos_token=spec.bos_token,
        eos_token=spec.eos_token,
        pad_token=spec.pad_token,
        model_max_length=131072,
    )
    wrapped.chat_template = template or load_template(spec.name)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wrapped.save_pretrained(str(out))
    return out


def build_local_tokenizer(spec: Family, out_dir: str | Path, template: str | None = None) -> Path:
    """`build_tokenizer`'s tokenizer as `t3rl_core.chat.tokenizer.LocalTokenizer` reads it (its tokens,
    named tokens and template), written without transformers, which costs more than the rest of `t3rl
    check-template` to import. tests/chat/test_local_tiny_tokenizer.py checks that both read the same."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _trained(spec, None, 2048).save(str(out / "tokenizer.json"))
    named = {"bos_token": spec.bos_token, "eos_token": spec.eos_token, "pad_token": spec.pad_token}
    (out / "tokenizer_config.json").write_text(json.dumps(named), encoding="utf-8")
    (out / "chat_template.jinja").write_text(template or load_template(spec.name), encoding="utf-8")
    return out


def _trained(spec: Family, corpus: str | Path | None, vocab_size: int) -> Tokenizer:
    """The family's byte-level BPE tokenizer trained on the built-in text (and the corpus)."""
    # lazy: tokenizers, only when the tiny tokenizer is trained
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_PIECES), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=2,
        special_tokens=[AddedToken(token, special=True, normalized=False) for token in spec.special_tokens],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(_corpus_texts(Path(corpus) if corpus else None), trainer)
    tokenizer.add_tokens([AddedToken(token, special=False, normalized=False) for token in spec.tag_tokens])
    return tokenizer


def build_model(
    tokenizer_dir: str | Path, out_dir: str | Path | None = None, seed: int = 0, vocab_size: int | None = None
) -> Path:
    """Save a small random Qwen3 causal LM sized to the tokenizer in `tokenizer_dir` (default: same dir).

    `vocab_size` pads the embedding beyond the tokenizer, as released models do (Megatron's
    --vocab-size must then name the padded size); None = exactly the tokenizer's size.
    """
    import torch  # lazy: torch, only when the tiny model is built

    # lazy: transformers, only when the tiny model is built
    from transformers import AutoTokenizer, GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    # lazy: transformers, only when the tiny model is built
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    vocab = tokenizer.get_vocab()
    spec = next((f for f in FAMILIES.values() if load_template(f.name) == tokenizer.chat_template), None)
    stop_ids = [vocab[token] for token in spec.stop_tokens] if spec else [tokenizer.eos_token_id]
    if vocab_size is not None and vocab_size < len(tokenizer):
        raise ValueError(
            f"vocab_size {vocab_size} is smaller than the tokenizer ({counted(len(tokenizer), 'token')})"
        )
    config = Qwen3Config(
        vocab_size=vocab_size or len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        max_position_embeddings=131072,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=stop_ids,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=stop_ids, pad_token_id=tokenizer.pad_token_id)
    out = Path(out_dir or tokenizer_dir)
    model.save_pretrained(str(out))
    return out


def build(
    family_name: str | Family,
    out_dir: str | Path,
    corpus: str | Path | None = None,
    with_model: bool = True,
    vocab_size: int | None = None,
    template: str | None = None,
) -> Path:
    """Tokenizer, and unless `with_model` is False the tiny model, in one HF directory."""
    out = build_tokenizer(family_name, out_dir, corpus, template=template)
    if with_model:
        build_model(out, vocab_size=vocab_size)
    return out


# Packages whose versions change the bytes a build writes (tokenizer JSON, config, safetensors).
_BUILD_PACKAGES = ("tokenizers", "transformers", "torch", "safetensors")


def definition_key(definition: dict[str, object]) -> str:
    """16 hex digits naming what a build with `definition` (the family, its template or template file,
    the model config, the corpus's identity: everything the build's arguments say) writes, together
    with the builder itself: this module's source, the shipped template and the packages that
    serialise the files. A change to any of them names a new directory, so a stale build is never
    reused."""
    # From the dist-info names (importlib.metadata parsed four METADATA files with the email parser: ~4 ms
    # of every plan or validate of a config with a tiny model, such as the quickstart).
    versions = package_versions(_BUILD_PACKAGES)
    template = str(definition.get("chat_template") or definition.get("family") or "")
    try:
        template_source = load_template(template)
    except ValueError:  # a template plugin (an import path): its name is in the definition
        template_source = None
    payload = {
        "definition": definition,
        "builder": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
        "template": template_source,
        "packages": versions,
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]


@cache
def _scratch_root() -> Path:
    root = Path(tempfile.mkdtemp(prefix="t3rl-tiny-"))
    atexit.register(shutil.rmtree, root, True)
    return root


@cache
def shared_tokenizer_dir(family_name: str) -> Path:
    """A tokenizer of the family built once per process in a temp dir (tests, benchmarks)."""
    return build_tokenizer(family_name, _scratch_root() / family_name)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m t3rl_core.chat.tiny", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--family", required=True, help=f"a shipped family ({', '.join(sorted(FAMILIES))})")
    parser.add_argument(
        "--chat-template", help="for a family t3rl does not ship: a template plugin or a .jinja file"
    )
    parser.add_argument(
        "--family-spec", help="for a .jinja template: its family's tokens (ChatFamilyConfig JSON)"
    )
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--corpus", type=Path, help="a text/JSONL file or a directory of *.jsonl files")
    parser.add_argument("--no-model", action="store_true", help="build the tokenizer only")
    parser.add_argument(
        "--model-vocab-size",
        type=int,
        help="embedding rows, padded beyond the tokenizer (Megatron's --vocab-size)",
    )
    args = parser.parse_args(argv)
    spec, template = _family_and_template(args.family, args.chat_template, args.family_spec)
    out = build(
        spec,
        args.out,
        args.corpus,
        with_model=not args.no_model,
        vocab_size=args.model_vocab_size,
        template=template,
    )
    print(json.dumps({"family": args.family, "dir": str(out)}))


def _family_and_template(name: str, chat_template: str | None, spec: str | None) -> tuple[Family, str | None]:
    """A shipped family by name, or a user's: a template plugin's, or a .jinja file with `spec`."""
    if chat_template is None and spec is None:
        return family(name), None

    config = ChatConfig.model_validate(
        {
            "tokenizer": "",
            "chat_template": chat_template,
            "family": outside_json.loads(spec, "the family spec") if spec else None,
        }
    )
    template, found = resolve(config)
    if found is None or found.name != name:
        raise SystemExit(f"--chat-template {chat_template} does not describe family '{name}'")
    return found, template


def _stage_command() -> int:
    main()
    return 0


if __name__ == "__main__":
    from t3rl_core.os_errors import stage_main

    stage_main(_stage_command)
