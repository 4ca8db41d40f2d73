"""Chat formats t3rl does not ship: a template plugin, or a Jinja file with its family's tokens.

A template plugin is an object with `template` (the Jinja source) and `family` (a
`t3rl_core.chat.families.Family`), named in `chat.chat_template` by import path (`my_pkg.chat:MINE`) or
by an entry point of the group `t3rl.chat_templates`. A `.jinja` file brings no family: its control
tokens come from `chat.family` (a `ChatFamilyConfig`), else from the tokenizer's vocabulary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from t3rl_core.chat.families import FAMILIES, Family
from t3rl_core.chat.shipped import TEMPLATES_DIR, load_template
from t3rl_core.records import Record
from t3rl_core.registry import entry_point_problem, entry_points, is_import_path, load_object

if TYPE_CHECKING:
    from t3rl_core.config import ChatConfig, ParsersConfig

TEMPLATE_GROUP = "t3rl.chat_templates"


# A Record rather than a frozen dataclass, as Family (imported by a cold plan/validate).
class ChatTemplate(Record):
    """What a template plugin provides (any object with these two attributes will do)."""

    family: Family
    template: str


def template_plugin(name: str) -> ChatTemplate | None:
    """The plugin `name` names (import path or entry point), or None when it names none; ValueError when
    it names one that does not import or lacks `template`/`family`."""
    if is_import_path(name):
        path = name
    else:
        point = entry_points(TEMPLATE_GROUP).get(name)
        if point is None:
            return None
        problem = entry_point_problem(TEMPLATE_GROUP, name)
        if problem is not None:
            raise ValueError(f"chat template plugin '{name}': {problem[0]}; {problem[1]}")
        path = point.value
    try:
        target: Any = load_object(path)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"chat template plugin '{name}' does not import: {exc}") from exc
    template, family = getattr(target, "template", None), getattr(target, "family", None)
    if not isinstance(template, str) or not isinstance(family, Family):
        raise ValueError(
            f"chat template plugin '{name}' needs `template` (Jinja source) and `family` (a "
            "t3rl_core.chat.families.Family)"
        )
    return ChatTemplate(family, template)


def resolve(config: ChatConfig, parsers: ParsersConfig | None = None) -> tuple[str | None, Family | None]:
    """The Jinja source and the family of a chat config (None, None = the tokenizer's own template)."""
    name = config.chat_template
    spec = config.family.to_family(parsers) if config.family is not None else None
    if name is None:
        return None, spec
    if (TEMPLATES_DIR / f"{name}.jinja").is_file():
        return load_template(name), spec or FAMILIES.get(name)
    plugin = template_plugin(name)
    if plugin is not None:
        return plugin.template, spec or plugin.family
    return load_template(name), spec  # a .jinja path, else an error naming what is known
