"""The settings of a run that nothing reads, from what each section declares about when it is read:

- a field whose type declares `ReadWhen` (`t3rl_core.fields`), while its sibling holds another value
  (Adam's betas under `optimizer.name: sgd`, a full recompute's layer count under `selective`, the
  in-loop eval's settings without `eval_interval`, the tracker's settings under `tracking.kind: none`);
- `eval.server`, `stages.<stage>.eval.server`: the SGLang server an eval stage starts on its model,
  which it does only with the sglang engine and no `engine.url` (a running server is used instead).

A train stage's hardware is judged as the stage runs it (the root's with the stage's overrides): a root
hardware key is unread when no stage reads it. Two uses: a setting typed on the command line that
nothing reads is warned about (a value that does nothing looks as if it did something; only overrides
are judged: a shipped file's settings are defaults, not the user's word), and sweep points that differ
only in such settings are one run (`launch/run/sweep_checks.py`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from functools import partial
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context, Scope
from launch.checks.declared import walked
from launch.checks.eval_configs import eval_config_of, eval_configs, eval_key
from launch.checks.rules.batch import env_splits
from launch.config.errors import Problem
from launch.config.fixes import typed_text, value_at
from launch.config.overlay import overlay
from launch.config.schema import EvalStage, RunConfig, TrainStage
from t3rl_core.fields import ReadWhen
from t3rl_core.records import Record

SERVER = "server"
# The overrides a launcher added to a point's command line itself (a sweep's tracking names), which the user
# never typed: a setting typed that nothing reads is warned about, these are not (launch/run/sweep.py sets
# it around each point's resolve).
ADDED_BY_LAUNCHER: ContextVar[frozenset[str]] = ContextVar("added_by_launcher", default=frozenset())
# A value no config holds, planted at a root eval key to see whether a stage's merge keeps it.
_MARK = object()


class Unread(Record):
    """Why a key is read by nothing, completing "<key> is set, but …", and what would have it read."""

    why: str
    instead: str


def unread_keys(run: RunConfig, scopes: Sequence[Scope]) -> dict[str, Unread]:
    """Key (a leaf, or a section) → why nothing reads it."""
    found = dict(_declared(run, "", str, frozenset({"hardware", "eval"})))
    by_scope: dict[str, list[Unread | None]] = {}
    for scope in scopes:
        read = dict(_declared(scope.hardware, "", scope.hw))
        for field in _read_when_fields(scope.hardware, ""):
            by_scope.setdefault(scope.hw(field), []).append(read.get(scope.hw(field)))
    found |= {key: first for key, seen in by_scope.items() if all(seen) and (first := seen[0]) is not None}
    for stage, config, overrides in eval_configs(run):
        found |= dict(_declared(config, "", partial(eval_key, stage, overrides)))
    found |= _unread_servers(run)
    found |= _untrained(run)
    return found


def _untrained(run: RunConfig) -> dict[str, Unread]:
    """What a rollout_only stage does not read: it generates rollouts and trains nothing."""
    return {
        f"stages.{name}.curriculum.{section}": Unread(
            f"stages.{name}.debug is rollout_only: it generates rollouts and trains nothing",
            f"set stages.{name}.debug=null to have it read",
        )
        for name, stage in run.stages.items()
        if isinstance(stage, TrainStage) and stage.debug == "rollout_only"
        for section in (
            "algorithm",
            "optimizer",
            "global_batch_size",
            "num_steps_per_rollout",
            "save_interval",
        )
    }


def unread_prefix(key: str, unread: dict[str, Unread]) -> str | None:
    """The key itself, or the section above it, that nothing reads; None when something reads it."""
    parts = key.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in unread:
            return ".".join(parts[:end])
    return None


def _declared(
    node: Any, prefix: str, key_of: Callable[[str], str], skip: frozenset[str] = frozenset()
) -> Iterator[tuple[str, Unread]]:
    """(key, why) of every field under `node` declaring `ReadWhen` whose sibling leaves it unread;
    `key_of`: a field's path below the walk's start → the key one would set."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _declared(value, f"{prefix}{name}.", key_of)
    if not isinstance(node, BaseModel):
        return
    for name, marker in walked(type(node), ReadWhen):  # the fields declaring it, or holding a model
        if name in skip:
            continue
        if marker is not None:
            sibling = getattr(node, marker.sibling)
            if not marker.reads(sibling):
                yield key_of(f"{prefix}{name}"), _why(key_of(f"{prefix}{marker.sibling}"), sibling, marker)
                continue  # a section nothing reads: nothing below it is read either
        value = getattr(node, name)
        if isinstance(value, BaseModel | dict):
            yield from _declared(value, f"{prefix}{name}.", key_of)


