"""Commands other tools have and t3rl spells differently: `t3rl status`, `t3rl resume`, `t3rl compare`,
`t3rl runs list`. Click answered "No such command 'resume'." with no guess, or a wrong one ("Did you mean
'score'?" for compare); `launch.cli.help_format.PlainGroup` answers with the line that does it.
"""

from __future__ import annotations

# The line that does what each word does in other tools, per group (its command path after `t3rl`).
_RUNS = "`t3rl runs` (every run, each stage's status and each eval's metric)"
_RESUME = "`t3rl run --run-dir RUN_DIR` (`t3rl runs` lists the run dirs)"
_DIFF = "`t3rl runs diff A B` (two runs' configs and eval results side by side)"
_LOGS = "`t3rl runs show RUN_DIR` (its stages; each one's log is RUN_DIR/stages/<stage>/log.txt)"
_REMOVE = "`rm -r RUN_DIR` (t3rl keeps no index of runs: `t3rl runs` lists the dirs it finds)"
_ROOT = {
    **dict.fromkeys(("status", "list", "ps", "history", "results", "report"), _RUNS),
    **dict.fromkeys(("resume", "continue", "restart", "retry"), _RESUME),
    **dict.fromkeys(("compare", "diff"), _DIFF),
    **dict.fromkeys(("log", "logs"), _LOGS),
    **dict.fromkeys(("train", "launch", "start", "submit", "exec", "execute"), "`t3rl run +experiment=NAME`"),
    **dict.fromkeys(("dry-run", "dryrun", "preview"), "`t3rl plan +experiment=NAME` (runs nothing)"),
    **dict.fromkeys(("check", "lint", "verify"), "`t3rl validate +experiment=NAME`"),
    **dict.fromkeys(
        ("config", "explain", "inspect", "describe"), "`t3rl show +experiment=NAME --explain KEY`"
    ),
    "prepare": "`t3rl data bfcl --out DIR`",
    # Click offered 'plan' for clean (difflib), a command of another kind.
    **dict.fromkeys(("rm", "delete", "remove", "clean"), _REMOVE),
    **dict.fromkeys(
        ("init", "new", "create", "scaffold"),
        "`mkdir -p my_conf/experiment`, write my_conf/experiment/NAME.yaml (an experiment of your own is a "
        "YAML file in a config dir: docs/tutorials/first-experiment.md), then `t3rl validate --config-dir "
        "my_conf +experiment=NAME`",
    ),
    **dict.fromkeys(
        ("search", "tune", "optimize", "hpo"),
        "`t3rl run -m +experiment=NAME +hparams_search=SEARCH` (`t3rl ls hparams_search` lists them)",
    ),
    "sweep": "`t3rl run -m +experiment=NAME KEY=a,b` (a run per point)",
}
_OWN_RUNS = "`t3rl runs` (with no command it lists them)"
_IN_GROUP = {
    "": _ROOT,
    "runs": {
        **dict.fromkeys(("list", "ls", "status"), _OWN_RUNS),
        **dict.fromkeys(("compare", "cmp"), _DIFF),
        **dict.fromkeys(("log", "logs", "info", "inspect"), _LOGS),
        "resume": _RESUME,
        **dict.fromkeys(("rm", "delete", "remove", "clean"), _REMOVE),
    },
}


def line_for(group_path: str, word: str) -> str | None:
    """The line that does what `word` means in other tools, typed as a command of the group at
    `group_path` ("t3rl", "t3rl runs"); None when the word means nothing known there."""
    group = group_path.partition(" ")[2]
    return _IN_GROUP.get(group, {}).get(word.lower())
