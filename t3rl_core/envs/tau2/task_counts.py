"""How many tasks each tau2 domain ships per split, read from the installed package's split files
without importing tau2 (its import loads litellm and the domains: seconds, where pre-flight needs a
count)."""

from __future__ import annotations

from functools import cache
from importlib.util import find_spec
from pathlib import Path

from t3rl_core import outside_json


@cache
def shipped_task_counts(domain: str) -> dict[str, int] | None:
    """tau2 split → number of task ids the domain lists for it; None when tau2 or the file is absent."""
    spec = find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "data" / "tau2" / "domains" / domain / "split_tasks.json"
        try:
            splits = outside_json.loads(path.read_text(), str(path))
        except (OSError, ValueError):
            continue
        if isinstance(splits, dict):
            return {str(k): len(v) for k, v in splits.items() if isinstance(v, list)}
    return None
