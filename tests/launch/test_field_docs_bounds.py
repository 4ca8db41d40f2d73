"""A field's bounds read the same whatever the process built before: typing caches `Annotated[float, Gt(0)]`
by equality (0 == 0.0), so a field declared `gt=0` may carry the `Gt(0.0)` another model declared first."""

from __future__ import annotations

from typing import Annotated

from annotated_types import Gt, Le
from pydantic import BaseModel, Field

from launch.config.field_docs import field_doc


def test_a_whole_bound_reads_as_an_integer_whichever_spelling_came_first() -> None:
    class First(BaseModel):
        value: Annotated[float, Gt(0.0), Le(1.0)] = 0.5

    class Second(BaseModel):
        value: float = Field(0.5, gt=0, le=1)

    assert field_doc(First, "value").domain == field_doc(Second, "value").domain == "> 0 and ≤ 1"


def test_a_fractional_or_huge_bound_keeps_its_digits() -> None:
    class Model(BaseModel):
        small: float = Field(0.5, gt=1e-10, lt=0.75)
        big: int = Field(1, le=2**40)

    assert field_doc(Model, "small").domain == "> 1e-10 and < 0.75"
    assert field_doc(Model, "big").domain == "≤ 2**40"
