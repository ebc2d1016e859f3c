"""Every question about one image, batch and budget at once, for the sizing report.

The memory to buy first, then the largest image at the batch and the largest
batch at the image (`application.sizing.answer` each): answered, or why not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pandas as pd

from application.sizing import (
    BATCH,
    BUY,
    IMAGE,
    Models,
    SizingAnswer,
    SizingError,
    SizingQuestion,
    answer,
)


@dataclass(frozen=True)
class Outcome:
    """One of `answer_each`'s questions: its answer, or why there is none."""

    kind: str
    answer: SizingAnswer | None
    problem: str = ""  # the `SizingError`'s reason; "" when answered


def answer_each(
    question: SizingQuestion, models: Models, runs: pd.DataFrame | None = None
) -> tuple[Outcome, ...]:
    """The three questions about ``question``'s image, batch and budget, the memory to buy
    first, then the largest image at its batch and the largest batch at its image: each
    answered, or why not. The report shows all three."""
    found = []
    for kind in (BUY, IMAGE, BATCH):
        try:
            found.append(Outcome(kind, answer(replace(question, kind=kind), models, runs)))
        except SizingError as error:
            found.append(Outcome(kind, None, str(error)))
    return tuple(found)
