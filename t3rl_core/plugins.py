"""Plugins: a user's env, reward, engine, sandbox or user simulator, without forking t3rl.

A plugin is an object (usually a class) with a `Config` attribute, a pydantic model extending the
kind's base config (`EnvConfig`, `RewardConfig`, `EngineConfig`, `SandboxConfig`,
`UserSimulatorConfig`), so it is validated exactly like a built-in: unknown keys rejected, did-you-mean,
provenance. The object itself is the factory, called as the built-ins' are:

| kind | entry-point group | called as | returns |
|---|---|---|---|
| env | `t3rl.envs` | `Plugin(config)` | an `EnvFactory`: `(task, mode) -> Env`, `aclose()` |
| env data | `t3rl.envs` | `Plugin.prepare(config, out_dir)` | `{split: jsonl path}` |
| reward | `t3rl.rewards` | `Plugin(config)` | a `Reward`: `(RewardInput) -> RewardResult` |
| engine | `t3rl.engines` | `Plugin(config, chat=chat)` | an `Engine` |
| sandbox | `t3rl.sandboxes` | `Plugin(config)` | a `Sandbox` |
| user simulator | `t3rl.user_simulators` | `Plugin(config)` | a `UserSimulator` |

The contract between an env and a reward is declared on the config classes, as for built-ins: an env
config's `OUTCOME_FIELDS` (the keys every `Env.outcome()` returns) and a reward config's
`NEEDS_OUTCOME` (the keys it reads), both `ClassVar[frozenset[str]]`; the launcher's cross-group
checks compare them. Instead of the object, a plugin may be a `t3rl_core.registry.Entry` naming its
config and factory by path, so that validating a config imports only the config module.

A config names a plugin by import path (`reward: {name: my_pkg.rewards:Exact}`) or by the name of an
entry point its distribution declares:
`[project.entry-points."t3rl.rewards"] exact = "my_pkg.rewards:Exact"`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from t3rl_core.registry import Entry, Registry

# Registries a config section can name a plugin of, by the attribute of `t3rl_core.registries`.
PLUGIN_REGISTRIES = ("ENVS", "REWARDS", "ENGINES", "SANDBOXES", "USER_SIMULATORS")


@dataclass(frozen=True)
class UsedPlugin:
    """A plugin a resolved config uses: where (dotted key), which, and its registry entry."""

    key: str
    kind: str
    name: str
    entry: Entry


def registry_for(config: BaseModel) -> Registry | None:
    """The registry whose base config class `config` extends, or None."""
    from t3rl_core import registries
    from t3rl_core.registry import load_object

    for attr in PLUGIN_REGISTRIES:
        registry: Registry = getattr(registries, attr)
        if registry.base and isinstance(config, load_object(registry.base)):
            return registry
    return None


def used_plugins(config: BaseModel, prefix: str = "") -> list[UsedPlugin]:
    """Every plugin (non-built-in registry name) a validated config names, at any depth."""
    return list(_walk(config, prefix))


def _walk(node: Any, key: str) -> Iterator[UsedPlugin]:
    if isinstance(node, BaseModel):
        registry = registry_for(node)
        name = getattr(node, "name", None)
        if registry is not None and isinstance(name, str) and not registry.built_in(name):
            yield UsedPlugin(key, registry.kind, name, registry.entry(name))
        for field in type(node).model_fields:
            yield from _walk(getattr(node, field), f"{key}.{field}" if key else field)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{key}.{k}")
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from _walk(v, f"{key}.{i}")
