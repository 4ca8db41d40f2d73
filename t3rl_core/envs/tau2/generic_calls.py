"""tau2's generic tools run in tool-call workers, killed past a budget.

tau2's `calculate` (airline, retail) checks that its expression holds only `0123456789+-*/(). ` and
`eval`s it: `9**9**9` passes, and is one big-integer power in C that holds the GIL, and with it the
event loop and every episode on it, for minutes. tau2 itself declares which tools touch no database
(`ToolType.GENERIC`: `calculate`, `transfer_to_human_agents`); every call of such a tool, the agent's
or the user's, runs in a worker process (t3rl_core/envs/bounded_calls.py) killed past
`Tau2EnvConfig.GENERIC_CALL_BUDGET_S`, whatever the tool and whatever its arguments. In the worker the
tool runs on its toolkit class built without a database (tau2's `ToolKitBase(db=None)`), through tau2's
own `Environment.get_response`, so its content and error flag are tau2's; a call past its budget is a
tool error the model reads (and tau2 counts towards `max_errors`). The arguments travel pickled, so a
tuple or a NaN reaches the tool as it left the parser.
"""

from __future__ import annotations

import base64
import importlib
import json
import pickle
from functools import cache
from typing import TYPE_CHECKING, Any

from t3rl_core import outside_json
from t3rl_core.envs.bounded_calls import CallKilled, CallWorkers
from t3rl_core.envs.tau2.domain import quiet_tau2
from t3rl_core.parsers.nesting import MAX_NESTING

if TYPE_CHECKING:
    # lazy: tau2, only when a tau2 episode runs
    from tau2.data_model.message import ToolCall, ToolMessage
    from tau2.environment.environment import Environment
    from tau2.environment.toolkit import ToolKitBase

BUDGET_TEXT = "Error: {name} ran past its {budget:g} s budget and was stopped"


def generic_workers() -> CallWorkers:
    """The workers of a factory's episodes, each started with tau2 imported (`prepare_worker`)."""
    return CallWorkers([f"{__name__}:prepare_worker"])


def prepare_worker() -> None:
    """In a worker, before it counts as started: tau2 imported quietly, outside any call's budget."""
    quiet_tau2()
    import tau2.environment.environment  # noqa: F401  # lazy: tau2, in the worker process only


async def response(
    environment: Environment, request: ToolCall, workers: CallWorkers | None, budget_s: float | None
) -> ToolMessage:
    """tau2's `environment.get_response(request)`; a generic tool's call in a worker, stopped past
    `budget_s` (None: in this process)."""
    from tau2.data_model.message import ToolMessage  # lazy: tau2, only when a tau2 episode runs

    toolkit = environment.user_tools if request.requestor == "user" else environment.tools
    if workers is None or budget_s is None or not _generic(toolkit, request.name):
        return bounded_response(environment, request)
    assert toolkit is not None
    call = base64.b64encode(pickle.dumps((request.name, request.requestor, request.arguments))).decode()
    try:
        text = await workers.run(f"{__name__}:generic_response", [_path(type(toolkit)), call], budget_s)
    except CallKilled as killed:  # the call's error, as one past its budget
        content = f"Error: {request.name} was stopped: {killed}"
        return ToolMessage(
            id=request.id, content=content, requestor=request.requestor, role="tool", error=True
        )
    if text is None:
        content, error = BUDGET_TEXT.format(name=request.name, budget=budget_s), True
    else:
        content, error = outside_json.loads(text, f"{request.name}'s result")
        if not error:
            environment.sync_tools()  # as get_response does after a call that succeeded
    return ToolMessage(id=request.id, content=content, requestor=request.requestor, role="tool", error=error)


def generic_response(toolkit: str, call: str) -> str:
    """In a worker: tau2's response to a pickled (name, requestor, arguments) call on the toolkit class
    `toolkit` (`module:QualName`), as JSON [content, error]."""
    from tau2.data_model.message import ToolCall  # lazy: tau2, imported by prepare_worker

    name, requestor, arguments = pickle.loads(base64.b64decode(call))
    request = ToolCall(name=name, arguments=arguments, requestor=requestor)
    message = bounded_response(_environment(toolkit, requestor), request)
    return json.dumps([message.content, message.error])


def bounded_response(environment: Environment, request: ToolCall) -> ToolMessage:
    """`environment.get_response(request)`; a tool's result nested past Python's recursion limit is a
    tool error naming t3rl's limit, which the model reads. tau2 writes a result as JSON after the call
    (outside its own error handling): the RecursionError failed the episode as the world's, the model's
    call never answered."""
    from tau2.data_model.message import ToolMessage  # lazy: tau2, only when a tau2 episode runs

    try:
        return environment.get_response(request)
    except RecursionError:
        problem = (
            f"Error: the result of {request.name} nests too deep to be written as text; t3rl passes "
            f"results nested at most {MAX_NESTING} levels (parsers.nesting.MAX_NESTING)"
        )
        who = request.requestor
        return ToolMessage(id=request.id, content=problem, requestor=who, role="tool", error=True)


def _generic(toolkit: ToolKitBase | None, name: str) -> bool:
    from tau2.environment.toolkit import ToolType  # lazy: tau2, only when a tau2 episode runs

    return toolkit is not None and toolkit.has_tool(name) and toolkit.tool_type(name) == ToolType.GENERIC


def _path(cls: type[Any]) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


@cache
def _environment(toolkit: str, requestor: str) -> Environment:
    """An environment holding only `toolkit`, built without a database, on the requestor's side."""
    from tau2.environment.environment import Environment  # lazy: tau2, imported by prepare_worker

    module, _, qualname = toolkit.partition(":")
    cls: Any = importlib.import_module(module)
    for part in qualname.split("."):
        cls = getattr(cls, part)
    tools = cls(None)
    if requestor == "user":
        return Environment(domain_name="generic", policy="", user_tools=tools)
    return Environment(domain_name="generic", policy="", tools=tools)
