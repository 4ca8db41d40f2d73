"""What an engine's answer holds once the episode takes it: the one place a `Generation` is accepted.

`Generation` declares token ids as `list[int]`, log-probs as `list[float]`, a finish reason of three
words and the call's bookkeeping under SGLang's meta_info names (`CALL_META`). t3rl's own engines
answer exactly that; a plugin engine may answer numpy integers and floats (a tokenizer's or a model's
arrays), a tuple or an array of ids, or a bool where an id goes. Taken as they were, numpy ids were
written into the eval's records as strings ("315": orjson refuses them and json's `default=str`
wrote their text), an array failed the episode as t3rl's own bug (its truth value is ambiguous), and a
bool trained on token 1. `plain_generation` converts what stands for the declared type (any integral
number that is no bool as an id, any real number as a log-prob) and refuses the rest, naming it.

The episode (rollout/episode.py, `_Episode._generate`) runs it on every answer of an engine that does
not declare `Engine.answers_plain`; t3rl's own engines declare it (they build their answers of these
types), so the hot path pays no check per token. A plugin's answer that already holds the declared
types passes after a type check of each list in C (`frozenset.issuperset(map(type, ...))`).
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from numbers import Integral, Real
from typing import Any

from t3rl_core.chat.scalar_text import scalar_text
from t3rl_core.engines.base import FinishReason, Generation
from t3rl_core.finite import finite_real, shown

# The largest count kept: slime sums them per sample into int64 tensors and logs; 10**400 is no count.
_MAX_COUNT = 2**63 - 1


def _count(value: Any) -> int | None:
    """A count of tokens or steps: a JSON integer, never negative nor past int64 (True is no count)."""
    return value if type(value) is int and 0 <= value <= _MAX_COUNT else None


def _version(value: Any) -> str | None:
    """A weight version: SGLang's is text (a lone surrogate, which no UTF-8 log holds, made U+FFFD);
    an integer names the same version."""
    if type(value) is str:
        return scalar_text(value)
    return str(value) if type(value) is int else None


# meta_info entries slime's own generate keeps per call (its Sample's prefix_cache_info, weight_versions
# and spec_info), carried into Generation.meta so the hooks fill the sample as slime would, each with
# what it must be. slime sums the counts per sample: a "12" raised a TypeError out of generate (a
# NaN, a negative or a float made its prefix-cache rate a number no cache has). An entry that is not
# what it must be is left out, as if the server had not reported it: bookkeeping, never a token.
CALL_META: dict[str, Callable[[Any], Any]] = {
    "prompt_tokens": _count,
    "cached_tokens": _count,
    "completion_tokens": _count,
    "weight_version": _version,
    "spec_accept_token_num": _count,
    "spec_draft_token_num": _count,
    "spec_verify_ct": _count,
}
CALL_META_KEYS = tuple(CALL_META)

FINISH_REASONS: dict[str, FinishReason] = {"stop": "stop", "length": "length", "abort": "abort"}
_INT = frozenset({int})
_FLOAT = frozenset({float})


class BadGeneration(ValueError):
    """An engine's answer that holds what no Generation may (the message says what)."""


def call_meta(meta: Mapping[Any, Any]) -> dict[str, Any]:
    """The entries of `meta` CALL_META keeps, each what it must be (an integral number of another
    type, a numpy count, read as the int it is); the rest left out."""
    kept: dict[str, Any] = {}
    for key, read in CALL_META.items():
        value = meta.get(key)
        if isinstance(value, Integral) and not isinstance(value, bool) and type(value) is not int:
            value = int(value)
        value = read(value)
        if value is not None:
            kept[key] = value
    return kept


def plain_generation(answer: object) -> Generation:
    """`answer` as a Generation of exactly its declared types; raises BadGeneration naming what is none."""
    if not isinstance(answer, Generation):
        raise BadGeneration(f"{type(answer).__name__}, not a Generation")
    ids, log_probs, meta = answer.token_ids, answer.log_probs, answer.meta
    if (
        type(ids) is list
        and type(log_probs) is list
        and _INT.issuperset(map(type, ids))
        and _FLOAT.issuperset(map(type, log_probs))
        and type(answer.finish_reason) is str
        and answer.finish_reason in FINISH_REASONS
        and (answer.error is None or type(answer.error) is str)
        and type(answer.on_request) is bool
        and type(meta) is dict
        and (not meta or call_meta(meta) == meta)
        and type(answer) is Generation
    ):
        return answer
    ids, log_probs = _token_ids(ids), _log_probs(log_probs)
    problem = length_problem(ids, log_probs)
    if problem is not None:
        raise BadGeneration(problem)
    return Generation(
        ids,
        log_probs,
        _finish_reason(answer.finish_reason),
        error=_error(answer.error),
        meta=call_meta(meta) if isinstance(meta, Mapping) else {},
        on_request=_flag(answer.on_request),
    )


def length_problem(token_ids: list[int], log_probs: list[float]) -> str | None:
    """What breaks one log-prob per token in an engine's answer (None: nothing)."""
    if len(token_ids) == len(log_probs):
        return None
    return f"{len(token_ids)} token ids but {len(log_probs)} log-probs (one per token is needed)"


def _items(values: Any, what: str) -> list[Any]:
    if isinstance(values, str | bytes | Mapping):
        raise BadGeneration(f"{what} are {type(values).__name__}, not a sequence")
    try:
        return list(values)
    except TypeError:
        raise BadGeneration(f"{what} are {type(values).__name__}, not a sequence") from None


def _token_ids(values: Any) -> list[int]:
    items = _items(values, "token ids")
    # An integral number of any type (numpy's) is the id it is; a bool, a float (5.0 too) or a text of
    # digits is none (int() would take 3.7 as token 3 and True as token 1).
    bad = [t for t in items if isinstance(t, bool) or not isinstance(t, Integral)][:5]
    if bad:
        raise BadGeneration(f"token ids that are no integer: {_shown(bad)}")
    return [operator.index(token) for token in items]


def _log_probs(values: Any) -> list[float]:
    items = _items(values, "log-probs")
    bad = [lp for lp in items if isinstance(lp, bool) or not isinstance(lp, Real)][:5]
    if bad:
        raise BadGeneration(f"log-probs that are no real number: {_shown(bad)}")
    try:
        return [float(lp) for lp in items]
    except OverflowError:  # an int past a float's range: no log-prob, and the engine's answer, not t3rl's
        huge = [lp for lp in items if not finite_real(lp)][:5]
        raise BadGeneration(f"log-probs that are no finite number: {_shown(huge)}") from None


def _finish_reason(value: Any) -> FinishReason:
    reason = FINISH_REASONS.get(value) if isinstance(value, str) else None
    if reason is None:
        raise BadGeneration(f"finish_reason {value!r} is none of {', '.join(FINISH_REASONS)}")
    return reason


def _error(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value if value is None else str(value)
    raise BadGeneration(f"error is {type(value).__name__}, not text or None")


def _flag(value: Any) -> bool:
    if type(value) is not bool:
        raise BadGeneration(f"on_request is {type(value).__name__}, not a bool")
    return value


def _shown(values: list[Any]) -> str:
    # finite.shown: the repr of an int of 5,000 digits raises ValueError, of a list nested deep RecursionError
    return ", ".join(f"{shown(value, 40)} ({type(value).__name__})" for value in values)
