"""`t3rl rollouts show FILE|DIR`: slime's saved rollouts on CPU, one table row per sample.

slime saves rollouts as `torch.save({"rollout_id", "samples": [Sample.to_dict(), …]})`: the files of a
`debug: rollout_only` stage (`rollout_data_<id>.pt`) and of `--dump-details` (`rollout_data/<id>.pt`,
`train_data/<id>.pt`). Each row shows the prompt's head, the response with its tool calls, the reward,
how much of the response is trained (loss-mask coverage) and the TITO check: one loss-mask entry and
one rollout log-prob per response token, and the response inside `tokens`. Files are read with
`torch.load(weights_only=True)` (tensors and plain data only); `--trust` unpickles anything, for files
you made yourself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from t3rl_core.counts import counted

_TOOL_CALL = re.compile(r"<tool_call>.*?</tool_call>|<｜tool▁call▁begin｜>.*?<｜tool▁call▁end｜>", re.DOTALL)


class RolloutFileError(Exception):
    """A file that is not one of slime's saved rollouts."""


@dataclass(frozen=True)
class SampleView:
    """What the table shows of one sample."""

    index: int
    status: str
    reward: str
    prompt: str
    response: str
    tool_calls: int
    coverage: str
    tito: str


def rollout_files(target: Path) -> list[Path]:
    """FILE itself, or every .pt file under DIR in name order."""
    if target.is_file():
        return [target]
    if target.is_dir():
        files = sorted(target.rglob("*.pt"), key=lambda p: (str(p.parent), _number(p), p.name))
        if files:
            return files
        raise RolloutFileError(f"{target} holds no .pt rollout files")
    raise RolloutFileError(f"{target} does not exist")


def _number(path: Path) -> int:
    digits = re.findall(r"\d+", path.stem)
    return int(digits[-1]) if digits else -1


# The most samples one rollout file holds, for --limit and --full's bounds: a file is one rollout
# step (rollout_batch_size × n_samples_per_prompt, thousands), unpickled into one process's memory; a
# million samples of a few thousand tokens each would be tens of GB, so a larger number is a typo.
MOST_SAMPLES = 1_000_000
# The most characters of a prompt a row shows (twice that of the response): no terminal is more than a
# few hundred columns wide, and 10,000 already hold a whole system prompt of tool schemas.
MOST_WIDTH = 10_000
# What a file torch.save wrote starts with: a zip archive (torch >= 1.6) or a pickle's protocol opcode.
_TORCH_SAVE_HEADS = (b"PK\x03\x04", b"\x80")


