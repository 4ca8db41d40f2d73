"""tau2's domains as the agent sees them: policy, tools (plus `respond` and `done`), system prompt.

Everything tau2 is imported lazily through `tau2_registry()`, which also silences tau2's import-time
logging and litellm's network lookup of its model-cost map.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from t3rl_core.envs.tau2.users import UserTask

if TYPE_CHECKING:
    from tau2.data_model.tasks import Task  # lazy: tau2, only when a tau2 domain is loaded
    from tau2.registry import Registry  # lazy: tau2, only when a tau2 domain is loaded

RESPOND = "respond"
DONE = "done"

RESPOND_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": RESPOND,
        "description": "Send a message to the customer. The customer sees nothing else you write.",
        "parameters": {
            "type": "object",
            "properties": {"content": {"type": "string", "description": "The message to the customer."}},
            "required": ["content"],
        },
    },
}
DONE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": DONE,
        "description": "End the conversation: the customer's request is handled or the customer has left.",
        "parameters": {"type": "object", "properties": {}},
    },
}

# The arguments each protocol tool declares to the model: any other is refused naming it, as tau2 answers
# a domain tool's unknown argument ("got an unexpected keyword argument").
PROTOCOL_ARGUMENTS: dict[str, frozenset[str]] = {
    tool["function"]["name"]: frozenset(tool["function"]["parameters"]["properties"])
    for tool in (RESPOND_TOOL, DONE_TOOL)
}

SYSTEM_PROMPT = (
    "You are a customer service agent for the {domain} domain. Help the customer, following the policy "
    "below exactly.\n\n"
    "Every turn, call exactly one tool and write nothing else. The customer only sees what you send with "
    "`{respond}`; the other tools act on the {domain} systems and only you see their results. Call "
    "`{done}` once the customer's request is handled or the customer has ended the conversation.\n\n"
    "<policy>\n{policy}\n</policy>"
)


def quiet_tau2() -> None:
    """Before any tau2 import: no network lookup by litellm, no log lines from tau2."""
    # litellm otherwise fetches its model-cost map over the network at import time.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from loguru import logger  # lazy: tau2's logger, only when a tau2 domain is loaded

    logger.disable("tau2")


def tau2_registry() -> Registry:
    """tau2's registry of domains and task sets (imports tau2 and litellm on first call)."""
    quiet_tau2()
    from tau2.registry import registry  # lazy: tau2, only when a tau2 domain is loaded

    return registry


@dataclass(frozen=True)
class DomainSpec:
    """What every episode of a domain shares."""

    name: str
    policy: str
    system_prompt: str
    # The agent's tools as OpenAI schemas: the domain's, then respond and done.
    tools: list[dict[str, Any]]
    # The user's own tools (telecom's device) as OpenAI schemas; empty when the domain has none.
    user_tools: list[dict[str, Any]]
    # Names of the domain tools that change the database (tau2's ToolType.WRITE).
    write_tools: frozenset[str]


@cache
def domain_spec(domain: str) -> DomainSpec:
    environment = tau2_registry().get_env_constructor(domain)(solo_mode=False)
    tools = [tool.openai_schema for tool in environment.get_tools()]
    clash = {t["function"]["name"] for t in tools} & {RESPOND, DONE}
    if clash:
        raise ValueError(f"tau2 domain {domain} has tools named like the protocol's own: {sorted(clash)}")
    try:
        user_tools = [tool.openai_schema for tool in environment.get_user_tools()]
    except ValueError:  # tau2 raises for domains without user tools
        user_tools = []
    from tau2.environment.toolkit import ToolType  # lazy: tau2, only when a tau2 domain is loaded

    names = [tool["function"]["name"] for tool in tools]
    writes = frozenset(name for name in names if environment.tools.tool_type(name) == ToolType.WRITE)
    policy = environment.get_policy()
    prompt = SYSTEM_PROMPT.format(domain=domain, policy=policy, respond=RESPOND, done=DONE)
    return DomainSpec(domain, policy, prompt, [*tools, RESPOND_TOOL, DONE_TOOL], user_tools, writes)


def load_tasks(domain: str, split: str) -> list[Task]:
    """The domain's tasks of one tau2 split, in tau2's order."""
    registry = tau2_registry()
    splits = registry.get_task_splits_loader(domain)()
    if split not in splits:
        raise ValueError(f"tau2 domain {domain} has no split {split!r}; it has: {', '.join(sorted(splits))}")
    return registry.get_tasks_loader(domain)(split)


def user_task(task: Task, spec: DomainSpec) -> UserTask:
    """What the user simulator of an episode of `task` is told."""
    from tau2.user.user_simulator import UserSimulator  # lazy: tau2, only when a tau2 domain is loaded

    instructions = task.user_scenario.instructions
    # tau2 picks its tool-using guidelines when the user has tools at all.
    simulator = UserSimulator(tools=[] if spec.user_tools else None, instructions=task.user_scenario)
    return UserTask(
        system_prompt=simulator.system_prompt,
        instructions=instructions if isinstance(instructions, str) else instructions.model_dump(),
        tools=spec.user_tools,
    )
