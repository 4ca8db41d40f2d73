"""Copy stdin to stdout with one credential masked, line by line as it comes.

    <command> | python -m t3rl_core.redact env:NAME|file:PATH

SGLang logs its server arguments, `api_key` included, when it starts: the log of a server the eval
starts with `eval.server.api_key` passes through this, so no file of the run dir holds the key.
"""

from __future__ import annotations

import sys

from t3rl_core.secret import MASK, Secret, SecretResolutionError


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m t3rl_core.redact env:NAME|file:PATH", file=sys.stderr)
        return 2
    try:
        value = Secret(args[0]).reveal().get_secret_value().encode()
    except SecretResolutionError:
        value = b""  # nothing to mask: the server could not have been given the key either
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(line.replace(value, MASK.encode()) if value else line)
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
