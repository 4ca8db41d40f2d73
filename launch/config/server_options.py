"""The flags an SGLang server t3rl starts may be given (an eval stage's server, a managed service, slime's
`--sglang-*` engines), checked against the options the pinned SGLang parses
(`launch.config.sglang_server_option_table`, generated from SGLang itself) and against what SGLang's
start-up checks refuse: a misspelt or ambiguous flag, a value of the wrong type or outside its choices,
a number outside its domain (`_DOMAINS`), and the relations between flags (data-parallel replicas and
attention DP against the GPUs and TP, expert parallelism within TP, chunked prefill in whole pages, a
context longer than the model's). Each is a config error before the server is started hours in.

Like SGLang's own parser (argparse with abbreviations), a flag may be an unambiguous prefix of one
option (`--dp 2` is `--dp-size 2`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import list_override
from launch.config.sglang_server_option_table import OPTIONS, SGLANG_VERSION
from t3rl_core.records import Record


class Option(Record):
    """One SGLang server option: its number of value tokens, its type, its choices."""

    nargs: int | str  # 0 = a switch, 1 = one value, or argparse's "+", "*", "?"
    type: str | None  # str, int, float, json.loads or human_readable_int (None for a switch)
    choices: tuple[str, ...] | None


SERVER_OPTIONS: dict[str, Option] = {flag: Option(*row) for flag, row in OPTIONS.items()}

# _HUMAN_INT is a string, compiled by `re` (and cached) when first used, not on import: a cold `t3rl
# validate +experiment=stage2_bfcl` never uses it.
# SGLang's human_readable_int: a whole number, or one with an SI (k, M, G, T; decimals allowed) or IEC
# (Ki, Mi, Gi, Ti) suffix.
_HUMAN_INT = r"(\d+)|(\d+(?:\.\d+)?)([kMGT])|(\d+)(Ki|Mi|Gi|Ti)"
_SUFFIX = {
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def human_int(value: str) -> int:
    """A human_readable_int's value (ValueError when it is none)."""
    match = re.fullmatch(_HUMAN_INT, value)
    if match is None:
        raise ValueError(f"invalid human-readable integer: {value!r} (e.g. 32768, 32k, 32Ki)")
    whole, si, si_suffix, iec, iec_suffix = match.groups()
    if whole is not None:
        return int(whole)
    return int(float(si) * _SUFFIX[si_suffix]) if si is not None else int(iec) * _SUFFIX[iec_suffix]