def _read_when_fields(node: BaseModel, prefix: str) -> Iterator[str]:
    """Every field under `node` that declares `ReadWhen`, read or not."""
    for name, marker in walked(type(node), ReadWhen):
        if marker is not None:
            yield f"{prefix}{name}"
        elif isinstance(getattr(node, name), BaseModel):
            yield from _read_when_fields(getattr(node, name), f"{prefix}{name}.")


def _why(sibling_key: str, sibling: Any, marker: ReadWhen) -> Unread:
    wanted = marker.values[0] if marker.values else None
    instead = f"set {sibling_key}={typed_text(wanted)}" if wanted is not None else f"set {sibling_key}"
    return Unread(f"{sibling_key} is {typed_text(sibling)}: {marker.why}", f"{instead} to have it read")


def _unread_servers(run: RunConfig) -> dict[str, Unread]:
    """The server sections no eval stage starts a server from (`eval.server`, `stages.<s>.eval.server`)."""
    read, sections = set(), {"eval.server"}
    for stage, config, overrides in eval_configs(run):
        section = f"stages.{stage}.eval.server" if stage and SERVER in overrides else "eval.server"
        sections.add(section)
        if config.engine.name == "sglang" and getattr(config.engine, "url", None) is None:
            read.add(section)
    why = Unread(
        "no eval stage starts an SGLang server from {section} (each uses a running server's engine.url, "
        "or another engine): it does nothing",
        "set the stage's engine.url=null to have it start the server",
    )
    return {s: why._replace(why=why.why.format(section=s)) for s in sections - read}


def replaced_in_every_eval_stage(run: RunConfig, key: str) -> list[str]:
    """The eval stages, when every one of them replaces the root eval key `key` by its own overrides
    (`eval.split` under each stage's `eval: {split: …}`, merged as `launch.config.overlay` merges them);
    [] when one reads the root's value, or the run has no eval stage (`t3rl eval` of the config reads the
    root section)."""
    stages = [(n, s) for n, s in run.stages.items() if isinstance(s, EvalStage)]
    path = key.removeprefix("eval.")
    marked = run.eval.model_dump(mode="json")
    parent, _, leaf = path.rpartition(".")
    section = value_at(marked, parent) if parent else marked
    if not stages or not isinstance(section, dict) or leaf not in section:
        return []
    section[leaf] = _MARK  # the root's value, followed through each stage's merge
    kept = [n for n, s in stages if value_at(overlay(marked, s.eval), path) is _MARK]
    return [] if kept else [n for n, _ in stages]


def _root_eval_replaced(ctx: Context, key: str, source: str) -> Iterator[Problem]:
    """An `eval.<key>` typed on the command line that every eval stage replaces with its own value: the run
    evaluates with theirs (a warning: `t3rl eval` of the config without `--stage` reads the root's)."""
    stages = replaced_in_every_eval_stage(ctx.run, key)
    typed = value_at(ctx.data, key)
    own = {
        n: value_at(eval_config_of(ctx.run, ctx.run.stages[n]).model_dump(mode="json"), key[5:])
        for n in stages
    }
    known = env_splits(ctx) if key == "eval.split" else None
    if not stages or all(v == typed for v in own.values()) or (known is not None and typed not in known):
        return  # an unprepared split: stages.eval_settings_valid says so, with the nearest prepared one
    theirs = ", ".join(f"stages.{n}.{key}={typed_text(v)}" for n, v in own.items())
    moved = " ".join(f"stages.{n}.{key}={typed_text(typed)}" for n in stages)
    yield Problem(
        key,
        f"{key} is set to {typed_text(typed)}, but every eval stage sets its own ({theirs}): the run's "
        "evals never read it (only `t3rl eval` of this config without --stage would)",
        fix=f"set {moved} instead of `{source.removeprefix('override `').removesuffix('`')}`",
        severity="warning",
    )


def typed_settings_are_read(ctx: Context) -> Iterator[Problem]:
    """A setting typed on the command line is one some stage reads."""
    unread = unread_keys(ctx.run, ctx.scopes)
    added = {f"override `{text}`" for text in ADDED_BY_LAUNCHER.get()}  # a sweep's own names: not typed
    for key, origin in ctx.provenance.items():
        if not origin.source.startswith("override") or origin.deleted or origin.source in added:
            continue
        if key.startswith("eval."):
            yield from _root_eval_replaced(ctx, key, origin.source)
        if key.startswith("hardware.") and any(key.split(".")[1] in s.overridden for s in ctx.scopes):
            from launch.checks.rules.stage_hardware import root_hardware_replaced  # lazy: only then

            yield from root_hardware_replaced(ctx, key, origin.source)
        found = unread_prefix(key, unread)
        if found is None or (found == key and found.endswith(".server")):
            continue
        yield Problem(
            key,
            f"{key} is set, but {unread[found].why}",
            fix=f"drop it: ~{key} (or {unread[found].instead})",
            severity="warning",
        )


RULES = (typed_settings_are_read,)
