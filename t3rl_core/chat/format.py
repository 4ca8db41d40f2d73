"""Conversations → token ids, and the token deltas of token-in-token-out (TITO) episodes.

An episode's token list grows by model tokens and by the tokens that follow a model turn: the rest of
the turn's closing text, the new observation messages and the next generation prompt. Those deltas
are rendered against a small fixed conversation whose assistant turn holds a sentinel, so their cost
depends on the new messages only, never on the history.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Collection, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from t3rl_core.chat.byte_decode import ByteDecoder
from t3rl_core.chat.chatml_delta import delta_writer
from t3rl_core.chat.control_text import ControlText, added_tokens
from t3rl_core.chat.custom import resolve
from t3rl_core.chat.families import Family, detect_family, family
from t3rl_core.chat.keys import json_key
from t3rl_core.chat.offloop import INLINE_CHARS, OffLoopEncoder
from t3rl_core.chat.pieces import MIN_CHARS, PieceEncoder
from t3rl_core.chat.prompt_head import PromptHeads
from t3rl_core.chat.scalar_text import scalar_value
from t3rl_core.chat.shipped import TEMPLATES_DIR, load_template
from t3rl_core.chat.template import RenderedJSON, compile_template, render_template
from t3rl_core.chat.tokenizer import TokenizerError, load_tokenizer
from t3rl_core.chat.vocab_limit import token_id_limit

if TYPE_CHECKING:
    from t3rl_core.config import ChatConfig, ParsersConfig
    from t3rl_core.types import Message

# Stands in for the model's text in the base conversation of the deltas; never produced by a model.
_SENTINEL = "\u27e6t3rl-assistant-turn\u27e7"
# The fixed conversation a turn delta follows (templates get copies of messages, never these).
_DELTA_BASE: tuple[Message, ...] = (
    {"role": "user", "content": "."},
    {"role": "assistant", "content": _SENTINEL},
)
# The content of the message a role's probe renders (ChatFormat.drops_role).
_ROLE_PROBE = "t3rl role probe 7f3a"
# Prompts whose token ids are kept (GRPO samples each prompt n times in a row).
_PROMPT_CACHE_SIZE = 1024
# Distinct tools kept as RenderedJSON (a tool list's tools are kept while the list is).
_TOOL_CACHE_SIZE = 4096
# Turn deltas whose token ids are kept: envs repeat observations (BFCL: ~65 % of the deltas of 256
# episodes of distinct rows repeat an earlier one: the same tool outputs and follow-up questions).
# Long ones repeat too (the same call on the same state returns the same long listing to each sample
# of a prompt), and cost the most to encode again (BFCL: 46 deltas of 0.5-4k tokens, ~0.1 s of
# encoding a 256-episode batch). Bounded by entries and by ids kept in all (~1M, tens of MB at most:
# their keys hold the texts too); the oldest go first.
_DELTA_CACHE_SIZE = 2048
_DELTA_CACHE_TOKENS = 1 << 20
_DELTA_MAX_TOKENS = 8192
# Template globals whose output is not a function of the inputs: a template naming one renders each
# delta afresh.
_UNSTABLE_GLOBALS = ("strftime_now", "lipsum")
# A turn delta's cache key: the new messages' items, the generation prompt, the model's stop token.
_DeltaKey = tuple[tuple[tuple[tuple[str, str], ...], ...], bool, int | None]


@lru_cache(maxsize=8)
def cached_tokenizer(path: str) -> Any:
    try:
        return load_tokenizer(path)
    except (OSError, ValueError, Exception) as exc:
        raise TokenizerError(
            f"cannot load a tokenizer from '{path}' (local files only): {exc}. Build a tiny offline one "
            "with `python -m t3rl_core.chat.tiny --family qwen3 --out DIR` or point chat.tokenizer at a "
            "local model dir."
        ) from exc


def tools_cache_key(tools: Sequence[Mapping[str, Any]] | None) -> str:
    """A tool list as a cache key: equal lists with their keys in the same order give equal keys. Key
    order counts: templates write each tool's JSON in its own key order, so two lists that differ only
    in it render different prompts."""
    return json_key(tools or None)


def _isolated_tokens(backend: Any) -> list[str]:
    """Added tokens the tokenizer always cuts its input at (no stripping of neighbouring whitespace)."""
    if backend is None:
        return []
    return [
        token.content
        for token in backend.get_added_tokens_decoder().values()
        if not (token.lstrip or token.rstrip or token.single_word or token.normalized)
    ]


class ChatFormat:
    """A tokenizer with its chat template, its family's turn-ending tokens and the TITO deltas."""

    def __init__(
        self,
        tokenizer: Any,
        *,
        template: str | None = None,
        family_: Family | None = None,
        template_kwargs: Mapping[str, Any] | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.template = template or tokenizer.chat_template
        if not self.template:
            raise ValueError("the tokenizer has no chat template; name one with chat.chat_template")
        self.family = family_ or detect_family(tokenizer.get_vocab())
        self.template_kwargs = dict(template_kwargs or {})
        vocab = tokenizer.get_vocab()
        if self.family is None and not (
            isinstance(tokenizer.eos_token, str) and tokenizer.eos_token in vocab
        ):
            # No family's turn end, and no eos_token of the vocabulary to stand for it: 'lacks the
            # turn-ending tokens [None] of its chat family' named a family there is none of.
            eos = (
                "declares no eos_token"
                if tokenizer.eos_token is None
                else f"declares the eos_token {tokenizer.eos_token!r}, no token of its vocabulary"
            )
            raise ValueError(
                f"the tokenizer {eos}, and its vocabulary is of no chat family t3rl ships, so no token "
                "ends a model turn: declare the family's tokens with chat.family (its stop_tokens, "
                "eos_token, pad_token, special_tokens and name)"
            )
        stop_tokens = self.family.stop_tokens if self.family else (tokenizer.eos_token,)
        missing = [token for token in stop_tokens if token not in vocab]
        if missing:
            raise ValueError(f"the tokenizer lacks the turn-ending tokens {missing} of its chat family")
        self.stop_token_ids: tuple[int, ...] = tuple(vocab[token] for token in stop_tokens)
        self._stop_text = dict(zip(self.stop_token_ids, stop_tokens, strict=True))
        self._closing_cache: dict[bool, str] = {}
        self._blanks: frozenset[int] | None = None
        # Turn-delta ids by (new messages as JSON, generation prompt, stop token the model ended on).
        self._deltas: dict[_DeltaKey, list[int]] = {}
        self._delta_tokens = 0  # ids kept in `_deltas`, in all
        self._stable_deltas = not any(name in self.template for name in _UNSTABLE_GLOBALS)
        # Each prompt as (its head's ids, shared with every prompt of the head; the rest's ids): a
        # BFCL prompt's ids are ~90 % its tools block, kept once per tool list instead of once per
        # prompt (~10k ids a prompt, which the collector walked at its first look at them). Tuples:
        # immutable, and the collector stops walking a tuple of ints after its first look.
        self._prompt_cache: OrderedDict[tuple[str, str], tuple[tuple[int, ...], tuple[int, ...]]] = (
            OrderedDict()
        )
        # Per tool list (by tools_cache_key): its tools as RenderedJSON, so prompts reuse their JSON.
        self._tool_lists: OrderedDict[str, list[Any]] = OrderedDict()
        # Each distinct tool (by json_key) once, shared by the tool lists that hold it: BFCL's 81 tool
        # lists of a split are combinations of ~130 tools, and a RenderedJSON is a deep copy (~6 dicts
        # a tool, which the collector walks while they are young) with its own JSON texts.
        self._tools: OrderedDict[str, RenderedJSON] = OrderedDict()
        # The Rust tokenizer of a fast HF tokenizer, for encodes without transformers' Python overhead.
        self._backend = getattr(tokenizer, "backend_tokenizer", None)
        # Its offset-free batch encode (tokenizers >= 0.21): the same ids, ~30 % less CPU than `encode`,
        # which also computes character offsets and token strings that nothing here reads.
        self._encode_fast = getattr(self._backend, "encode_batch_fast", None)
        self._compiled = compile_template(self.template)
        self._render_globals = {**tokenizer.special_tokens_map, **self.template_kwargs}
        # Deltas of a shipped ChatML template written without Jinja (chatml_delta.py), after the base
        # conversation's text up to its assistant text (which no later message changes in them).
        self._write_delta = delta_writer(self.template, self._render_globals)
        if self._write_delta is not None:
            base = self.render(_DELTA_BASE)
            self._delta_base_text = base[: base.index(_SENTINEL) + len(_SENTINEL)]
        self._heads = PromptHeads(self, _isolated_tokens(self._backend))
        # Texts from kept pieces where the tokenizer provably encodes them as the whole (pieces.py).
        batch = self._encode_batch if self._encode_fast is not None else None
        self._pieces = PieceEncoder.for_tokenizer(self._backend, batch)
        self._off_loop = OffLoopEncoder(self.encode)
        # Control tokens' texts outside the model's turns are encoded as text (control_text.py).
        self._control_text = ControlText(added_tokens(tokenizer), self.encode, self.turn_tokens)
        self._byte_decoder = ByteDecoder.for_tokenizer(self._backend)
        # One past the largest id the model can emit (its config's vocab_size): vocab_limit.py.
        self.token_id_limit = token_id_limit(tokenizer)
        # Roles the template was probed to write (drops_role), and the probes' answers.
        self.written_roles: set[str] = set()
        self._dropped_roles: dict[str, bool] = {}
        self._dropped_after_model: dict[str, bool] = {}

    @classmethod
    def from_config(cls, config: ChatConfig, parsers: ParsersConfig | None = None) -> ChatFormat:
        """The chat format of a config: a shipped template, a template plugin or a .jinja file (with
        `config.family`'s tokens), or the tokenizer's own template."""
        template, family_ = resolve(config, parsers)
        tokenizer = cached_tokenizer(str(config.tokenizer))
        return cls(tokenizer, template=template, family_=family_, template_kwargs=config.chat_template_kwargs)

    @classmethod
    def from_pretrained(
        cls, path: str | Path, chat_template: str | None = None, **template_kwargs: Any
    ) -> ChatFormat:
        """Load a local tokenizer; `chat_template` (a shipped name or a .jinja path) replaces its own."""
        tokenizer = cached_tokenizer(str(path))
        if chat_template is None:
            return cls(tokenizer, template_kwargs=template_kwargs)
        shipped = (TEMPLATES_DIR / f"{chat_template}.jinja").is_file()
        return cls(
            tokenizer,
            template=load_template(chat_template),
            family_=family(chat_template) if shipped else None,
            template_kwargs=template_kwargs,
        )

    # ----------------------------------------------------------------------------- text and tokens

    def render(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
    ) -> str:
        return render_template(
            self._compiled,
            messages,
            tools,
            add_generation_prompt=add_generation_prompt,
            variables=self._render_globals,
        )

    def turn_tokens(self) -> list[str]:
        """The texts of the tokens that end or open a turn: the added tokens the template writes around
        a system, a user, an assistant and a tool message (turn ends, role markers, a BOS, Qwen's
        <tool_response>), and the turn-ending tokens (Llama-3's <|eom_id|> ends a turn no plain render
        holds). Not the tags a model writes inside its turn: the template writes none around these
        contents (ControlText.hide)."""
        turn = [{"role": "user", "content": _ROLE_PROBE}, {"role": "assistant", "content": _SENTINEL}]
        around = ""
        for probe in (
            [{"role": "system", "content": _ROLE_PROBE}, *turn, {"role": "tool", "content": _ROLE_PROBE}],
            turn,  # a template refusing a system or tool message there
        ):
            try:
                around = self.render([*probe, {"role": "user", "content": _ROLE_PROBE}])
                break
            except Exception:
                continue
        around = around.replace(_ROLE_PROBE, "\n").replace(_SENTINEL, "\n")
        written = [token for token in added_tokens(self.tokenizer) if token in around]
        return [*written, *self._stop_text.values()]

    def drops_role(self, role: str) -> bool:
        """Whether the template writes nothing of a message with `role`: DeepSeek-V3's writes system,
        user, assistant and tool messages and skips any other (a row's `developer` message, a world's
        `ipython` or `function` result) without a word, so its content never reached the model. Probed
        once per role, after a user and an assistant turn; a template that raises on the probe is not
        said to drop it (its own render then says what it refuses)."""
        dropped = self._dropped_roles.get(role)
        if dropped is None:
            probe = [*_DELTA_BASE, {"role": role, "content": _ROLE_PROBE}]
            try:
                dropped = _ROLE_PROBE not in self.render(probe, add_generation_prompt=True)
            except Exception:
                dropped = False
            self._dropped_roles[role] = dropped
            if not dropped:
                self.written_roles.add(role)
        return dropped

    def drops_after_model(self, role: str) -> bool:
        """Whether the template writes nothing of a message with `role` where a world's message comes,
        after the model's turn (the turn delta): DeepSeek-V3's writes every system message in the
        prompt's head, so a world's system message mid-episode was in no delta and never reached the
        model, though the role is written at the start (`drops_role`). Probed once per role."""
        dropped = self._dropped_after_model.get(role)
        if dropped is None:
            try:
                delta = self._continuation([{"role": role, "content": _ROLE_PROBE}], True)
                dropped = _ROLE_PROBE not in delta
            except Exception:  # a template refusing the role says so when the delta is rendered
                dropped = False
            self._dropped_after_model[role] = dropped
        return dropped

    def encode(self, text: str) -> list[int]:
        if not text:
            return []
        if self._pieces is not None and len(text) >= MIN_CHARS:
            return self._pieces.encode(text)
        if self._encode_fast is not None:
            return self._encode_fast([text], add_special_tokens=False)[0].ids
        if self._backend is not None:
            return self._backend.encode(text, add_special_tokens=False).ids
        return self.tokenizer.encode(text, add_special_tokens=False)

    async def encode_async(self, text: str) -> list[int]:
        """`encode(text)`, in a worker thread when the text is long (t3rl_core/chat/offloop.py); the
        same ids."""
        if self._backend is None:  # a Python tokenizer holds the GIL: nothing to gain from a thread
            return self.encode(text)
        if self._pieces is not None and len(text) >= MIN_CHARS:
            # Only the pieces never seen are encoded: a worker takes the text when they are long.
            pieces, new = self._pieces.split(text)
            if sum(map(len, new)) < INLINE_CHARS:
                return self._pieces.join(pieces, new, self._pieces.encode_new(new) if new else [])
        return await self._off_loop.encode(text)

    def _encode_batch(self, texts: list[str]) -> list[list[int]]:
        """The ids of each text, in one call of the tokenizer's offset-free batch encode."""
        return [encoding.ids for encoding in self._encode_fast(texts, add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        if self._byte_decoder is not None:
            return self._byte_decoder.decode(ids)
        if self._backend is not None:
            return self._backend.decode(list(ids), skip_special_tokens=False)
        # The ids' own text: transformers' clean-up (per the tokenizer's config) rewrites " ," as "," and
        # " 's" as "'s", so a slow tokenizer's model text, and the call arguments parsed from it, were not
        # what the model sampled (and a fresh render of that text encodes other ids).
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def render_ids(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        env_spans: Mapping[int, Sequence[tuple[int, int]]] | None = None,
        model_turns: Collection[int] | None = None,
    ) -> list[int]:
        """A fresh render of a whole conversation as token ids (control tokens' texts outside the model's
        turns and in the tools as text, as the episode encodes them). `env_spans`: message index →
        character spans of an env's inline text inside the model's turn, each encoded on its own as
        text, as the episode encoded it; `model_turns`: the indices of the model's own assistant
        messages, None when every assistant message is (`ControlText.hide`)."""
        masked, hidden = self._control_text.hide(messages, env_spans, model_turns)
        rendered_tools = self._rendered_tools(tools, tools_cache_key(tools))
        text = self.render(masked, rendered_tools, add_generation_prompt=add_generation_prompt)
        if hidden or self._control_text.marked(text):
            return self._control_text.encode_rendered(text, hidden)
        return self.encode(text)

    def encode_text(self, text: str) -> list[int]:
        """The ids of text that is not the model's (an env's inline observation): control tokens'
        texts in it are encoded as ordinary text (control_text.py)."""
        return self._control_text.encode_text(text)

    async def encode_text_async(self, text: str) -> list[int]:
        """`encode_text`, off the event loop when long (`encode_async`) unless it holds a control
        token's text (rare: encoded in place)."""
        if self._control_text.holds_control_text(text):
            return self.encode_text(text)
        return await self.encode_async(text)

    def prompt_ids(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tools_key: str | None = None,
    ) -> list[int]:
        """The token ids the first model call starts from (cached: a prompt's n samples share them).
        `tools_key` is `tools_cache_key(tools)` when the caller has it already."""
        key, parts = self._cached_prompt(messages, tools, tools_key)
        if parts is None:
            masked, hidden = self._control_text.hide(messages, model_turns=())
            text = self.render(masked, self._rendered_tools(tools, key[0]), add_generation_prompt=True)
            if hidden or self._control_text.marked(text):
                parts = self._keep_prompt(key, (), self._control_text.encode_rendered(text, hidden))
            else:
                parts = self._keep_prompt(key, *self._heads.encode_parts(text, messages, tools, key[0]))
        return [*parts[0], *parts[1]]

    async def prompt_ids_async(
        self,
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        tools_key: str | None = None,
    ) -> list[int]:
        """`prompt_ids` with its encodes off the event loop (`encode_async`): the same ids."""
        key, parts = self._cached_prompt(messages, tools, tools_key)
        if parts is None:
            masked, hidden = self._control_text.hide(messages, model_turns=())
            text = self.render(masked, self._rendered_tools(tools, key[0]), add_generation_prompt=True)
            # Rare (a control token's text in a prompt or its tools): encoded in place, no head reuse.
            if hidden or self._control_text.marked(text):
                encoded = (), self._control_text.encode_rendered(text, hidden)
            else:
                encoded = await self._heads.encode_parts_async(text, messages, tools, key[0])
            parts = self._keep_prompt(key, *encoded)
        return [*parts[0], *parts[1]]

    def _cached_prompt(
        self, messages: Sequence[Message], tools: Sequence[Mapping[str, Any]] | None, tools_key: str | None
    ) -> tuple[tuple[str, str], tuple[tuple[int, ...], tuple[int, ...]] | None]:
        key = (tools_cache_key(tools) if tools_key is None else tools_key, json_key(messages, sort_keys=True))
        parts = self._prompt_cache.get(key)
        if parts is not None:
            self._prompt_cache.move_to_end(key)
        return key, parts

    def _rendered_tools(self, tools: Sequence[Mapping[str, Any]] | None, tools_key: str) -> list[Any] | None:
        if not tools:
            return None
        rendered = self._tool_lists.get(tools_key)
        if rendered is None:
            rendered = self._tool_lists[tools_key] = [
                self._rendered_tool(tool) if isinstance(tool, Mapping) else tool for tool in tools
            ]
            if len(self._tool_lists) > _PROMPT_CACHE_SIZE:
                self._tool_lists.popitem(last=False)
        else:
            self._tool_lists.move_to_end(tools_key)
        return rendered

    def _rendered_tool(self, tool: Mapping[str, Any]) -> RenderedJSON:
        try:
            # Plain JSON data (dicts with text keys, lists, texts, numbers), no lone surrogate: orjson
            # refuses anything else. The same text as json_key's.
            plain: str | None = orjson.dumps(tool).decode()
        except TypeError:
            plain = None
        key = json_key(tool) if plain is None else plain
        rendered = self._tools.get(key)
        if rendered is None:
            # Its texts as the prompt's ids hold them: control tokens' texts as text (control_text.py).
            # Scalar text too (a lone surrogate no tokenizer encodes: chat/scalar_text.py). Both walk
            # every string in Python (~75 us a BFCL tool; 128 distinct tools, most of them rendered
            # before the first wave's calls): skipped when the tool's JSON shows they would leave it as
            # it is (no surrogate, no control token's text; ~1.5 us).
            shown = (
                tool
                if plain is not None and self._control_text.json_shows_none(plain)
                else self._control_text.hide_value(scalar_value(tool))
            )
            rendered = self._tools[key] = RenderedJSON(shown)
            if len(self._tools) > _TOOL_CACHE_SIZE:
                self._tools.popitem(last=False)
        else:
            self._tools.move_to_end(key)
        return rendered

    def _keep_prompt(
        self, key: tuple[str, str], head: tuple[int, ...], rest: list[int]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        kept = self._prompt_cache[key] = (head, tuple(rest))
        if len(self._prompt_cache) > _PROMPT_CACHE_SIZE:
            self._prompt_cache.popitem(last=False)
        return kept

    def model_text(self, ids: Sequence[int]) -> str:
        """The text of one model call as it goes into the assistant message (a final stop token excluded)."""
        if ids and ids[-1] in self._stop_text:
            ids = ids[:-1]
        return self.decode(ids)

    # ----------------------------------------------------------------------------------- TITO deltas

    def turn_end_ids(
        self,
        last_token: int | None,
        new_messages: Sequence[Message] = (),
        *,
        add_generation_prompt: bool = False,
    ) -> list[int]:
        """Tokens that follow a model call in a fresh render: the rest of the assistant turn's closing,
        then `new_messages`, then the generation prompt if asked.

        `last_token` is the model's final token: when it is the turn-ending token the template writes
        next, it is not repeated (Qwen stops at <|im_end|>, so only the "\\n" after it is added); when
        the call was cut by length, the template's whole closing is added.
        """
        key = self._delta_key(last_token, new_messages, add_generation_prompt)
        ids = self._deltas.get(key) if key else None
        if ids is None:
            masked, hidden = self._control_text.hide(new_messages, model_turns=())
            text = self._turn_end_text(last_token, masked, add_generation_prompt)
            marked = hidden or self._control_text.marked(text)  # a message's other fields: markers
            ids = self._control_text.encode_rendered(text, hidden) if marked else self.encode(text)
            self._keep_delta(key, ids)
        return list(ids)

    async def turn_end_ids_async(
        self,
        last_token: int | None,
        new_messages: Sequence[Message] = (),
        *,
        add_generation_prompt: bool = False,
    ) -> list[int]:
        """`turn_end_ids` with its encode off the event loop (`encode_async`): the same ids."""
        key = self._delta_key(last_token, new_messages, add_generation_prompt)
        ids = self._deltas.get(key) if key else None
        if ids is None:
            masked, hidden = self._control_text.hide(new_messages, model_turns=())
            text = self._turn_end_text(last_token, masked, add_generation_prompt)
            if hidden or self._control_text.marked(text):  # rare (a control token's text): in place
                ids = self._control_text.encode_rendered(text, hidden)
            else:
                ids = await self.encode_async(text)
            self._keep_delta(key, ids)
        return list(ids)

    def _delta_key(
        self, last_token: int | None, new_messages: Sequence[Message], add_generation_prompt: bool
    ) -> _DeltaKey | None:
        """What a turn delta's ids depend on (the template, its variables and the tokenizer are fixed):
        the new messages, the generation prompt and the stop token the model ended on, if any. None (no
        caching) unless every message is a dict of strings (an env's observations), whose equality is
        the template's, or when the template is not a function of its inputs."""
        if not self._stable_deltas:
            return None
        messages = []
        for message in new_messages:
            if type(message) is not dict or not all(
                type(key) is str and type(value) is str for key, value in message.items()
            ):
                return None
            messages.append(tuple(message.items()))
        return tuple(messages), add_generation_prompt, last_token if last_token in self._stop_text else None

    def _keep_delta(self, key: _DeltaKey | None, ids: list[int]) -> None:
        if key is None or len(ids) > _DELTA_MAX_TOKENS:
            return
        replaced = self._deltas.pop(key, None)  # two episodes that missed at once keep it twice
        self._delta_tokens += len(ids) - (len(replaced) if replaced is not None else 0)
        self._deltas[key] = ids
        while len(self._deltas) > _DELTA_CACHE_SIZE or self._delta_tokens > _DELTA_CACHE_TOKENS:
            self._delta_tokens -= len(self._deltas.pop(next(iter(self._deltas))))  # the oldest

    def _turn_end_text(
        self, last_token: int | None, new_messages: Sequence[Message], add_generation_prompt: bool
    ) -> str:
        text = self._continuation(new_messages, add_generation_prompt)
        stop_text = self._stop_text.get(last_token) if last_token is not None else None
        if stop_text and text.startswith(stop_text):
            text = text[len(stop_text) :]
        return text

    def tito_drift(
        self,
        tokens: Sequence[int],
        messages: Sequence[Message],
        tools: Sequence[Mapping[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = False,
        env_spans: Mapping[int, Sequence[tuple[int, int]]] | None = None,
        cut: bool = False,
        model_spans: Collection[tuple[int, int]] = (),
        model_turns: Collection[int] | None = None,
    ) -> int | None:
        """Where an episode's tokens first differ from a fresh render of its conversation; None if they
        agree. A final turn-ending token is allowed when the template writes no turn closing (GLM: the
        model ends its turn with the next role token, which a render of the finished turn lacks). With
        such a template two more differences are the render's, not drift (`model_spans`: each model
        call's [start, end) in `tokens`): the model's own stop token ending a call where the render has
        none (a GLM model ends a turn meant as a tool call with <|observation|>; when the call does not
        parse, the next message is the world's correction, whose render does not begin with it), and
        whitespace the render writes before a call's first token that the model did not write (GLM's
        template writes a newline after <|assistant|> before any text but a call of an offered tool,
        which a malformed call is not). The model's tokens are kept as sampled; the render cannot know
        what they meant. Any other token either lacks, anywhere, is drift. `env_spans` are the env's
        inline texts in the model's turns (`render_ids`); `cut`: the episode dropped its last inserted
        tokens at a token limit, so the tokens are a prefix of the render."""
        expected = self.render_ids(
            messages,
            tools,
            add_generation_prompt=add_generation_prompt,
            env_spans=env_spans,
            model_turns=model_turns,
        )
        tokens = list(tokens)
        if cut:
            expected = expected[: len(tokens)]
        if tokens == expected:
            return None
        closes = bool(self._continuation((), False))
        trailing_stop = tokens[-1:] and tokens[-1] in self._stop_text and not closes
        if trailing_stop and tokens[:-1] == expected:
            return None
        if closes or not model_spans:
            return _first_difference(tokens, expected, set(), set(), cut)
        ends = {end - 1 for _, end in model_spans if 0 < end <= len(tokens)}
        stops = {i for i in ends if tokens[i] in self._stop_text}
        starts = {start for start, _ in model_spans}
        return _first_difference(tokens, expected, stops, starts, cut, self._blank_ids())

    def _blank_ids(self) -> frozenset[int]:
        """The ids of whitespace-only tokens (how a render may begin a model turn before the text)."""
        if self._blanks is None:
            self._blanks = frozenset(i for i in self.encode("\n \n\n") if not self.decode([i]).strip())
        return self._blanks

    def _render_delta(self, messages: list[Message], add_generation_prompt: bool) -> str:
        base = _DELTA_BASE
        if self._write_delta is not None and messages[:1] == [base[0]] and messages[1:2] == [base[1]]:
            written = self._write_delta(messages[2:], add_generation_prompt)
            if written is not None:
                return self._delta_base_text + written
        return self.render(messages, add_generation_prompt=add_generation_prompt)

    def _continuation(self, new_messages: Sequence[Message], add_generation_prompt: bool) -> str:
        if not new_messages and add_generation_prompt in self._closing_cache:
            return self._closing_cache[add_generation_prompt]
        rendered = self._render_delta([*_DELTA_BASE, *new_messages], add_generation_prompt)
        at = rendered.find(_SENTINEL)
        if at < 0:
            raise ValueError(
                "the chat template drops assistant content; TITO deltas need it rendered verbatim"
            )
        text = rendered[at + len(_SENTINEL) :]
        if not new_messages:
            self._closing_cache[add_generation_prompt] = text
        return text


def _first_difference(
    tokens: list[int],
    expected: list[int],
    stops: set[int],
    starts: set[int],
    cut: bool,
    blanks: frozenset[int] = frozenset(),
) -> int | None:
    """The index of the first token of `tokens` that `expected` does not have at its place, passing
    over a token at a `stops` index that `expected` lacks there, and a blank token `expected` has just
    before a model call's first token (at a `starts` index) that `tokens` lack; None when nothing is
    left over (the rest of `expected` may be missing only when `cut`)."""
    i = j = 0
    while i < len(tokens):
        if j < len(expected) and tokens[i] == expected[j]:
            i, j = i + 1, j + 1
        elif i in stops:
            i += 1
        elif (
            i in starts
            and expected[j : j + 1]
            and expected[j] in blanks
            and expected[j + 1 : j + 2] == [tokens[i]]
        ):
            j += 1
        else:
            return i
    return None if cut or j == len(expected) else len(tokens)
