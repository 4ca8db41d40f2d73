"""YAML text of plain data, as the plan files and runtime configs hold it.

libyaml's emitter when PyYAML was built with it (4–5 × faster than the pure-Python one on a run
config; `t3rl plan` writes several), else PyYAML's own. Both emit the same text for t3rl's configs
(tests/launch/test_yaml_text.py compares them on every shipped experiment).
"""

from __future__ import annotations

from typing import Any

import yaml


def safe_dump(data: Any, **options: Any) -> str:
    """`yaml.safe_dump(data, **options)`, through libyaml when available."""
    return yaml.dump(data, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), **options)
