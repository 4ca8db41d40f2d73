"""`python -m t3rl_core.data.check DIR`: is a prepared data dir intact?

Exit 0 when every split its `manifest.json` lists is there with the sha256 the manifest records;
otherwise one line per problem on stderr and exit 1. The prepare_data stage runs it before reusing a
shared prepared copy, so a damaged copy is prepared again instead of being linked into more runs.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from t3rl_core import module_help, outside_json
from t3rl_core.data import MANIFEST, describe_file

USAGE = "usage: python -m t3rl_core.data.check DIR"


def problems(out_dir: Path) -> list[str]:
    """What is wrong with the prepared data in `out_dir` (empty when it is intact)."""
    manifest = out_dir / MANIFEST
    try:
        data = outside_json.read_file(manifest, "utf-8")
    except (OSError, ValueError) as err:
        return [f"{manifest}: not a readable data manifest ({err})"]
    splits = data.get("splits") if isinstance(data, dict) else None
    if not isinstance(splits, dict) or not splits:
        return [f"{manifest}: lists no splits"]
    found = []
    for name, info in splits.items():
        path = out_dir / str((info or {}).get("file", f"{name}.jsonl"))
        if not path.is_file():
            found.append(f"{path}: missing")
        elif describe_file(path)["sha256"] != info.get("sha256"):
            found.append(f"{path}: its sha256 differs from the one {manifest.name} records")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if module_help.asked(args, USAGE, __doc__):
        return 0
    if len(args) != 1:
        print(USAGE, file=sys.stderr)
        return 2
    found = problems(Path(args[0]))
    for line in found:
        print(line, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
