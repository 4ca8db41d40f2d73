"""The Ray cluster t3rl submits to, read one way wherever it is read: `executor.address`, else the
`RAY_ADDRESS` exported where t3rl runs (as `ray job submit` falls back to it).

The field's kind (`t3rl_core.fields.RayAddress`) reads Ray's word `auto` and the GCS port 6379 as Ray
users type them; the exported variable was taken as written (`RAY_ADDRESS=auto` became a dashboard at a
host named auto, `RAY_ADDRESS=10.0.0.1:6379`, ray.init's GCS address, a dashboard on the GCS port), and
failed at the first submission, after the stages before it. Both now go through the kind.
"""

from __future__ import annotations

from collections.abc import Mapping

VARIABLE = "RAY_ADDRESS"


def with_scheme(address: str) -> str:
    """An address as the Job Submission client is given it: `host:port` read as `http://host:port`
    (`auto`, Ray's word, is left to the kind, which reads it)."""
    text = address.strip()
    return text if "://" in text or text.lower() == "auto" else f"http://{text}"


def exported_address(environ: Mapping[str, str]) -> str | None:
    """The `RAY_ADDRESS` exported here, as the executor would submit to it; None when none is."""
    value = environ.get(VARIABLE)
    return with_scheme(value) if value else None
