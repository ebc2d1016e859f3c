"""One configuration on one GPU: the question's types, its checks and its searches.

The parts `application.gpu_sizing` (the answers) and `application.gpu_options` (what
would make a configuration fit) share; import the names from `application.gpu_sizing`,
which re-exports them. A configuration's verdict on a GPU (`check`) reads the fitted
floor and bound of `modeling.gpu_memory`: does not fit below the floor, fits at or above
the bound (inside the measured range, on the measured architecture), verify first in
between or beyond.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

from application import gpu_models
from application.gpu_models import GpuProfileModel, Transfer
from core import workloads
from core.errors import ConfigError
from core.gpu_cards import GpuCard
from core.units import format_bytes
from core.workloads.base import MAX_BATCH_SIZE, WorkloadConfig

LARGEST_CUBE = "largest-cube"
LARGEST_BATCH = "largest-batch"
WHICH_GPUS = "which-gpus"
KINDS = (LARGEST_CUBE, LARGEST_BATCH, WHICH_GPUS)
# A line of fewer runs passes through them all: its left-out ratios measure nothing, so its
# bound says at most "verify first" (AlexNet in bfloat16 on the H200: 2 runs).
MIN_RUNS_TO_FIT = 3


class Verdict(Enum):
    """What the floor and the bound say of a configuration on a GPU."""

    FITS = "fits"
    DOES_NOT_FIT = "does not fit"
    VERIFY_FIRST = "verify first"


@dataclass(frozen=True)
class GpuQuestion:
    """One GPU sizing question; `check_question` says what is missing or wrong."""

    kind: str
    workload: str = workloads.DEFAULT_WORKLOAD
    precision: str = "float32"
    batch_size: int | None = None  # LARGEST_CUBE and WHICH_GPUS
    image_shape: tuple[int, ...] | None = None  # LARGEST_BATCH and WHICH_GPUS
    gpu: str | None = None  # "80GB", "75GiB"; None: the answering profile's own device
    alloc_conf: str = gpu_models.DEFAULT_ALLOC_CONF
    profile: str | None = None  # a GPU profile key; None: the nearest
    knobs: tuple[tuple[str, Any], ...] = ()  # other network knobs (base_filters, levels)


@dataclass(frozen=True)
class GpuCheck:
    """One configuration on one GPU: the figures (bytes; None without a line) and the verdict."""

    config: WorkloadConfig
    card: GpuCard
    allocated_bytes: int | None
    floor_bytes: int | None
    bound_bytes: int | None
    inside: bool
    beyond_factor: float
    verdict: Verdict
    reason: str


@dataclass(frozen=True)
class GpuOption:
    """A change that would make a configuration fit (or come closer), with its check."""

    change: str  # in words: "mixed_bfloat16", "batch 2", "cube 160", "a 94 GB GPU"
    check: GpuCheck


def check_question(question: GpuQuestion) -> None:
    """Raise `ConfigError` for a question that cannot be answered as asked."""
    if question.kind not in KINDS:
        raise ConfigError(f"{question.kind!r} is not a GPU question; one of {', '.join(KINDS)}")
    if question.alloc_conf not in gpu_models.ALLOC_CONFS:
        raise ConfigError(
            f"allocator setting {question.alloc_conf!r} is not one memplan answers for: "
            f"'' (the default) or {gpu_models.EXPANDABLE!r}"
        )
    if question.kind != LARGEST_BATCH and question.batch_size is None:
        raise ConfigError(f"{question.kind} needs a batch size")
    if question.kind != LARGEST_CUBE and question.image_shape is None:
        raise ConfigError(f"{question.kind} needs an image size (a side, or DxHxW / HxW)")


def config_of(question: GpuQuestion, shape: tuple[int, ...], batch: int) -> WorkloadConfig:
    """The configuration of ``question``'s network at ``shape`` and ``batch`` (checked)."""
    module = workloads.get(question.workload)
    return module.Config(shape, batch, precision=question.precision, **dict(question.knobs))


