"""What t3rl accepts from a verifiers environment, checked where it crosses into t3rl: the object its
loader returns, the datasets it offers, and every score its rubric's functions return.

verifiers scores a reward function that raises or returns what `float()` refuses (None, a text) as 0.0
with only a log line, and passes NaN and infinity on: a broken rubric would train on zeros or poison a
GRPO group. Each function is wrapped once at load (its name and signature kept, so verifiers still
calls it with the arguments it asks for); what it does wrong is collected per episode and fails that
episode, naming the function."""

from __future__ import annotations

import contextvars
import functools
import numbers
from collections.abc import Callable, Iterator
from typing import Any

from verifiers import Environment
from verifiers.rubrics.rubric import Rubric
from verifiers.rubrics.rubric_group import RubricGroup
from verifiers.utils.async_utils import maybe_await
from verifiers.utils.env_utils import import_env_module

from t3rl_core.envs.unavailable import WorldUnavailable
from t3rl_core.envs.verifiers.loader_args import module_name
from t3rl_core.finite import NotFinite, finite_real, outside_real, shown

# The rubric problems of the episode (or re-scored rollout) running in this context: a list created
# before verifiers' rollout task starts, so the task's copy of the context shares it.
_PROBLEMS: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("rubric_problems", default=None)


class EnvLoadError(WorldUnavailable):
    """The environment's module does not import, its loader raises, or it returns no Environment."""


class RubricProblem(ValueError):
    """A reward function of the environment's rubric raised or returned no finite number."""


def loaded(env_id: str, args: dict[str, Any]) -> Environment:
    """The environment verifiers' `load_environment(env_id, **args)` builds, its rubric's functions
    checked. Called here rather than through verifiers' wrapper, which sets attributes on whatever the
    loader returns before anyone could say it is no Environment, and turns every error into one text."""
    try:
        loader = import_env_module(module_name(env_id)).load_environment
    except ImportError as exc:
        name = module_name(env_id)
        absent = getattr(exc, "name", None)  # the module not found: the environment's, or one it imports
        if isinstance(exc, ModuleNotFoundError) and absent and absent.split(".")[0] != name.split(".")[0]:
            fix = (
                f"the environment is installed but imports '{absent}', which is not: install its "
                f"dependencies (`pip install` the package providing '{absent.split('.')[0]}', or "
                f"`prime env install {env_id}` again)"
            )
        else:
            fix = f"install it (`prime env install {env_id}` or `pip install` its package)"
        raise EnvLoadError(f"environment '{env_id}': cannot import module '{name}' ({exc}): {fix}") from exc
    except AttributeError as exc:
        raise EnvLoadError(f"environment '{env_id}': its module defines no load_environment()") from exc
    try:
        vf_env = loader(**args)
    except Exception as exc:
        raise EnvLoadError(
            f"environment '{env_id}': load_environment(**{args!r}) raised {type(exc).__name__}: {exc} "
            "(fix env.args, or give the environment what it needs: an API key, a file, a package)"
        ) from exc
    if not isinstance(vf_env, Environment):
        raise EnvLoadError(
            f"environment '{env_id}': load_environment() returned {type(vf_env).__name__}, not a "
            "verifiers Environment (SingleTurnEnv, MultiTurnEnv, ToolEnv, …): env.id names the wrong "
            "module, or it is written for another verifiers API"
        )
    vf_env.env_id = vf_env.env_id or env_id  # what verifiers' loader records on the environment
    vf_env.env_args = vf_env.env_args or dict(args)
    for rubric in _rubrics(vf_env.rubric):
        rubric.funcs = [_checked(func) for func in rubric.funcs]
    return vf_env


def dataset_problem(env_id: str, split: str, dataset: Any) -> str | None:
    """Why a dataset the environment offers cannot be a t3rl split (None = it can)."""
    if len(dataset) == 0:
        return f"environment '{env_id}': its {split} dataset is empty (check env.args or env.data.limit)"
    if "prompt" not in dataset.column_names:
        return (
            f"environment '{env_id}': its {split} dataset has no 'prompt' column after verifiers' "
            f"formatting (columns {dataset.column_names}): give rows a 'question' or a 'prompt'"
        )
    return None


def prompt_problem(env_id: str, split: str, index: Any, prompt: Any) -> str | None:
    """Why a row's prompt is no list of chat messages (None = it is one)."""
    if isinstance(prompt, list) and all(isinstance(m, dict) and "role" in m for m in prompt):
        return None
    return (
        f"environment '{env_id}': row {index} of its {split} dataset has a prompt of "
        f"{type(prompt).__name__} {str(prompt)[:60]!r}, not a list of chat messages ({{'role': …, "
        "'content': …}}): give rows a 'question' (verifiers builds the messages) or a list of messages"
    )


def collecting() -> list[str]:
    """Start collecting this context's rubric problems (call before the rollout task is created)."""
    problems: list[str] = []
    _PROBLEMS.set(problems)
    return problems


def raise_problems(env_id: str, problems: list[str]) -> None:
    if problems:
        raise RubricProblem(
            f"environment '{env_id}': its rubric cannot score this rollout: {'; '.join(problems)} "
            "(a reward function returns a finite number; fix the function)"
        )


def scores(state: Any, where: str) -> dict[str, Any]:
    """The rubric's scores of a finished rollout's state, `reward` and `metrics`, as finite floats; raises
    RubricProblem naming `where` (the environment) and the state's key otherwise. Its functions' values
    are checked as they return, but the state's reward is their weighted sum (finite scores and weights
    overflow: 2 x 1e308 is inf), or what a custom rubric or environment wrote there: float() took the text
    '  3 ' as 3.0, 'nan' and '1e999' on as non-finite scores, a bool as 1.0, and None (a rollout its rubric
    never scored) as 0.0, a wrong answer the environment never gave."""
    try:
        reward = outside_real(state.get("reward"), "state['reward'] (the rubric's weighted score)")
        metrics = state.get("metrics") or {}
        if not isinstance(metrics, dict):
            raise NotFinite(f"state['metrics'] must map names to scores, got {type(metrics).__name__}")
        named = {
            str(name): outside_real(value, f"state['metrics'][{name!r}]", bools=True)
            for name, value in metrics.items()
        }
    except NotFinite as exc:
        raise RubricProblem(f"{where}: {exc} (fix the environment's rubric)") from None
    return {"reward": reward, "metrics": named}


def _rubrics(rubric: Rubric) -> Iterator[Rubric]:
    if isinstance(rubric, RubricGroup):
        for inner in rubric.rubrics:
            yield from _rubrics(inner)
    else:
        yield rubric


def _checked(func: Callable[..., Any]) -> Callable[..., Any]:
    if getattr(func, "__t3rl_checked__", False):
        return func  # an environment loaded again shares its rubric object

    @functools.wraps(func)  # verifiers reads the signature (through __wrapped__) and the name
    async def checked(*args: Any, **kwargs: Any) -> Any:
        name = getattr(func, "__name__", repr(func))
        try:
            value = await maybe_await(func, *args, **kwargs)
        except Exception as exc:
            _report(f"reward function '{name}' raised {type(exc).__name__}: {exc}")
            raise
        if not isinstance(value, numbers.Real):  # bools and numpy scalars are Real: float() takes them
            _report(f"reward function '{name}' returned {type(value).__name__} {value!r}, not a number")
        elif not finite_real(value):
            _report(f"reward function '{name}' returned {shown(value)}")
        return value

    checked.__t3rl_checked__ = True  # type: ignore[attr-defined]
    return checked


def _report(problem: str) -> None:
    problems = _PROBLEMS.get()
    if problems is not None:
        problems.append(problem)
