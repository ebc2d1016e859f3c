"""An evaluation's results as Markdown text: its scores, the final models' formulas and
their conformal bounds, as `memplan evaluate` and a refit print them (and
docs/accuracy.md shows them). Rendering only: nothing here computes a result.
`presentation.report` names the same functions for the pages' and the CLI's other text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from modeling.evaluation.bounds import ConformalBound, fewest_beyond_worst
from modeling.evaluation.conformal import CV, FORWARD
from modeling.stored.predictor import Predictor


def markdown_table(frame: pd.DataFrame, decimals: int = 2) -> str:
    """A GitHub-flavoured Markdown table; floats rounded, missing values as '-'."""

    def cell(value: object) -> str:
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return "-"
        if isinstance(value, float):
            return f"{value:.{decimals}f}"
        return str(value).replace("|", "\\|")

    header = "| " + " | ".join(str(column) for column in frame.columns) + " |"
    rule = "|" + "|".join("---" for _ in frame.columns) + "|"
    body = [
        "| " + " | ".join(cell(value) for value in row) + " |" for row in frame.itertuples(False)
    ]
    return "\n".join([header, rule, *body])


def formulas_table(predictors: Sequence[Predictor]) -> str:
    """The readable formulas of the final models (those that have one), with their size."""
    rows = [
        {
            "model": p.title,
            "formula (GiB)": p.formula,
            "size": "-" if p.formula_length is None else str(p.formula_length),
            "settings": p.params_json,
            "fit s": p.fit_seconds,
        }
        for p in predictors
        if p.formula
    ]
    return markdown_table(pd.DataFrame(rows)) if rows else "(no model with a formula)"


def bounds_table(
    predictors: Sequence[Predictor],
    checked: Mapping[str, Mapping[str, float | None]] | None = None,
) -> str:
    """Each final model's conformal multipliers inside and beyond the measured range.

    Every multiplier comes with the number of distinct configurations behind it
    ("thin" where so few that the bound is the worst one seen; older stored
    bounds count residuals and say so), and notes below the table explain both.
    checked : model name -> {"cv": share, "forward": share}: coverage measured on
    configurations each bound was not calibrated on
    (`modeling.evaluation.fitting.checked_coverage`); shown when given.
    """
    rows = []
    for p in predictors:
        row: dict[str, object] = {"model": p.title, "stated coverage": f"{p.bound.coverage:.0%}"}
        shares = {} if checked is None else checked.get(p.name, {})
        for label, split, bound in (
            ("inside", CV, p.bound),
            ("beyond", FORWARD, p.extrapolation_bound),
        ):
            row[f"{label}: bound x"] = None if bound is None else bound.ratio
            row[f"{label}: configurations"] = "-" if bound is None else _configurations(bound)
            if checked is not None:
                share = shares.get(split)
                row[f"{label}: checked"] = "-" if share is None else f"{share:.0%}"
        rows.append(row)
    notes = _bound_notes([b for p in predictors for b in (p.bound, p.extrapolation_bound) if b])
    return "\n\n".join([markdown_table(pd.DataFrame(rows), decimals=3), *notes])


def _configurations(bound: ConformalBound) -> str:
    if bound.legacy:
        return f"{bound.n_calibration} residuals (older evaluation)"
    return f"{bound.n_calibration} (thin)" if bound.thin else str(bound.n_calibration)


def _bound_notes(bounds: Sequence[ConformalBound]) -> list[str]:
    """A sentence for each caveat a table of ``bounds`` marks."""
    notes = []
    for coverage in sorted({b.coverage for b in bounds if b.thin}):
        notes.append(
            f"thin: thin evidence, fewer than {fewest_beyond_worst(coverage)} configurations, so "
            f"the {coverage:.0%} bound is simply the worst configuration seen."
        )
    if any(b.legacy for b in bounds):
        notes.append(
            "older evaluation: its bounds counted held-out residuals, the same configuration "
            "once per seed; re-run `memplan evaluate` for bounds counted by "
            "configuration."
        )
    return notes
