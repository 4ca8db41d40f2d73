"""The one tool the model acts with: the environment's action schema, as its server publishes it, in
OpenAI form. Written into every prepared row, and compared with the running server's when episodes start:
rows prepared against another version of the environment would teach actions its server refuses."""

from __future__ import annotations

from typing import Any

from t3rl_core.envs.openenv.config import OpenEnvEnvConfig
from t3rl_core.envs.unavailable import WorldUnavailable


def action_tool(config: OpenEnvEnvConfig, schema: dict[str, Any]) -> dict[str, Any]:
    """The environment's action schema as an OpenAI tool (OpenEnv's own `metadata` field left out);
    refused when env.text_field names no field of it (every text answer would fail the schema)."""
    properties = {k: v for k, v in (schema.get("properties") or {}).items() if k != "metadata"}
    if config.text_field is not None and config.text_field not in properties:
        raise WorldUnavailable(
            f"env.text_field={config.text_field!r} is no field of the environment's action schema (its "
            f"fields: {sorted(properties)}): set env.text_field to the action's text field, or null"
        )
    parameters = {
        "type": "object",
        "properties": properties,
        "required": [r for r in schema.get("required", []) if r in properties],
    }
    for key in ("$defs", "definitions"):
        if key in schema:
            parameters[key] = schema[key]
    description = (
        schema.get("description") or f"Take one action in the environment ({schema.get('title', 'action')})."
    )
    return {
        "type": "function",
        "function": {"name": config.tool_name, "description": description, "parameters": parameters},
    }
