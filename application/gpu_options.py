"""What would make a configuration fit a GPU it does not fit: each option with its figures.

For a configuration whose verdict on a GPU is not "fits" (`application.gpu_sizing.check`),
in this order: mixed bfloat16 (for a float32 network, where the profile measured it),
a smaller batch at the same patch, a smaller cube at the same batch, expandable
segments (where the GPU lies between the floor and the bound: the allocator setting
that gives back more of the fragmentation, not measured), and the next GPU size that
fits it. An option appears only where it answers: a change that no line answers, or
that would not be "fits" or "verify first", is left out.
"""

from __future__ import annotations

from dataclasses import replace

from application import gpu_models
from application.gpu_checks import (
    LARGEST_BATCH,
    LARGEST_CUBE,
    GpuCheck,
    GpuOption,
    GpuQuestion,
    Verdict,
    check,
)
from application.gpu_models import GpuProfileModel, Transfer
from core import workloads
from core.gpu_cards import GPU_CARDS, GpuCard

BFLOAT16 = "mixed_bfloat16"


def options_for(
    question: GpuQuestion,
    model: GpuProfileModel,
    card: GpuCard,
    transfer: Transfer | None,
    subject: GpuCheck | None,
) -> tuple[GpuOption, ...]:
    """The options for ``subject`` (a configuration checked on ``card``) unless it fits.

    ``subject`` is the asked configuration (WHICH_GPUS) or, where a LARGEST_* question
    found nothing that fits, its smallest configuration; None: nothing to change.
    """
    if subject is None or subject.verdict is Verdict.FITS:
        return ()
    found = [
        _bfloat16(question, model, card, transfer, subject),
        _smaller(question, model, card, transfer, subject, LARGEST_BATCH),
        _smaller(question, model, card, transfer, subject, LARGEST_CUBE),
        _expandable(question, card, subject),
        _next_gpu(question, model, card, subject),
    ]
    return tuple(option for option in found if option is not None)


def _bfloat16(
    question: GpuQuestion,
    model: GpuProfileModel,
    card: GpuCard,
    transfer: Transfer | None,
    subject: GpuCheck,
) -> GpuOption | None:
    if question.precision == BFLOAT16:
        return None
    config = replace(subject.config, precision=BFLOAT16)
    checked = check(model, config, card, transfer)
    if checked.bound_bytes is None or checked.verdict is Verdict.DOES_NOT_FIT:
        return None
    return GpuOption(f"precision {BFLOAT16} (bfloat16 autocast)", checked)


def _smaller(
    question: GpuQuestion,
    model: GpuProfileModel,
    card: GpuCard,
    transfer: Transfer | None,
    subject: GpuCheck,
    kind: str,
) -> GpuOption | None:
    """The largest smaller batch (or cube) whose bound is under the GPU's usable memory;
    where the asked one's bound is under it already (verify first for its range, its
    runs or its architecture), the largest smaller one that fits, or None."""
    shape, batch = subject.config.image_shape, subject.config.batch_size
    if kind == question.kind:
        return None  # the question itself already searched that way
    if kind == LARGEST_CUBE and len(set(shape)) != 1:
        return None  # a smaller cube is no smaller version of a non-cube patch
    module = workloads.get(question.workload)
    if kind == LARGEST_BATCH:
        configs = [replace(subject.config, batch_size=b) for b in range(batch - 1, 0, -1)]
    else:
        sides = module.square_sides(1, shape[0] - 1, **dict(question.knobs))
        configs = [replace(subject.config, image_shape=(s,) * len(shape)) for s in sides[::-1]]
    # Only a better verdict is an option: "batch 1023, verify first" for a batch 1024
    # whose bound is under the GPU, verify first for its line's 2 runs, changes nothing.
    under = subject.bound_bytes is not None and subject.bound_bytes <= card.usable_bytes
    for config in configs:
        checked = check(model, config, card, transfer)
        if under and checked.verdict is not Verdict.FITS:
            continue
        if checked.bound_bytes is not None and checked.bound_bytes <= card.usable_bytes:
            if kind == LARGEST_BATCH:
                return GpuOption(f"batch {config.batch_size}", checked)
            return GpuOption(f"cube {config.image_shape[0]}", checked)
    return None


def _expandable(question: GpuQuestion, card: GpuCard, asked: GpuCheck) -> GpuOption | None:
    if question.alloc_conf == gpu_models.EXPANDABLE:
        return None
    if asked.bound_bytes is None or asked.floor_bytes is None:
        return None
    if not asked.floor_bytes <= card.usable_bytes < asked.bound_bytes:
        return None
    reason = (
        "expandable segments give back more of the fragmentation between the floor and the "
        "bound, by an amount no run measured: verify first"
    )
    checked = replace(asked, verdict=Verdict.VERIFY_FIRST, reason=reason)
    return GpuOption(f"PYTORCH_CUDA_ALLOC_CONF={gpu_models.EXPANDABLE}", checked)


def _next_gpu(
    question: GpuQuestion, model: GpuProfileModel, card: GpuCard, asked: GpuCheck
) -> GpuOption | None:
    for larger in sorted(GPU_CARDS, key=lambda c: c.usable_bytes):
        if larger.usable_bytes <= card.usable_bytes:
            continue
        transfer = gpu_models.transfer_of(model, larger, question.alloc_conf)
        checked = check(model, asked.config, larger, transfer)
        if checked.verdict is Verdict.FITS:
            article = "an" if str(larger.size_gb).startswith(("8", "11", "18")) else "a"
            return GpuOption(f"{article} {larger.size_gb} GB GPU ({larger.cards})", checked)
    return None