# The type functions of SGLang's options, as its argparse applies them (json.JSONDecodeError is a
# ValueError).
_TYPES: dict[str, Callable[[str], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "json.loads": json.loads,
    "human_readable_int": human_int,
}


class Domain(Record):
    """The values SGLang accepts (or that mean something) for a numeric option."""

    test: Callable[[float], bool]
    says: str


_AT_LEAST_ONE = Domain(lambda v: v >= 1, "a whole number >= 1")
_NON_NEGATIVE = Domain(lambda v: v >= 0, "a number >= 0")
# Sizes, counts and lengths: 0 or less is no size (SGLang divides by them, or allocates nothing).
_DOMAINS: dict[str, Domain] = {
    **dict.fromkeys(
        [
            "--tp-size",
            "--dp-size",
            "--attn-dp-size",
            "--ep-size",
            "--pp-size",
            "--moe-dp-size",
            "--page-size",
            "--max-running-requests",
            "--max-total-tokens",
            "--max-prefill-tokens",
            "--context-length",
            "--cuda-graph-max-bs-decode",
            "--cuda-graph-max-bs-prefill",
            "--stream-interval",
            "--tokenizer-worker-num",
            "--detokenizer-worker-num",
            "--speculative-num-steps",
            "--speculative-eagle-topk",
            "--speculative-num-draft-tokens",
        ],
        _AT_LEAST_ONE,
    ),
    "--mem-fraction-static": Domain(lambda v: 0 < v <= 1, "a fraction in (0, 1]"),
    "--schedule-conservativeness": _NON_NEGATIVE,
    "--watchdog-timeout": _NON_NEGATIVE,
}


# Flag pairs SGLang's check_server_args refuses together, and flags (or `flag=value`) it accepts only
# next to another (sglang/srt/arg_groups/validation_hook.py).
_EXCLUDES = (("--disable-cuda-graph-padding", "--enable-torch-compile"),)
_REQUIRES = (
    ("--retraction-policy=priority", "--enable-priority-scheduling"),
    ("--watermark-config", "--enable-watermark"),
)


class _Flag(Record):
    at: int  # index of the flag token in the argv
    given: str  # as written
    name: str  # the option it resolves to (SERVER_OPTIONS key), or "" when none
    values: list[str]


def resolve(flag: str) -> str | list[str]:
    """The option `flag` names (itself, or the one option it is a prefix of), else every candidate."""
    if flag in SERVER_OPTIONS:
        return flag
    longer = [name for name in SERVER_OPTIONS if name.startswith(flag)]
    return longer[0] if len(longer) == 1 else longer


def server_argv_problems(
    extra: Sequence[str], key: str, *, tp: int, gpus: int, context_length: int | None, prefix: str = "--"
) -> list[Problem]:
    """What SGLang would refuse in a server's pass-through flags (`key`), served with `tp` ranks on
    `gpus` GPUs for a model of `context_length` tokens: each a Problem whose fix drops or corrects a
    flag. With `prefix` "--sglang-", only slime's SGLang flags of a slime argv are read (the rest stays
    in the fixes as it is)."""
    problems = []
    flags = []
    for index, given, values in argv_flags(extra):
        if not given.startswith(prefix):
            continue
        name = resolve("--" + given.removeprefix(prefix))
        rest = without(extra, index, len(values))
        if isinstance(name, list):
            spelt = [prefix + c.removeprefix("--") for c in name]
            problems.append(_unknown(extra, key, index, spelt, rest, prefix))
            continue
        flags.append(_Flag(index, given, name, values))
        choices = [str(c) for c in SERVER_OPTIONS[name].choices or ()]
        for offset, value in enumerate(values):
            why = _why(name, SERVER_OPTIONS[name], value)
            if why is None:
                continue
            guess = did_you_mean(value, choices) if choices and "=" not in extra[index] else None
            at = index + 1 + offset  # the value's token: corrected to the nearest choice, else dropped
            fixed = [*extra[:at], guess, *extra[at + 1 :]] if guess else rest
            problems.append(Problem(key, f"{given} {value}: {why}", fix=f"set {list_override(key, fixed)}"))
    if problems:
        return problems
    return _relations(extra, key, flags, tp=tp, gpus=gpus, context_length=context_length)


def _unknown(
    extra: Sequence[str], key: str, index: int, candidates: list[str], rest: list[str], prefix: str
) -> Problem:
    """An option SGLang does not have (fix: the nearest one), or a prefix of several (fix: the first)."""
    given = extra[index].partition("=")[0]
    if candidates:
        return Problem(
            key,
            f"{given} is ambiguous for SGLang {SGLANG_VERSION}: it could be {', '.join(candidates[:6])}",
            fix=f"set {list_override(key, [*extra[:index], candidates[0], *extra[index + 1 :]])}"
            if "=" not in extra[index]
            else f"set {list_override(key, rest)}",
        )
    guess = did_you_mean(given, [prefix + name.removeprefix("--") for name in SERVER_OPTIONS])
    if guess is not None and "=" not in extra[index]:
        fix = f"set {list_override(key, [*extra[:index], guess, *extra[index + 1 :]])}"
    else:
        fix = f"set {list_override(key, rest)}"
    hint = f" (did you mean {guess}?)" if guess else ""
    return Problem(key, f"{given} is not an option of SGLang {SGLANG_VERSION}'s server{hint}", fix=fix)


def _why(name: str, option: Option, value: str) -> str | None:
    """Why SGLang's parser or its domain refuses one value of option `name`, or None."""
    convert = _TYPES[option.type or "str"]
    try:
        parsed = convert(value)
    except ValueError as err:
        return str(err) if option.type == "human_readable_int" else f"invalid {option.type} value: {value!r}"
    if option.choices is not None and value not in option.choices:
        return f"invalid choice {value!r} (choose from {', '.join(option.choices)})"
    domain = _DOMAINS.get(name)
    if domain is not None and not domain.test(parsed):
        return f"{value} is not {domain.says}"
    return None


def _relations(
    extra: Sequence[str], key: str, flags: list[_Flag], *, tp: int, gpus: int, context_length: int | None
) -> list[Problem]:
    """SGLang's start-up checks between flags, and its GPUs against the server's."""
    given = {f.name: f for f in flags}

    def number(name: str) -> int | None:
        flag = given.get(name)
        if flag is None or not flag.values:
            return None
        return (
            human_int(flag.values[0])
            if SERVER_OPTIONS[name].type == "human_readable_int"
            else int(flag.values[0])
        )

    def drop(name: str, message: str) -> Problem:
        flag = given[name]
        rest = without(extra, flag.at, len(flag.values))
        return Problem(
            key, f"{' '.join([flag.given, *flag.values])}: {message}", fix=f"set {list_override(key, rest)}"
        )

    problems = []
    dp, attn_dp = number("--dp-size"), number("--attn-dp-size")
    attention_dp = "--enable-dp-attention" in given  # SGLang's old spelling of --attn-dp-size = dp-size
    if attention_dp and dp is not None:
        attn_dp, dp = dp, None
    if dp and dp > 1 and attn_dp and attn_dp > 1:
        problems.append(
            drop("--dp-size", "data-parallel replicas and attention data parallelism exclude each other")
        )
    elif attn_dp and tp % attn_dp:
        name = "--dp-size" if attention_dp else "--attn-dp-size"
        problems.append(
            drop(name, f"attention data parallelism {attn_dp} does not divide the server's tp {tp}")
        )
    elif dp and dp * tp > gpus:
        problems.append(
            drop(
                "--dp-size",
                f"{dp} data-parallel replicas of tp {tp} need {dp * tp} GPUs; the server has {gpus}",
            )
        )
    ep = number("--ep-size")
    if ep and tp % ep:
        problems.append(
            drop("--ep-size", f"expert parallelism {ep} runs inside the server's tp {tp} and must divide it")
        )
    chunk, page = number("--chunked-prefill-size"), number("--page-size")
    if chunk and page and chunk > 0 and chunk % page:
        problems.append(
            drop(
                "--chunked-prefill-size", f"chunked prefill {chunk} is not a whole number of pages of {page}"
            )
        )
    length = number("--context-length")
    if length and context_length and length > context_length:
        problems.append(
            drop(
                "--context-length",
                f"longer than the model's context of {context_length} tokens (SGLang refuses it)",
            )
        )
    for flag, other in _EXCLUDES:
        if flag in given and other in given:
            problems.append(drop(flag, f"SGLang refuses it next to {other}"))
    policy = given.get("--schedule-policy")
    if "--enable-priority-scheduling" in given and policy and policy.values[:1] not in (["fcfs"], ["lof"]):
        problems.append(drop("--schedule-policy", "priority scheduling runs with fcfs or lof only"))
    for condition, needed in _REQUIRES:
        name, _, value = condition.partition("=")
        if name in given and (not value or given[name].values[:1] == [value]) and needed not in given:
            problems.append(drop(name, f"SGLang needs {needed} for it"))
    return problems


def without(argv: Sequence[str], index: int, values: int) -> list[str]:
    """The argv without the flag at `index` and its `values` value tokens (none when written flag=value)."""
    end = index + 1 + (0 if "=" in argv[index] else values)
    return [*argv[:index], *argv[end:]]