def load_samples(path: Path, *, trust: bool = False) -> tuple[Any, list[Mapping[str, Any]]]:
    """(rollout id, sample dicts) of one saved rollout file."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4)
    except OSError as err:
        raise RolloutFileError(f"{path} cannot be read: {err.strerror}") from None
    if not head.startswith(_TORCH_SAVE_HEADS):
        # Unpickling text anyway (--trust) fails with whatever the first bytes look like to pickle.
        raise RolloutFileError(f"{path} is not a file torch.save wrote (neither a zip archive nor a pickle)")
    import torch  # lazy: torch, only to read a rollout file (not for --help)

    try:
        data = torch.load(path, map_location="cpu", weights_only=not trust)
    except Exception as err:  # torch raises UnpicklingError, RuntimeError, EOFError, … by cause
        lines = [line.strip() for line in str(err).splitlines() if line.strip()] or [type(err).__name__]
        reason = next((line for line in lines if "Unsupported global" in line), lines[0])
        hint = "" if trust else " (if you made it yourself and it holds other objects, pass --trust)"
        raise RolloutFileError(f"{path} cannot be read as saved rollouts: {reason}{hint}") from None
    if not isinstance(data, Mapping) or not isinstance(data.get("samples"), list):
        raise RolloutFileError(f"{path} is not a slime rollout file (no 'samples' list)")
    samples = []
    for index, sample in enumerate(data["samples"]):
        fields = sample if isinstance(sample, Mapping) else getattr(sample, "__dict__", None)
        if not isinstance(fields, Mapping):
            raise RolloutFileError(
                f"{path} is not a slime rollout file (sample {index} is a {type(sample).__name__})"
            )
        samples.append(fields)
    return data.get("rollout_id"), samples


def views(path: Path, samples: list[Mapping[str, Any]], width: int) -> list[SampleView]:
    """The rows of one file; a sample whose fields are not of slime's types (a token list that is a
    number, a reward that is text) makes the file one t3rl cannot read, named with the sample."""
    found = []
    for index, sample in enumerate(samples):
        wrong = [f for f in _SEQUENCES if not _is_sequence(sample.get(f))]
        try:
            if wrong:
                raise TypeError(f"{wrong[0]} is a {type(sample[wrong[0]]).__name__}, not a list")
            found.append(view(index, sample, width))
        except (TypeError, ValueError, AttributeError) as err:
            raise RolloutFileError(f"{path} is not a slime rollout file (sample {index}: {err})") from None
    return found


# Sample fields slime saves as token-aligned lists (or tensors).
_SEQUENCES = ("tokens", "loss_mask", "rollout_log_probs")


def _is_sequence(value: Any) -> bool:
    return value is None or hasattr(value, "tolist") or isinstance(value, list | tuple)


def _as_list(value: Any) -> list[Any] | None:
    if value is None:
        return None
    return value.tolist() if hasattr(value, "tolist") else list(value)


def tito_problems(sample: Mapping[str, Any]) -> list[str]:
    """Where the sample's token accounting is inconsistent (empty = aligned)."""
    n = int(sample.get("response_length") or 0)
    tokens = _as_list(sample.get("tokens")) or []
    problems = []
    mask = _as_list(sample.get("loss_mask"))
    if mask is not None and len(mask) != n:
        problems.append(f"loss_mask {len(mask)} ≠ response_length {n}")
    log_probs = _as_list(sample.get("rollout_log_probs"))
    if log_probs is not None and len(log_probs) != n:
        problems.append(f"rollout_log_probs {len(log_probs)} ≠ response_length {n}")
    if n > len(tokens):
        problems.append(f"response_length {n} > tokens {len(tokens)}")
    return problems


