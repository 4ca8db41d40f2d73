"""The fewest tau2 orchestrator steps each shipped task's gold plan takes in t3rl's tau2 episode
(t3rl_core.envs.tau2.env), read from the installed package's task files without importing tau2.

An episode counts a step for every message it records: the customer's opening (1), each agent tool call
and its result (2: the agent calls one tool a turn), the agent's `done` (1). The limit is checked after
every step and overrides a stop decided in that step, so `done` must come before the step count reaches
`max_steps`: a plan of `a` agent actions needs max_steps >= 2a + 3. Actions the customer performs
(telecom's `requestor: user`) need the agent to ask (`respond`, 1), the customer's call and its results
(2) and its answer (1): 4 more, however few messages the customer bundles them into.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from functools import cache
from importlib.util import find_spec
from pathlib import Path

from t3rl_core import outside_json

# The gold actions of a task are the first key of its `evaluation_criteria` in every shipped file; each is
# decoded alone, raw: the installed package's own data, as trusted as its code t3rl imports (telecom's file
# is 14 MB: outside_json's depth scan of the whole costs 0.3 s of a validate, eight times this scan).
_ACTIONS = re.compile(r'"id":\s*("(?:[^"\\]|\\.)*")|"evaluation_criteria":\s*\{\s*"actions":\s*')


def steps_for(actions: Sequence[object]) -> int:
    """The fewest steps a plan of these gold actions takes (module docstring)."""
    mine = [a for a in actions if isinstance(a, dict) and a.get("requestor", "assistant") == "assistant"]
    theirs = len(actions) > len(mine)
    return 2 * len(mine) + 3 + (4 if theirs else 0)


@cache
def _domain_dir(domain: str) -> Path | None:
    spec = find_spec("tau2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        path = Path(root) / "data" / "tau2" / "domains" / domain
        if (path / "tasks.json").is_file():
            return path
    return None


@cache
def _steps_by_task(domain: str) -> dict[str, int] | None:
    """Task id → the steps its gold plan takes; None when tau2 or the file is absent or unreadable."""
    where = _domain_dir(domain)
    if where is None:
        return None
    try:
        text = (where / "tasks.json").read_text()
    except (OSError, UnicodeDecodeError):
        return None
    decoder, found, task = json.JSONDecoder(), {}, None
    for match in _ACTIONS.finditer(text):
        if match.group(1) is not None:
            task = outside_json.loads(match.group(1), "a task id of tau2's tasks.json")
            continue
        try:
            actions, _ = decoder.raw_decode(text, match.end())
        except ValueError:
            return None
        if isinstance(task, str):
            found[task] = steps_for(actions if isinstance(actions, list) else [])
    return found


def steps_needed(domain: str, splits: Sequence[str], limit: int | None) -> list[int] | None:
    """The steps each task of the domain's splits needs (the first `limit` of each split, as prepared);
    None when the package's files cannot be read."""
    steps = _steps_by_task(domain)
    where = _domain_dir(domain)
    if steps is None or where is None:
        return None
    try:
        listed = outside_json.loads((where / "split_tasks.json").read_text(), str(where))
    except (OSError, ValueError):
        return None
    ids = {
        str(task)
        for split in splits
        if isinstance(listed, dict) and isinstance(listed.get(split), list)
        for task in listed[split][:limit]
    }
    return [steps[task] for task in ids if task in steps]
