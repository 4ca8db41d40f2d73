"""The command-line options that set a config field, each with the field it sets: one table.

An option that sets a field takes what the field takes: its bounds are read here from the field's own
constraints (pydantic's `ge=`/`le=`, or the `Ge`/`Le` of its type), never typed again beside the option,
and the errors `t3rl eval` gives for a value the config refuses name the option from this table
(launch.cli.eval_setup.with_options). tests/launch/test_option_fields.py checks, for every entry, that
the option and the field accept the same values at each edge, and that every option `with_options` is
given is here.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Union, get_args, get_origin

from annotated_types import Ge, Le
from pydantic import BaseModel

from t3rl_core.eval.config import EvalConfig
from t3rl_core.fields import Usual

# `t3rl eval`'s options and the field of `eval` (a dotted path in EvalConfig) each sets. --k also sets
# pass_k and temperature from its value; samples is the field whose domain it takes.
EVAL_FIELDS: dict[str, str] = {
    "--engine": "engine.name",
    "--url": "engine.url",
    "--split": "split",
    "--k": "samples",
    "--limit-per-category": "limit_per_category",
    "--tp": "server.tp",
}

# Fields an option sets besides its own, for errors that name the option: --k's pass_k and temperature,
# and the engine section --engine replaces whole.
ALSO_SET_BY = {"pass_k": "--k", "temperature": "--k", "engine": "--engine"}


def option_of(where: str) -> str | None:
    """The option that sets the eval field at `where` (a dotted path, or one inside it); None: none."""
    for option, field in EVAL_FIELDS.items():
        if where == field or where.startswith(f"{field}."):
            return option
    return ALSO_SET_BY.get(where.partition(".")[0])


def option_key(option: str) -> str:
    """The keyword the command's function takes `option` by (`--limit-per-category`: limit_per_category)."""
    return option.removeprefix("--").replace("-", "_")


def bounds(option: str) -> dict[str, Any]:
    """`min=` and `max=` for `option`'s typer.Option: the bounds of the eval field it sets."""
    path = EVAL_FIELDS[option]
    low = high = None
    for constraint in constraints(EvalConfig, path):
        if isinstance(constraint, Ge):
            low = constraint.ge
        elif isinstance(constraint, Le):
            high = constraint.le
    if low is None or high is None:
        # An option declares both bounds (tests/support/cli_domain_hunt.py); its field must have them.
        raise TypeError(f"{option} sets eval.{path}, which declares no ge= and le= to take them from")
    return {"min": low, "max": high}


def usual(option: str) -> Usual | None:
    """The usual ceiling of the eval field `option` sets (launch/checks/rules/usual.py), if it has one."""
    return next((c for c in constraints(EvalConfig, EVAL_FIELDS[option]) if isinstance(c, Usual)), None)


def constraints(model: type[BaseModel], path: str) -> list[Any]:
    """The constraints of the field at `path` (dotted, through nested models) of `model`: its Field's
    and those of its type (`NodeGpus | None` holds them in its Annotated arm)."""
    head, _, rest = path.partition(".")
    info = model.model_fields[head]
    if rest:
        return constraints(_model_of(info.annotation), rest)
    found = list(info.metadata)
    for arm in _arms(info.annotation):
        if get_origin(arm) is Annotated:
            found += list(arm.__metadata__)
    return found


def _arms(annotation: Any) -> tuple[Any, ...]:
    """The members of a union (`X | None`), or the annotation itself."""
    if get_origin(annotation) in (Union, types.UnionType):
        return get_args(annotation)
    return (annotation,)


def _model_of(annotation: Any) -> type[BaseModel]:
    """The one model class among a field's annotation (`ServerConfig`, `ServerConfig | None`)."""
    (model,) = (a for a in _arms(annotation) if isinstance(a, type) and issubclass(a, BaseModel))
    return model
