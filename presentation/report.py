"""Text renderings of evaluation results and sizing answers, for the CLI and docs/accuracy.md.

Rendering only: nothing here computes a result. Memory is shown in GiB
(2^30 bytes); purchasable server memory in (binary) GB, which is the same unit.
"""

from __future__ import annotations

from application.sizing import SizingQuestion
from core.units import format_bound, format_gib
from modeling.evaluation.report_text import bounds_table as bounds_table
from modeling.evaluation.report_text import formulas_table as formulas_table
from modeling.evaluation.report_text import markdown_table as markdown_table
from modeling.sizing import Basis, BatchAnswer, ImageSizeAnswer, MemoryAnswer

# The paper's symbolic-regression result on held-out points: the anchor to beat.
PAPER_SR_MAPE_PCT = 4.15


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
        return (
            f"budget: {format_gib(budget)} of host RAM, all of it for training (no headroom kept)"
        )
    return (
        f"budget: {format_gib(budget)} of host RAM with {question.headroom_pct:g}% headroom on "
        f"top of the bound, which leaves {format_gib(usable)} for training"
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
        f"{format_gib(answer.required_bytes)} of host RAM with {answer.headroom:.0%} headroom",
        *_basis_lines(answer.basis),
    ]
