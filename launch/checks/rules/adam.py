"""Adam's two betas in the order its updates need: the first moment's decay below the square root of the
second's (β1 < √β2). Adam's steps are bounded only then (Reddi et al., "On the Convergence of Adam and
Beyond", ICLR 2018; Zhang et al., "Adam Can Converge Without Any Modification on Update Rules", NeurIPS
2022), and every recipe keeps it (0.9 with 0.95 or 0.999). Betas out of that order are almost always the
two values typed in each other's places (`adam_beta1=0.999 adam_beta2=0.9`) or a β2 lowered past β1²,
which Megatron takes without a word: a warning, blamed on the beta typed last, with the two swapped (or
the one typed at Adam's default) as the fix.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from launch.checks.context import Context, Scope, per_scope
from launch.config.errors import Problem
from launch.config.schema import OptimizerConfig

# Adam's defaults as the schema declares them, read from its fields: an instance built here would build
# OptimizerConfig's validator as this module is imported, outside launch.config.pydantic_plugins, and
# have pydantic scan every installed distribution for plugins (tests/architecture).
_FIELDS = OptimizerConfig.model_fields


def bounded(beta1: float, beta2: float) -> bool:
    """β1 < √β2: the order Adam's bounded steps need."""
    return beta1 < math.sqrt(beta2)


@per_scope
def adam_betas_in_order(scope: Scope, ctx: Context) -> Iterator[Problem]:
    """Adam's β1 below √β2 (a warning: the betas are likely swapped)."""
    opt = scope.curriculum.optimizer if scope.curriculum is not None else None
    if opt is None or opt.name != "adam" or bounded(opt.adam_beta1, opt.adam_beta2):
        return
    one, two = scope.cur("optimizer.adam_beta1"), scope.cur("optimizer.adam_beta2")
    blamed = ctx.latest(one, two)
    yield Problem(
        blamed,
        f"adam_beta1 {opt.adam_beta1:g} is not below √adam_beta2 = {math.sqrt(opt.adam_beta2):.3g}: Adam can "
        "diverge out of that order (Reddi et al. 2018), and every recipe keeps it (0.9 with 0.95 or 0.999)"
        + (": are the two betas swapped?" if opt.adam_beta1 > opt.adam_beta2 else ""),
        fix=_fix(opt, blamed, one, two, swapped=opt.adam_beta1 > opt.adam_beta2 and _typed(ctx, one, two)),
        severity="warning",
    )


def _typed(ctx: Context, *keys: str) -> bool:
    """Every key set where the user last set a value: on the command line, or in one file."""
    sources = {(o.source if o is not None else "") for o in map(ctx.provenance.origin, keys)}
    return len(sources) == 1 or all(s.startswith("override") for s in sources)


def _fix(opt: OptimizerConfig, blamed: str, one: str, two: str, *, swapped: bool) -> str:
    """The two swapped when both were typed, β1 > β2; else the beta typed last at Adam's default; else
    both defaults."""
    if swapped and bounded(opt.adam_beta2, opt.adam_beta1):
        return f"set {one}={opt.adam_beta2:g} {two}={opt.adam_beta1:g}"
    beta1, beta2 = _FIELDS["adam_beta1"].default, _FIELDS["adam_beta2"].default
    b1 = beta1 if blamed == one else opt.adam_beta1
    b2 = beta2 if blamed == two else opt.adam_beta2
    if bounded(b1, b2):
        return f"set {blamed}={b1 if blamed == one else b2:g}"
    return f"set {one}={beta1:g} {two}={beta2:g}"


RULES = (adam_betas_in_order,)
