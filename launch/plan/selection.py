"""Which stages of a plan a command runs: `--only S` (S alone) or `--from S` (S and every stage after
it), else all. One truth read by the pipeline's `decide` (what the executor runs) and by the pre-flight's
checks of this machine (`launch.checks.validate.plan_checks`), so a check never judges a stage the
command will not start: `t3rl run --only data` is not warned about the model the train stage loads."""

from __future__ import annotations

from collections.abc import Sequence

from t3rl_core.records import Record


class Selection(Record):
    """`--from` / `--only` as given (None: not given)."""

    from_stage: str | None = None
    only: str | None = None

    def of(self, names: Sequence[str]) -> list[str]:
        """The names selected, in plan order. A name that is no stage selects every stage: the pipeline
        refuses it with the stages there are (`decide`), and until then nothing is left unjudged."""
        if self.only is not None:
            return [self.only] if self.only in names else list(names)
        if self.from_stage is not None and self.from_stage in names:
            return list(names[names.index(self.from_stage) :])
        return list(names)


EVERY_STAGE = Selection()
