"""Run a Python entry point with credentials among its arguments, while no command line holds them.

    python -m t3rl_core.secret_launch FLAG REFERENCE [FLAG REFERENCE ...] -- -m MODULE ARGS...
    python -m t3rl_core.secret_launch FLAG REFERENCE [FLAG REFERENCE ...] -- SCRIPT.py ARGS...

e.g. `… secret_launch --api-key env:SGLANG_API_KEY -- -m sglang.launch_server --port 30000`. Each
REFERENCE (env:NAME or file:PATH) is revealed here, and the entry point runs in this same process with
`sys.argv` = [MODULE or SCRIPT, *ARGS, FLAG=value, …]: its argument parser gets the values, while the
process's command line (/proc/<pid>/cmdline, what `ps` shows to every user) holds the references only.
SGLang's server takes its --api-key from its arguments only, and logs its arguments: the output of
this process and of everything it starts goes through `t3rl_core.redact.mask_output` first.

`argv_for(argv)` turns a planned command whose flags take references (`--api-key env:NAME`,
`--admin-api-key=file:PATH`) into this launcher's command.
"""

from __future__ import annotations

import os
import runpy
import sys
from collections.abc import Sequence

from t3rl_core.redact import mask_output
from t3rl_core.secret import Secret, SecretResolutionError, is_reference

MODULE = "t3rl_core.secret_launch"


def split(argv: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """`argv` without its flags whose value is a reference, and those (flag, reference) pairs."""
    plain: list[str] = []
    pairs: list[tuple[str, str]] = []
    tokens = list(argv)
    i = 0
    while i < len(tokens):
        flag, eq, value = tokens[i].partition("=")
        if flag.startswith("--") and eq and is_reference(value):
            pairs.append((flag, value))
        elif flag.startswith("--") and not eq and i + 1 < len(tokens) and is_reference(tokens[i + 1]):
            pairs.append((flag, tokens[i + 1]))
            i += 1
        else:
            plain.append(tokens[i])
        i += 1
    return plain, pairs


def argv_for(argv: Sequence[str]) -> list[str]:
    """`argv` (`python -m MODULE …` or `python SCRIPT.py …`) as is when no flag takes a reference;
    else through this launcher, each such flag and its reference moved in front of `--`."""
    plain, pairs = split(argv)
    if not pairs:
        return plain
    if len(plain) < 2 or not (plain[1] == "-m" or plain[1].endswith(".py")):
        raise ValueError(
            f"{' '.join(plain[:3])}: a flag's value can be given by reference only to a Python entry "
            "point (python -m MODULE … or python SCRIPT.py …)"
        )
    return [plain[0], "-m", MODULE, *(token for pair in pairs for token in pair), "--", *plain[1:]]


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    usage = f"usage: python -m {MODULE} FLAG REFERENCE [...] -- (-m MODULE | SCRIPT.py) ARGS..."
    from t3rl_core import module_help  # lazy: plan imports this module for argv_for, not to run it

    if module_help.asked(args, usage, __doc__):
        return 0
    if "--" not in args:
        print(usage, file=sys.stderr)
        return 2
    split = args.index("--")
    pairs, entry = args[:split], args[split + 1 :]
    if len(pairs) % 2 or not entry or (entry[0] == "-m" and len(entry) < 2):
        print(usage, file=sys.stderr)
        return 2
    values: list[str] = []
    for flag, reference in zip(pairs[::2], pairs[1::2], strict=True):
        try:
            value = Secret(reference).reveal().get_secret_value() if is_reference(reference) else ""
        except SecretResolutionError as error:
            print(f"{MODULE}: {flag}: {error}", file=sys.stderr)
            return 2
        if not flag.startswith("--") or not value:
            # An empty key would be no key at all: SGLang would answer anyone.
            print(f"{MODULE}: {flag} {reference}: needs a --flag and a non-empty value", file=sys.stderr)
            return 2
        values.append(f"{flag}={value}")
    mask_output(value.partition("=")[2] for value in values)
    if entry[0] == "-m":
        sys.argv = [entry[1], *entry[2:], *values]
        runpy.run_module(entry[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = [entry[0], *entry[1:], *values]
        sys.path[0] = os.path.dirname(os.path.abspath(entry[0]))  # as `python SCRIPT.py` sets it
        runpy.run_path(entry[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
