"""A ReTool problem's reference answer: the one reading of it, at data preparation and at each episode.

An answer is text or a finite number (not a bool), written as its text. Read with str(), a list of
accepted answers became the text "['1/2', '0.5']", None became "None" and NaN "nan": every answer the
model boxed was graded against that text, a wrong answer each time, without a word.
"""

from __future__ import annotations

import math

from t3rl_core.finite import shown


def answer_text(value: object, where: str) -> str:
    """`value` as the reference answer's text; ValueError naming `where` (the row) when it is none."""
    if isinstance(value, str) or (
        isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    ):
        return str(value)
    raise ValueError(
        f"{where}'s reference answer is {type(value).__name__} {shown(value)}, not text or a finite number: "
        "give it as one answer's text when the data is prepared (math-verify grades one answer)"
    )
