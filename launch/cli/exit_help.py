"""What each command's exit codes mean, declared once and shown at the end of its `--help`.

Half the commands' help said nothing of them (`t3rl ls`, `eval`, `data bfcl`, `runs show`, `runs diff`,
`rollouts show`) and the others said it in their own words, in a sentence of their docstring, or
not for 130. A script or CI job that calls t3rl needs them; a newcomer reads `--help`, not
docs/reference/cli-behaviour.md. `tests/cli/test_first_hour_hunted.py` checks that every command that
runs something has its entry and shows it, and that no docstring says them a second time."""

from __future__ import annotations

# Every command: stopped by a signal, or its output's reader gone (docs/reference/cli-behaviour.md).
_ALWAYS = {130: "stopped (Ctrl-C or SIGTERM)", 141: "the reader of its output went away (… | head)"}

# `t3rl <path>` → what 0, 1 and 2 mean for it (2: nothing was started or written, for every command).
EXIT_CODES: dict[str, dict[int, str]] = {
    "run": {
        0: "every stage succeeded or was done already",
        1: "a stage failed, pre-flight refused the plan on this machine, or the run dir cannot be used",
        2: "a config or command-line error (nothing written)",
    },
    "plan": {0: "planned", 1: "the plan dir cannot be used", 2: "a config or command-line error"},
    "validate": {0: "valid (warnings may be printed)", 2: "a config error"},
    "show": {0: "printed", 2: "a config error (the config is still printed), or --explain names no key"},
    "ls": {0: "listed", 2: "no such group or option, or a --config-dir that is missing"},
    "eval": {
        0: "the eval completed",
        1: "the engine did not answer or failed too often (summary.json says complete: false and why)",
        2: "a bad option, a config error, or no server for an SGLang engine (nothing written)",
    },
    "data bfcl": {
        0: "the splits written",
        1: "--out cannot be made or written",
        2: "a bad --out or a config error (nothing written)",
    },
    "score": {
        0: "every line scored",
        1: "some lines failed to score (each named on stderr; verdicts.jsonl keeps them)",
        2: "an unknown world or mode, or a file with no line to score (nothing written)",
    },
    "check-template": {
        0: "every check passes",
        1: "a check fails",
        2: "no such model, or a tokenizer that does not load",
    },
    "runs": {
        0: "listed",
        1: "a run's record cannot be read (the others are listed)",
        2: "a --runs-dir that is no directory, or a filter that can match nothing",
    },
    "runs show": {0: "shown", 1: "not a run or sweep dir, or its record cannot be read", 2: "no run to show"},
    "runs diff": {0: "compared", 1: "A or B is not a run dir", 2: "an argument missing"},
    "rollouts show": {
        0: "every sample passes the TITO check",
        1: "a sample breaks it (each named)",
        2: "a file that is not slime's rollouts, or an option out of range",
    },
}


def exit_epilog(command_path: str) -> str | None:
    """The `Exit codes:` paragraph of `t3rl <path>`'s help; None for a group that only holds commands."""
    path = command_path.split(" ", 1)[1] if " " in command_path else ""
    codes = EXIT_CODES.get(path)
    if codes is None:
        return None
    shown = {**codes, **_ALWAYS}
    return "Exit codes: " + "; ".join(f"{code} {meaning}" for code, meaning in sorted(shown.items())) + "."
