"""A token budget per call of a served model (a field declaring `TokensOf`: tau2's LLM user's
`max_tokens`) against that model's context.

The model is a name the server is asked for, which t3rl knows when it is the policy's hub id (its
`model.context_length`) or the hub id of a model option (`conf/model/*.yaml`, read by
`launch.checks.model_options`: exactly, else by its model line, taking the line's longest context so
that only what no option of the line holds is refused). SGLang (and any OpenAI-compatible server) refuses
a request whose prompt and budget exceed the context, so a budget of the whole context or more fails
every call, after the stages before it ran: refused, half the context the fix (room for the prompt).
A name t3rl does not know (another server's model) is not judged."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from launch.checks.context import Context
from launch.checks.model_options import model_options, options_of
from launch.config.declared_fields import walked
from launch.config.errors import Problem
from t3rl_core.fields import TokensOf


def _budgets(node: Any, prefix: str) -> Iterator[tuple[str, int, str]]:
    """(key, budget, the served name) of every set `TokensOf` field under `node`."""
    if isinstance(node, dict):
        for name, value in node.items():
            yield from _budgets(value, f"{prefix}{name}.")
    if not isinstance(node, BaseModel):
        return
    for name, marker in walked(type(node), TokensOf):
        value = getattr(node, name)
        if marker is not None and isinstance(value, int) and isinstance(getattr(node, marker.served), str):
            yield f"{prefix}{name}", value, getattr(node, marker.served)
        elif isinstance(value, BaseModel | dict):
            yield from _budgets(value, f"{prefix}{name}.")


def _context(ctx: Context, served: str) -> tuple[int, str] | None:
    """The longest context the served model may have, and who declares it; None when unknown."""
    model = ctx.run.model
    if served == model.hf_id and model.context_length:
        return model.context_length, f"model.context_length of {served}"
    declared = [o for o in options_of(served, model_options(ctx.config_dirs)) if o.context_length]
    if not declared:
        return None
    widest = max(declared, key=lambda o: o.context_length or 0)
    return widest.context_length or 0, f"model={widest.name}'s context ({widest.hf_id})"


def budgets_fit_their_models(ctx: Context) -> Iterator[Problem]:
    """A per-call budget that the context of the model it is spent on cannot hold with a prompt."""
    for key, budget, served in _budgets(ctx.run, ""):
        found = _context(ctx, served)
        if found is None or budget < found[0]:
            continue
        context, declared = found
        yield Problem(
            key,
            f"{key} {budget} asks {served} for as many tokens a call as its whole context ({context}: "
            f"{declared}), so the server refuses every request (prompt and budget must fit in it)",
            fix=f"set {key}={context // 2} (half the context, the rest for the prompt)",
        )


RULES = (budgets_fit_their_models,)
