"""The flags an SGLang server t3rl starts may be given in `extra_args` (an eval stage's server, a
managed service), read from the SGLang options t3rl knows (launch.plan.slime_sglang_options, without
slime's `--sglang-` prefix): a misspelt flag, a value of the wrong type, a memory fraction outside
(0, 1], a data-parallel width that needs more GPUs than the server has, or a context longer than the
model's are config errors before the server is started hours in. A flag t3rl does not list is passed
on unchecked (SGLang has hundreds; the list holds those users set)."""

from __future__ import annotations

from collections.abc import Sequence

from launch.config.errors import Problem, did_you_mean
from launch.config.fixes import list_override
from launch.plan.option_types import value_problem
from launch.plan.slime_option_table import Option
from launch.plan.slime_sglang_options import SGLANG_OPTIONS

SERVER_OPTIONS: dict[str, Option] = {
    flag.replace("--sglang-", "--", 1): option
    for flag, option in SGLANG_OPTIONS.items()
    if flag.startswith("--sglang-")
} | {
    "--dp": Option("sglang", 1, "int", None),
    "--dtype": Option("sglang", 1, "str", ("auto", "half", "float16", "bfloat16", "float", "float32")),
    "--trust-remote-code": Option("sglang", 0, None, None),
    "--served-model-name": Option("sglang", 1, "str", None),
}
_DATA_PARALLEL = ("--dp-size", "--dp")


def server_argv_problems(
    extra: Sequence[str], key: str, *, tp: int, gpus: int, context_length: int | None
) -> list[Problem]:
    """What is wrong with a server's pass-through flags, each a Problem on `key` whose fix drops or
    corrects the flag."""
    problems = []
    for index, flag, values in _flags(extra):
        option = SERVER_OPTIONS.get(flag)
        rest = _without(extra, index, len(values))
        if option is None:
            guess = did_you_mean(flag, SERVER_OPTIONS)
            if guess is not None:
                fixed = [*extra[:index], guess, *extra[index + 1 :]] if "=" not in extra[index] else None
                fix = f"set {list_override(key, fixed)}" if fixed else f"did you mean {guess}?"
                problems.append(
                    Problem(key, f"{flag} is not an SGLang server flag (did you mean {guess}?)", fix=fix)
                )
            continue
        for value in values:
            why = _why(flag, option, value, tp=tp, gpus=gpus, context_length=context_length)
            if why is not None:
                problems.append(Problem(key, f"{flag} {value}: {why}", fix=f"set {list_override(key, rest)}"))
    return problems


def _why(
    flag: str, option: Option, value: str, *, tp: int, gpus: int, context_length: int | None
) -> str | None:
    """Why SGLang would refuse (or t3rl cannot place) one flag's value, or None."""
    why = value_problem(option.type, option.choices, value)
    if why is not None:
        return why
    if flag == "--mem-fraction-static" and not 0 < float(value) <= 1:
        return f"{value} is not a fraction in (0, 1]"
    if flag in _DATA_PARALLEL and int(value) * tp > gpus:
        return f"{value} data-parallel replicas of tp {tp} need {int(value) * tp} GPUs; the server has {gpus}"
    if flag == "--context-length" and context_length and int(value) > context_length:
        return f"{value} is longer than the model's context of {context_length} tokens (SGLang refuses it)"
    return None


def _flags(argv: Sequence[str]) -> list[tuple[int, str, list[str]]]:
    found = []
    for index, token in enumerate(argv):
        if not token.startswith("--"):
            continue
        name, eq, inline = token.partition("=")
        values = [inline] if eq else []
        for later in argv[index + 1 :] if not eq else []:
            if later.startswith("--"):
                break
            values.append(later)
        found.append((index, name, values))
    return found


def _without(argv: Sequence[str], index: int, values: int) -> list[str]:
    end = index + 1 + (0 if "=" in argv[index] else values)
    return [*argv[:index], *argv[end:]]