def _prompt_head(prompt: Any, width: int) -> str:
    if isinstance(prompt, list):
        users = [m.get("content", "") for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
        prompt = users[-1] if users else (prompt[-1].get("content", "") if prompt else "")
    return _clip(str(prompt), width)


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _reward(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in value.items())
    return f"{float(value):.3f}"


def view(index: int, sample: Mapping[str, Any], width: int) -> SampleView:
    response = str(sample.get("response") or "")
    mask = _as_list(sample.get("loss_mask"))
    n = int(sample.get("response_length") or 0)
    coverage = "-" if not mask else f"{sum(1 for m in mask if m) / len(mask):.0%} of {len(mask)}"
    problems = tito_problems(sample)
    calls = len(_TOOL_CALL.findall(response))
    shown = _TOOL_CALL.sub(lambda m: "⟦" + _clip(m.group(0), 60) + "⟧", response)
    status = sample.get("status")
    return SampleView(
        index=index,
        status=str(getattr(status, "value", status) or "-"),
        reward=_reward(sample.get("reward")),
        prompt=_prompt_head(sample.get("prompt", ""), width),
        response=_clip(shown, width * 2) if response else f"({counted(n, 'token')}, no text)",
        tool_calls=calls,
        coverage=coverage,
        tito="ok" if not problems else "✗ " + "; ".join(problems),
    )


def show(
    target: Path, console: Console, *, limit: int | None, width: int, full: int | None, trust: bool
) -> int:
    """Print a table per file; exit code 1 when a sample breaks the TITO check, 2 on unreadable input."""
    try:
        files = rollout_files(target)
    except RolloutFileError as err:
        console.print(f"[red]error:[/] {escape(str(err))}", soft_wrap=True)
        return 2
    broken: list[str] = []
    hidden: list[str] = []
    missing: list[str] = []  # files without sample --full
    for path in files:
        try:
            rollout_id, samples = load_samples(path, trust=trust)
            rows = views(path, samples, width)
        except RolloutFileError as err:
            console.print(f"[red]error:[/] {escape(str(err))}", soft_wrap=True)
            return 2
        for v in rows:  # named, so one the table does not show (--limit) can be found
            if v.tito != "ok":
                broken.append(f"{path.name} sample {v.index}")
                if limit is not None and v.index >= limit:
                    hidden.append(f"{path.name} sample {v.index}")
        rewards = [float(s["reward"]) for s in samples if isinstance(s.get("reward"), int | float)]
        mean = f", mean reward {sum(rewards) / len(rewards):.3f}" if rewards else ""
        table = Table(
            title=escape(f"{path} — rollout {rollout_id}: {counted(len(samples), 'sample')}{mean}"),
            title_justify="left",
        )
        for column in (
            "#",
            "status",
            "reward",
            "prompt",
            "response (⟦tool calls⟧)",
            "calls",
            "trained",
            "TITO",
        ):
            table.add_column(column, overflow="fold")
        for v in rows[:limit]:
            tito = "[green]ok[/]" if v.tito == "ok" else f"[red]{v.tito}[/]"
            # The model's text is shown as it is: `[think]` or `[/INST]` in it is no rich markup.
            cells = (v.status, v.reward, v.prompt, v.response, str(v.tool_calls), v.coverage)
            table.add_row(str(v.index), *map(escape, cells), tito)
        console.print(table)
        if limit is not None and len(rows) > limit:
            console.print(f"… {len(rows) - limit} more samples (--limit)")
        if full is not None and 0 <= full < len(samples):
            console.rule(f"sample {full}: full response")
            console.print(str(samples[full].get("response", "")), markup=False, highlight=False)
        elif full is not None:
            missing.append(f"{path.name} has {len(samples)}")
    if broken:
        console.print(
            f"[red]{len(broken)} sample(s) break the TITO check[/]: {', '.join(broken)}", soft_wrap=True
        )
    if hidden:
        console.print(
            f"[red]not shown (--limit):[/] {', '.join(hidden)}; `--full N` prints sample N", soft_wrap=True
        )
    if missing and len(missing) == len(files):
        console.print(
            f"[red]error:[/] --full {full}: no such sample ({escape('; '.join(missing))}; they count from 0)",
            soft_wrap=True,
        )
        return 2
    return 1 if broken else 0


def register(app: typer.Typer) -> None:
    rollouts_app = typer.Typer(
        help="Inspect slime's saved rollouts on CPU.\n\n"
        "Examples:\n\n"
        "  t3rl rollouts show runs/x/stages/stage1/rollouts --limit 5",
        no_args_is_help=True,
    )
    app.add_typer(rollouts_app, name="rollouts")

    @rollouts_app.command("show")
    def show_command(
        target: Annotated[
            Path,
            typer.Argument(
                metavar="FILE|DIR",
                help="A saved rollout .pt file, or a directory of them.",
                show_default=False,
            ),
        ],
        limit: Annotated[
            int | None,
            typer.Option(
                "--limit", min=1, max=MOST_SAMPLES, metavar="N", help="Rows per file (default: all)."
            ),
        ] = None,
        width: Annotated[
            int,
            typer.Option(
                "--width", min=10, max=MOST_WIDTH, metavar="CHARS", help="Characters of prompt shown."
            ),
        ] = 60,
        full: Annotated[
            int | None,
            typer.Option(
                "--full",
                min=0,
                max=MOST_SAMPLES - 1,
                metavar="INDEX",
                help="Also print this sample's whole response.",
            ),
        ] = None,
        trust: Annotated[
            bool, typer.Option("--trust", help="Unpickle any object (only for files you made yourself).")
        ] = False,
    ) -> None:
        """A table per file: prompt head, response with tool calls, reward, loss-mask coverage, TITO check.

        Reads `debug: rollout_only` outputs (rollout_data_<id>.pt) and `--dump-details` files.

        Examples:

          t3rl rollouts show runs/x/stages/stage1/rollouts --limit 5

          t3rl rollouts show rollout_data_0.pt --full 3
        """
        raise typer.Exit(show(target, Console(), limit=limit, width=width, full=full, trust=trust))
