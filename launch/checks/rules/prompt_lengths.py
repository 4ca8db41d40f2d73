"""A train split's prompts against the limits a prompt must fit in, measured in a user's dataset file.

An env declares the column of each input file that holds the prompt and the splits its rows become
(`InputFile.prompt`, `InputFile.splits`). A prompt of at least a limit's tokens never yields a
sample: slime drops it from the dataset (`--rollout-max-prompt-len`), the episode loop ends it before the
first call (`max_context_len`: no room is left), or SGLang refuses it (the model's context).

No tokenizer is loaded: a prompt's whitespace-separated words are a lower bound of its tokens for every
shipped family (their pre-tokenizers split at whitespace, so no token spans two words; the chat
template only adds tokens). A split whose measured prompts are all too long is refused; one where most
are is warned about.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from launch.checks.context import Context, Scope, per_scope
from launch.config.argv_tokens import argv_flags, without_flag
from launch.config.errors import Problem
from launch.config.fixes import list_override
from t3rl_core import outside_json
from t3rl_core.counts import counted
from t3rl_core.input_files import InputFile, scan
from t3rl_core.records import Record

EXTRA = "model.architecture.extra_args"
PROMPT_FLAG = "--rollout-max-prompt-len"


class Prompts(Record):
    """The words of the prompts measured in one input file (a lower bound of their tokens)."""

    spec: InputFile
    words: tuple[int, ...]

    def at_least(self, limit: int) -> int:
        """How many of the measured prompts hold `limit` tokens or more."""
        return sum(words >= limit for words in self.words)


class Limit(Record):
    """A bound a prompt's tokens must stay under, the key that sets it and the fix that raises it."""

    tokens: int
    key: str
    why: str
    fix: str


@per_scope
def prompts_fit_their_limits(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """The prompts of the split a train stage reads leave room under each limit."""
    cur = scope.curriculum
    if cur is None or cur.mode != "rl":
        return
    for prompts in measured(ctx, cur.train_split):
        for limit in _limits(scope, ctx, max(prompts.words)):
            yield from over_limit(ctx, prompts, limit, f"split {cur.train_split}")


def over_limit(ctx: Context, prompts: Prompts, limit: Limit, split: str) -> Iterator[Problem]:
    """An error when every measured prompt reaches `limit`, a warning when most do."""
    over = prompts.at_least(limit.tokens)
    if over * 2 <= len(prompts.words):
        return
    every = over == len(prompts.words)
    yield Problem(
        ctx.latest(limit.key, f"env.{prompts.spec.key}"),
        f"{'all' if every else f'{over} of'} {counted(len(prompts.words), 'prompt')} measured in "
        f"{prompts.spec.path} ({split}) hold at least {limit.tokens} tokens (their words alone): {limit.why}",
        fix=limit.fix,
        severity="error" if every else "warning",
    )


def measured(ctx: Context, split: str) -> Iterator[Prompts]:
    """The prompts measured in each input file whose rows become `split`."""
    for spec in ctx.run.env.input_files():
        if spec.prompt is None or split not in spec.splits:
            continue
        words = _prompt_words(spec)
        if words:
            yield Prompts(spec, words)


def _limits(scope: Scope, ctx: Context, longest: int) -> Iterator[Limit]:
    """Each limit set for this stage's prompts, with the fix that makes room for the longest measured."""
    cur, extra = scope.curriculum, ctx.run.model.architecture.extra_args
    assert cur is not None
    for _, flag, values in argv_flags(extra):
        if flag == PROMPT_FLAG and len(values) == 1 and values[0].isdigit():
            yield Limit(
                int(values[0]),
                EXTRA,
                f"slime drops every prompt longer than {PROMPT_FLAG} {values[0]} from the dataset",
                fix=f"set {list_override(EXTRA, without_flag(extra, PROMPT_FLAG))} (slime keeps them all)",
            )
    context = ctx.run.model.context_length
    if cur.max_context_len is not None:
        key = scope.cur("max_context_len")
        room = longest + cur.rollout_max_response_len
        yield Limit(
            cur.max_context_len,
            key,
            f"max_context_len {cur.max_context_len} leaves no tokens to generate after such a prompt, "
            "so each episode ends before its first call",
            fix=f"set {key}={room}" if context is None or room <= context else f"set {key}=null",
        )
    if context is not None:
        yield _context_limit(scope, ctx, context, longest)


def _context_limit(scope: Scope, ctx: Context, context: int, longest: int) -> Limit:
    """SGLang refuses a request whose prompt and max_new_tokens do not fit in the context, unless it is
    started to cut max_new_tokens to the room left."""
    cur = scope.curriculum
    assert cur is not None
    response = scope.cur("rollout_max_response_len")
    name = ctx.run.model.name
    if "--sglang-allow-auto-truncate" in ctx.run.model.architecture.extra_args:
        return Limit(
            context,
            "model.context_length",
            f"{name}'s context holds {context} tokens, and SGLang refuses a longer prompt",
            fix="use a model with a longer context or a dataset of shorter prompts (no setting makes a "
            "model attend over more tokens than its context)",
        )
    room = context - longest - 1
    return Limit(
        context - cur.rollout_max_response_len,
        ctx.latest(response, "model.context_length"),
        f"with rollout_max_response_len {cur.rollout_max_response_len} they do not fit in {name}'s "
        f"context of {context} tokens, and SGLang refuses such a request",
        fix=f"set {response}={room}"
        if room >= 1
        else "use a model with a longer context or a dataset of shorter prompts (no setting makes a "
        "model attend over more tokens than its context)",
    )


def _prompt_words(spec: InputFile) -> tuple[int, ...]:
    """Words of the prompt of each measured row (the file's first rows, read once per validate)."""
    path = Path(spec.path).expanduser()
    if not path.is_file():
        return ()
    try:
        head = scan(path).head
    except (OSError, ValueError):
        return ()  # dataset_files_usable reports it
    words = []
    for _, raw in head:
        try:
            row = outside_json.loads(raw, "a row") if isinstance(raw, bytes) else raw
        except json.JSONDecodeError:
            return ()  # dataset_files_usable reports it
        if isinstance(row, dict) and spec.prompt in row:
            words.append(_words(row[spec.prompt]))
    return tuple(words)


def _words(prompt: Any) -> int:
    """Whitespace-separated words of a prompt's text, or of every message's text."""
    if isinstance(prompt, str):
        return len(prompt.split())
    if isinstance(prompt, list):
        return sum(_words(m.get("content")) if isinstance(m, dict) else _words(m) for m in prompt)
    return 0


RULES = (prompts_fit_their_limits,)
