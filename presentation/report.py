"""Text renderings of evaluation results and sizing answers, for the CLI and docs/accuracy.md.

Rendering only: nothing here computes a result. Memory is shown in GiB
(2^30 bytes); purchasable server memory in (binary) GB, which is the same unit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd

from application.sizing import SizingQuestion
from core.units import format_bound, format_gib
from modeling.evaluation.bounds import ConformalBound, fewest_beyond_worst
from modeling.evaluation.conformal import CV, FORWARD
from modeling.sizing import Basis, BatchAnswer, ImageSizeAnswer, MemoryAnswer
from modeling.stored.predictor import Predictor

# The paper's symbolic-regression result on held-out points: the anchor to beat.
PAPER_SR_MAPE_PCT = 4.15


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


def _basis_lines(basis: Basis) -> list[str]:
    lines = [f"model: {basis.model}; bound: {basis.bound}"]
    if basis.extrapolates:
        lines.append(f"WARNING: {basis.warning}")
    else:
        lines.append("inside the measured range")
    return lines


def headroom_line(question: SizingQuestion) -> str:
    """What of the question's budget training may use, and the headroom kept free."""
    budget, usable = question.budget_bytes or 0, question.usable_bytes or 0
    if question.headroom_pct == 0:
        return f"budget: {format_gib(budget)}, all of it for training (no headroom kept)"
    return (
        f"budget: {format_gib(budget)} with {question.headroom_pct:g}% headroom on top of the "
        f"bound, which leaves {format_gib(usable)} for training"
    )


def image_size_lines(answer: ImageSizeAnswer, dims: int = 3) -> list[str]:
    """The largest image answer in words; ``dims``: 3 for a cube (``128^3``), 2 for a square."""
    lines = [
        f"largest image: {answer.side}^{dims} at batch {answer.batch_size} within "
        f"{format_gib(answer.budget_bytes)} (needs up to {format_gib(answer.bound_bytes)}, "
        f"predicted {format_gib(answer.predicted_bytes)})"
    ]
    if answer.next_side is None:
        lines.append("every image side the network takes fits this budget")
    else:
        lines.append(
            f"next size up, {answer.next_side}^{dims}, would need up to "
            f"{format_bound(answer.next_bound_bytes or 0)}: does not fit"
        )
    return lines + _basis_lines(answer.basis)


def batch_lines(answer: BatchAnswer) -> list[str]:
    shape = "x".join(str(side) for side in answer.image_shape)
    lines = [
        f"largest batch: {answer.batch_size} for {shape} within {format_gib(answer.budget_bytes)} "
        f"(needs up to {format_gib(answer.bound_bytes)}, "
        f"predicted {format_gib(answer.predicted_bytes)})"
    ]
    if answer.next_batch is None:
        lines.append("every batch size accepted fits this budget")
    else:
        lines.append(
            f"batch {answer.next_batch} would need up to "
            f"{format_bound(answer.next_bound_bytes or 0)}: does not fit"
        )
    return lines + _basis_lines(answer.basis)


def memory_lines(answer: MemoryAnswer) -> list[str]:
    shape = "x".join(str(side) for side in answer.image_shape)
    return [
        f"buy {answer.memory_gb} GB (binary GB = GiB) for {shape} at batch {answer.batch_size}: "
        f"needs up to {format_gib(answer.bound_bytes)} "
        f"(predicted {format_gib(answer.predicted_bytes)}), "
        f"{format_gib(answer.required_bytes)} with {answer.headroom:.0%} headroom",
        *_basis_lines(answer.basis),
    ]
