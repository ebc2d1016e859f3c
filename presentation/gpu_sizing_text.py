"""A GPU sizing answer (`application.gpu_sizing.GpuAnswer`) in words and as JSON-ready data.

The same sentences on every path: ``memplan size gpu`` prints `answer_lines`, ``--json``
prints `answer_data`, and the HTML report's GPU section (`presentation.gpu_report_html`)
shows both. Sizes in GiB to two decimals in words, in bytes in the data.
"""

from __future__ import annotations

from typing import Any

from application.gpu_sizing import (
    LARGEST_BATCH,
    LARGEST_CUBE,
    GpuAnswer,
    GpuCheck,
    GpuEvidence,
    GpuOption,
)
from core import workloads
from core.units import format_bytes


def shape_words(shape: tuple[int, ...]) -> str:
    """``256^3`` for a cube, ``224^2`` for a square, ``240x240x144`` otherwise."""
    if len(set(shape)) == 1:
        return f"{shape[0]}^{len(shape)}"
    return "x".join(str(side) for side in shape)


def figures_words(check: GpuCheck) -> str:
    """``tensors' peak about 16.43 GiB; needs at least 16.2 GiB (context included), at most
    22.84 GiB``: the floor is the line's lowest measured ratio less an allowance, so it
    can be under the predicted peak itself (`modeling.gpu_memory`)."""
    if check.bound_bytes is None:
        return "no bound"
    assert check.allocated_bytes is not None and check.floor_bytes is not None
    return (
        f"tensors' peak about {format_bytes(check.allocated_bytes)}; needs at least "
        f"{format_bytes(check.floor_bytes)} (the floor, CUDA context included), at most "
        f"{format_bytes(check.bound_bytes)} (the bound)"
    )


def check_line(check: GpuCheck) -> str:
    """One configuration on one GPU: verdict, GPU, figures and why."""
    config = check.config
    what = f"{shape_words(tuple(config.image_shape))} at batch {config.batch_size}"
    return (
        f"{check.verdict.value}: {what} on {check.card.label} ({figures_words(check)}): "
        f"{check.reason}"
    )


def table_line(check: GpuCheck) -> str:
    """One GPU size of a WHICH_GPUS table (the figures are the answer line's): verdict, why."""
    return f"  {check.card.label}: {check.verdict.value}: {check.reason}"


def option_line(option: GpuOption) -> str:
    return f"  - {option.change}: {check_line(option.check)}"


def _asked_words(said: GpuAnswer) -> str:
    question = said.question
    allocator = question.alloc_conf or "the default allocator"
    return f"{question.workload}, {question.precision}, {allocator}"


def headline(said: GpuAnswer) -> str:
    """The answer in one sentence."""
    question, card = said.question, said.card
    asked = _asked_words(said)
    if question.kind not in (LARGEST_CUBE, LARGEST_BATCH):
        assert said.check is not None and question.image_shape is not None
        what = f"{shape_words(question.image_shape)} at batch {question.batch_size}"
        return f"{what} ({asked}) {said.check.verdict.value} on {card.label}."
    if question.kind == LARGEST_CUBE:
        dims = workloads.get(question.workload).DIMS
        text = f"Largest cube at batch {question.batch_size} that fits {card.label}"

        def value(found: int) -> str:
            return f"{found}^{dims}"
    else:
        assert question.image_shape is not None
        text = f"Largest batch at {shape_words(question.image_shape)} that fits {card.label}"
        value = str
    text += ": none is known to fit" if said.found is None else f": {value(said.found)}"
    if said.found_verify is not None and said.found_verify != said.found:
        text += f"; up to {value(said.found_verify)} verify first"
    return f"{text} ({asked})."


def evidence_lines(evidence: GpuEvidence) -> list[str]:
    """Which profile answered, its runs and its bound's coverage, how it transferred."""
    lines = [f"Answered by GPU profile {evidence.profile} ({evidence.profile_label}), "
             f"{evidence.run_count} runs."]  # fmt: skip
    if evidence.random_split_coverage is not None:
        lines.append(
            f"The allocated line's median error {evidence.median_error_pct:.1f}% (random split); "
            f"the bound covered {evidence.random_split_coverage:.0%} of held-out runs inside "
            f"the measured range and {evidence.beyond_coverage:.0%} beyond its sides "
            "(python -m benchmarks.gpu_accuracy)."
        )
    if evidence.transfer is not None:
        lines.append(f"note: {evidence.transfer.words}.")
    return lines


def answer_lines(said: GpuAnswer) -> list[str]:
    """The whole answer as lines of text, as ``memplan size gpu`` prints them."""
    lines = [headline(said)]
    if said.check is not None:
        where = (
            "inside the measured range"
            if said.check.inside
            else f"{said.check.beyond_factor:.1f}x beyond the measured range"
        )
        lines.append(f"{check_line(said.check)} ({where})")
    if said.table:
        lines.append("GPU sizes (usable memory as the framework reports it):")
        lines += [table_line(check) for check in said.table]
    if said.options:
        lines.append("What would make it fit:")
        lines += [option_line(option) for option in said.options]
    lines += evidence_lines(said.evidence)
    lines += [f"note: {note}." for note in said.notes]
    return lines


def check_data(check: GpuCheck) -> dict[str, Any]:
    config = check.config
    return {
        "image_shape": list(config.image_shape),
        "batch_size": config.batch_size,
        "precision": config.precision,
        "gpu": check.card.label,
        "gpu_size_gb": check.card.size_gb or None,
        "usable_bytes": check.card.usable_bytes,
        "usable_source": check.card.source,
        "allocated_bytes": check.allocated_bytes,
        "floor_bytes": check.floor_bytes,
        "bound_bytes": check.bound_bytes,
        "inside_measured_range": check.inside,
        "beyond_factor": check.beyond_factor,
        "verdict": check.verdict.value,
        "reason": check.reason,
    }


def answer_data(said: GpuAnswer) -> dict[str, Any]:
    """The answer as JSON-ready data: the same keys every time."""
    question, evidence = said.question, said.evidence
    return {
        "question": question.kind,
        "workload": question.workload,
        "precision": question.precision,
        "alloc_conf": question.alloc_conf,
        "batch_size": question.batch_size,
        "image_shape": list(question.image_shape) if question.image_shape else None,
        "gpu": said.card.label,
        "usable_source": said.card.source,
        "usable_bytes": said.card.usable_bytes,
        "headline": headline(said),
        "found": said.found,
        "found_verify_first": said.found_verify,
        "answer": check_data(said.check) if said.check else None,
        "table": [check_data(check) for check in said.table],
        "options": [{"change": o.change, **check_data(o.check)} for o in said.options],
        "evidence": {
            "profile": evidence.profile,
            "label": evidence.profile_label,
            "runs": evidence.run_count,
            "random_split_coverage": evidence.random_split_coverage,
            "beyond_sides_coverage": evidence.beyond_coverage,
            "median_error_pct": evidence.median_error_pct,
            "transfer": evidence.transfer.words if evidence.transfer else None,
            "bounded": evidence.transfer.bounded if evidence.transfer else True,
        },
        "notes": list(said.notes),
    }