def check(
    model: GpuProfileModel, config: WorkloadConfig, card: GpuCard, transfer: Transfer | None
) -> GpuCheck:
    """``config`` on ``card`` by ``model``: its figures and verdict, with the reason in words."""
    need = model.model.need(config)
    usable = card.usable_bytes
    if need is None:
        return GpuCheck(
            config, card, None, None, None, False, 1.0, Verdict.VERIFY_FIRST,
            f"no bound: the {model.profile.machine_label} runs did not measure this network "
            "or this shape (one measured shape says nothing of how the need moves with it)",
        )  # fmt: skip
    figures = (need.allocated_bytes, need.floor_bytes, need.bound_bytes, need.inside)
    made = GpuCheck(config, card, *figures, need.beyond_factor, Verdict.VERIFY_FIRST, "")
    if need.floor_bytes > usable:
        return replace(
            made,
            verdict=Verdict.DOES_NOT_FIT,
            reason=f"the tensors' peak and the context alone (floor "
            f"{format_bytes(need.floor_bytes)}) are more than {format_bytes(usable)} usable",
        )
    if need.bound_bytes > usable:
        reason = (
            f"{format_bytes(usable)} usable lies between the floor "
            f"({format_bytes(need.floor_bytes)}) and the bound ({format_bytes(need.bound_bytes)}): "
            "it trains only if the allocator gives back enough of its cached blocks"
        )
        return replace(made, reason=reason)
    if not need.inside:
        reason = (
            f"the bound ({format_bytes(need.bound_bytes)}) is under {format_bytes(usable)}, but "
            f"{need.beyond_factor:.1f}x beyond the measured range"
        )
        return replace(made, reason=reason)
    if need.run_count < MIN_RUNS_TO_FIT:
        reason = (
            f"the bound ({format_bytes(need.bound_bytes)}) is under {format_bytes(usable)}, but "
            f"its line rests on {need.run_count} runs: too few to have measured its spread"
        )
        return replace(made, reason=reason)
    if transfer is not None and not transfer.bounded:
        reason = (
            f"the measured GPU's bound ({format_bytes(need.bound_bytes)}) is under "
            f"{format_bytes(usable)}, but no run on this architecture says it holds there"
        )
        return replace(made, reason=reason)
    reason = f"the bound ({format_bytes(need.bound_bytes)}) is under {format_bytes(usable)} usable"
    return replace(made, verdict=Verdict.FITS, reason=reason)


def largest(
    question: GpuQuestion, model: GpuProfileModel, card: GpuCard, transfer: Transfer | None
) -> tuple[GpuCheck | None, GpuCheck | None]:
    """The largest side (LARGEST_CUBE) or batch (LARGEST_BATCH) that fits ``card``, and the
    largest that is at most "verify first" (with a line: a guess is no answer)."""
    module = workloads.get(question.workload)
    if question.kind == LARGEST_CUBE:
        assert question.batch_size is not None
        sides = module.square_sides(1, module.MAX_IMAGE_SIDE, **dict(question.knobs))
        configs = (
            config_of(question, (side,) * module.DIMS, question.batch_size) for side in sides
        )
    else:
        assert question.image_shape is not None
        configs = (
            config_of(question, question.image_shape, batch)
            for batch in range(1, MAX_BATCH_SIZE + 1)
        )
    fits = verify = None
    for config in configs:
        checked = check(model, config, card, transfer)
        if checked.verdict is Verdict.DOES_NOT_FIT:
            break  # the need grows with the side and the batch: none larger fits
        if checked.bound_bytes is None:
            continue
        verify = checked
        if checked.verdict is Verdict.FITS:
            fits = checked
    return fits, verify


def smallest(
    question: GpuQuestion, model: GpuProfileModel, card: GpuCard, transfer: Transfer | None
) -> GpuCheck:
    """The smallest configuration a LARGEST_* question asks about (the smallest cube at its
    batch, or batch 1 at its patch), checked: where nothing fits, what the options change."""
    module = workloads.get(question.workload)
    if question.kind == LARGEST_CUBE:
        assert question.batch_size is not None
        side = module.square_sides(1, module.MAX_IMAGE_SIDE, **dict(question.knobs))[0]
        config = config_of(question, (side,) * module.DIMS, question.batch_size)
    else:
        assert question.image_shape is not None
        config = config_of(question, question.image_shape, 1)
    return check(model, config, card, transfer)
