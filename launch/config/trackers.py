"""What each tracking backend accepts as a name, declared per backend (the pre-flight reads it:
launch.checks.rules.tracking). wandb refuses project names with `/ \\ # ? % :` and longer than 128
characters, and groups longer than 128 (wandb's own validation, which fails the run at `wandb.init`)."""

from __future__ import annotations

from t3rl_core.counts import counted
from t3rl_core.records import Record


class NameRule(Record):
    """Characters a name may not hold, and its longest length (None = no limit)."""

    forbidden: str = ""
    max_length: int | None = None

    def refuses(self, name: str) -> str | None:
        bad = sorted({c for c in name if c in self.forbidden})
        if bad:
            return f"may not contain {' '.join(repr(c) for c in bad)}"
        if self.max_length is not None and len(name) > self.max_length:
            return f"is {counted(len(name), 'character')} long, more than {self.max_length}"
        return None

    def cleaned(self, name: str) -> str:
        """The name with every forbidden character replaced by '-' and cut to the longest length."""
        text = "".join("-" if c in self.forbidden else c for c in name)
        return text[: self.max_length] if self.max_length is not None else text


# Backend → field of TrackingConfig → its rule.
TRACKER_NAMES: dict[str, dict[str, NameRule]] = {
    "wandb": {"project": NameRule(forbidden="/\\#?%:", max_length=128), "group": NameRule(max_length=128)},
}
