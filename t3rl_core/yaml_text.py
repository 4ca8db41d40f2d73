"""YAML text of plain data, as the plan files and runtime configs hold it, and read back.

libyaml's emitter when PyYAML was built with it (4–5 × faster than the pure-Python one on a run
config; `t3rl plan` writes several), else PyYAML's own. Both emit the same text for t3rl's configs
(tests/launch/test_yaml_text.py compares them on every shipped experiment).
"""

from __future__ import annotations

from typing import Any

import yaml

from t3rl_core.yaml_block import WIDTH, block_text


def safe_dump(data: Any, **options: Any) -> str:
    """`yaml.safe_dump(data, width=WIDTH, **options)`, through libyaml when available; the plain data of
    a plan's files (`sort_keys=False`) written directly in libyaml's text (t3rl_core.yaml_block)."""
    options.setdefault("width", WIDTH)
    if options == {"sort_keys": False, "width": WIDTH}:
        text = block_text(data)
        if text is not None:
            return text
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), **options)


def safe_load(text: str) -> Any:
    """`yaml.safe_load(text)`, parsed by libyaml when available (~7 × faster: pre-flight reads every
    `model/` option of a cold validate). Text libyaml rejects is read again by PyYAML's own parser, so
    what loads and every error stay PyYAML's."""
    loader = getattr(yaml, "CSafeLoader", None)
    if loader is not None:
        try:
            return yaml.load(text, Loader=loader)
        except yaml.YAMLError:
            pass
    return yaml.safe_load(text)
