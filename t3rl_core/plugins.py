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

A chat template plugin (group `t3rl.chat_templates`) is an object with `template` and `family`
instead (`t3rl_core.chat.custom`).

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

import sys
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from t3rl_core import registries
from t3rl_core.chat.custom import TEMPLATE_GROUP
from t3rl_core.chat.shipped import shipped_templates
from t3rl_core.config import ChatConfig
from t3rl_core.records import Record
from t3rl_core.registry import Registry, entry_points, is_import_path

# Registries a config section can name a plugin of, by the attribute of `t3rl_core.registries`.
PLUGIN_REGISTRIES = ("ENVS", "REWARDS", "ENGINES", "SANDBOXES", "USER_SIMULATORS")


class UsedPlugin(Record):
    """A plugin a resolved config uses: where (dotted key), which, and its import path."""

    key: str
    kind: str
    name: str
    # `pkg.module:Object`: what a process must import to use it.
    target: str

    @property
    def module(self) -> str:
        return self.target.partition(":")[0]


def registry_for(config: BaseModel) -> Registry | None:
    """The registry whose base config class `config` extends, or None."""
    for attr in PLUGIN_REGISTRIES:
        registry: Registry = getattr(registries, attr)
        base = _imported_class(registry.base) if registry.base else None
        if base is not None and isinstance(config, base):
            return registry
    return None


def _imported_class(path: str) -> type | None:
    """The class at `module:Class` if its module is imported, else None: no instance of a class exists
    before its module is imported, and importing a base only to find nothing extends it (tau2's user
    simulators pull in asyncio) is start-up time of every `t3rl plan`."""
    module, _, name = path.partition(":")
    loaded = sys.modules.get(module)
    return getattr(loaded, name, None) if loaded is not None else None


def used_plugins(config: BaseModel, prefix: str = "") -> list[UsedPlugin]:
    """Every plugin a validated config names, at any depth: registry names that are not built in, and
    chat templates given as plugins."""
    return list(_walk(config, prefix))


def _walk(node: Any, key: str) -> Iterator[UsedPlugin]:
    if isinstance(node, BaseModel):
        registry = registry_for(node)
        name = getattr(node, "name", None)
        if registry is not None and isinstance(name, str) and not registry.built_in(name):
            yield UsedPlugin(key, registry.kind, name, registry.entry(name).target or name)
        if isinstance(node, ChatConfig) and node.chat_template is not None:
            target = template_target(node.chat_template)
            if target is not None:
                yield UsedPlugin(f"{key}.chat_template", "chat template", node.chat_template, target)
        for field in type(node).model_fields:
            yield from _walk(getattr(node, field), f"{key}.{field}" if key else field)
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, f"{key}.{k}")
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from _walk(v, f"{key}.{i}")


def template_target(name: str) -> str | None:
    """The import path of a chat-template plugin `name` names (itself, or its entry point's), or None."""
    if name in shipped_templates():
        return None
    if is_import_path(name):
        return name
    point = entry_points(TEMPLATE_GROUP).get(name)
    return point.value if point is not None else None
