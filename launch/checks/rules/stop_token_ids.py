"""A token id slime is told to stop at indexes the model's vocabulary: `--rollout-stop-token-ids`, passed
through in `model.architecture.extra_args`, takes ids in [0, model.architecture.vocab_size). One outside
it (`-1`, or 999999 for a model of 151936 rows) is no token the model can sample, so the stop never
happens and every response runs to its length cap, without a word (was: accepted)."""

from __future__ import annotations

from collections.abc import Iterator

from launch.checks.context import Context
from launch.checks.rules.model_inputs import VOCAB
from launch.config.argv_tokens import argv_flags
from launch.config.errors import Problem
from launch.config.fixes import list_override

EXTRA = "model.architecture.extra_args"
FLAG = "--rollout-stop-token-ids"


def stop_token_ids_within_the_vocabulary(ctx: Context) -> Iterator[Problem]:
    extra = list(ctx.run.model.architecture.extra_args)
    size = ctx.run.model.architecture.vocab_size
    for index, flag, values in argv_flags(extra):
        if flag != FLAG:
            continue
        # a value that is no integer is the argv check's (slime's own type function refuses it)
        ids = [int(v) for v in values if v.lstrip("-").isdecimal()]
        outside = [i for i in ids if not 0 <= i < size]
        if not outside:
            continue
        kept = [str(i) for i in ids if 0 <= i < size]
        end = index + (1 if "=" in extra[index] else 1 + len(values))
        rest = [*extra[:index], *([FLAG, *kept] if kept else []), *extra[end:]]
        yield Problem(
            ctx.latest(EXTRA, VOCAB),
            f"'{FLAG}' holds {', '.join(map(str, outside))}, outside the model's vocabulary [0, {size}) "
            f"({VOCAB}): no sampled token has that id, so the stop never happens and each response runs "
            "to its length cap",
            fix=f"set {list_override(EXTRA, rest)}",
        )


RULES = (stop_token_ids_within_the_vocabulary,)
