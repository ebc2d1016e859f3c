"""The sizing questions users ask, answered from a fitted model's *upper bound*.

* `largest_image_side` — the largest valid cube or square (the workload says
  which sides are valid: a U-Net's are multiples of 2^(levels-1)) that fits a
  memory budget at a batch, and the next valid size up, which does not;
* `largest_batch` — the largest batch for an image shape and a budget;
* `memory_to_buy` — the server memory to buy for an image shape and batch,
  with headroom, rounded up to a purchasable size.

Every answer is a frozen dataclass with a `Basis`: the model, the bound
(`ConformalBound.name`: coverage, how many distinct held-out configurations
stand behind it, and "thin evidence" where so few that it is the worst one
seen), and whether the question lies beyond the measured range, said in
plain words. Answers use the bound, not the
point prediction: a point prediction is wrong on the low side half the time.

Units. Budgets and predictions are bytes. Server memory is sold in "GB" that
are binary, JEDEC-style: a "64 GB" DIMM holds 64 x 2^30 bytes, i.e. 64 GiB
(68.7 x 10^9 bytes). `PURCHASABLE_MEMORY_GB` is in those units, so its sizes
compare directly with GiB.

The closed-form floor under every bound: `modeling.closed_form_floor`.

"Fits" means the bound is at or under the budget. Sizes and batches are
scanned upward and the answer is the last one before the first that does not
fit, so a model that is not monotone cannot produce an answer with a
non-fitting size below it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from core import workloads
from core.units import format_gib
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import MAX_BATCH_SIZE, WorkloadConfig
from modeling.closed_form_floor import (
    SizingModel,
    ceiling_factor,
    floor_words,
    replace_below_floor,
)
from modeling.errors import ModelingError

# Server memory sizes one can buy, in (binary, JEDEC) GB; see the module docstring.
PURCHASABLE_MEMORY_GB: tuple[int, ...] = (
    64,
    96,
    128,
    192,
    256,
    384,
    512,
    768,
    1024,
    1536,
    2048,
    3072,
)
BYTES_PER_MEMORY_GB = 2**30
# Room left for the OS, the data pipeline and other processes on top of the bound.
DEFAULT_HEADROOM = 0.2
# Sizes or batches predicted at once before a scan looks for the first miss; doubles each time.
FIRST_SCAN_CHUNK = 16
# More than 10x headroom is a typo, not a safety margin.
MAX_HEADROOM = 10.0


@dataclass(frozen=True)
class Basis:
    """What an answer rests on: the model, the bound, and whether it extrapolates."""

    model: str
    bound: str
    coverage: float
    extrapolates: bool
    warning: str  # plain words; empty when the answer stays inside the measured range
    raised_to_closed_form: bool = False  # the model's bound fell below the closed-form floor


@dataclass(frozen=True)
class ImageSizeAnswer:
    """The largest cube side that fits ``budget_bytes`` at ``batch_size``, and the next one up."""

    batch_size: int
    budget_bytes: int
    side: int
    predicted_bytes: int
    bound_bytes: int
    next_side: int | None  # None: even the largest side the network takes fits
    next_bound_bytes: float | None  # math.inf: the model gives the next one no finite bound
    basis: Basis


@dataclass(frozen=True)
class BatchAnswer:
    """The largest batch that fits ``budget_bytes`` for ``image_shape``, and the next one up."""

    image_shape: tuple[int, int, int]
    budget_bytes: int
    batch_size: int
    predicted_bytes: int
    bound_bytes: int
    next_batch: int | None  # None: even the largest batch accepted fits
    next_bound_bytes: float | None  # math.inf: the model gives the next one no finite bound
    basis: Basis


@dataclass(frozen=True)
class MemoryAnswer:
    """Memory to buy for ``image_shape`` at ``batch_size``: bound x (1 + headroom), rounded up."""

    image_shape: tuple[int, int, int]
    batch_size: int
    headroom: float
    predicted_bytes: int
    bound_bytes: int
    required_bytes: int
    memory_gb: int  # one of PURCHASABLE_MEMORY_GB (binary GB, = GiB)
    basis: Basis


def _scan(
    model: SizingModel,
    make: Callable[[int], WorkloadConfig],
    values: Sequence[int],
    budget_bytes: int,
) -> tuple[list[WorkloadConfig], np.ndarray, np.ndarray]:
    """`_bounds` of ``make(value)`` for ``values`` in growing chunks, up to the first chunk with
    one over budget: the answer bounding them all gives, without making (each validates
    itself) and predicting 4096 batch sizes when batch 12 already misses."""
    chunk = FIRST_SCAN_CHUNK
    configs: list[WorkloadConfig] = []
    bounds, raised = [], []
    while len(configs) < len(values):
        part = [make(value) for value in values[len(configs) : len(configs) + chunk]]
        part_bounds, part_raised = _bounds(model, part)
        configs += part
        bounds.append(part_bounds)
        raised.append(part_raised)
        if not (part_bounds <= budget_bytes).all():
            break
        chunk *= 2
    return configs, np.concatenate(bounds), np.concatenate(raised)


def _bounds(model: SizingModel, configs: Sequence[WorkloadConfig]) -> tuple[np.ndarray, np.ndarray]:
    """(bounds, raised): the model's upper bounds, as `replace_below_floor` leaves them."""
    return replace_below_floor(model, configs, np.asarray(model.upper_bytes(configs), dtype=float))


def _next_bound(bounds: np.ndarray, following: int | None) -> float | None:
    """The bound of the first size that does not fit: whole bytes, or math.inf if unbounded."""
    if following is None:
        return None
    bound = float(bounds[following])
    return int(bound) if math.isfinite(bound) else math.inf


def _basis(model: SizingModel, config: WorkloadConfig, raised: bool) -> Basis:
    bound = model.bound_for(config)
    reasons = model.training_range.beyond(config)
    sentences = []
    if reasons:
        sentences.append(
            "This answer extrapolates beyond the measured runs: " + "; ".join(reasons) + ". "
            "The model was never checked there; its bound is a best guess, not a guarantee. "
            "Measure a point near the answer before relying on it."
        )
    if raised:
        runs = model.training_range.excess_runs
        over = f" of the {runs} it was fitted on" if runs else ""
        sentences.append(
            f"Model {model.name} predicts less than {floor_words(model)}, so the answer "
            f"uses the estimate times {ceiling_factor(model):.2f}, the most any run{over} "
            "exceeded it; this model's formula is not to be trusted here."
        )
    name = bound.name + (
        f"; replaced by the closed form x{ceiling_factor(model):.2f}" if raised else ""
    )
    within = model.training_range
    # The host-to-host and cores factors are said by their own clauses.
    widening = within.widening(config) / within.host_widening / within.cores_widening
    name += f"; widened x{widening:.2f} for {within.widened_for(config)}" if widening > 1 else ""
    if within.cores_widening > 1:
        name += f"; widened x{within.cores_widening:.2f} for a server's more cores"
    name += f"; {within.host_spread}" if within.host_spread else ""
    return Basis(model.name, name, bound.coverage, bool(reasons), " ".join(sentences), raised)


def _check_budget(budget_bytes: int) -> None:
    if isinstance(budget_bytes, bool) or not isinstance(budget_bytes, (int, np.integer)):
        raise ModelingError(f"memory budget must be a whole number of bytes, got {budget_bytes!r}")
    if budget_bytes <= 0:
        raise ModelingError(f"memory budget must be positive, got {budget_bytes} bytes")


def _check_bounded(model: SizingModel, bound_bytes: float, config: WorkloadConfig) -> None:
    """A model that cannot bound the smallest case cannot answer; say so, not 'inf GiB'."""
    if not np.isfinite(bound_bytes):
        raise ModelingError(
            f"model {model.name} gives no finite upper bound for {config.image_label} at batch "
            f"{config.batch_size} (it predicts no positive memory there, or its held-out errors "
            "were unbounded); choose another model with --model"
        )


def largest_image_side(
    model: SizingModel,
    budget_bytes: int,
    batch_size: int,
    knobs: Mapping[str, Any] | None = None,
    workload: str = DEFAULT_WORKLOAD,
) -> ImageSizeAnswer:
    """The largest valid square or cube side whose bound fits ``budget_bytes`` at ``batch_size``.

    knobs : the workload's other config fields (base_filters, levels, ...); defaults otherwise.
    Raises `ModelingError` when not even the smallest valid image fits.
    """
    _check_budget(budget_bytes)
    module = workloads.get(workload)
    knobs = _network(dict(knobs or {}), workload)
    sides = module.square_sides(1, module.MAX_IMAGE_SIDE, **knobs)
    configs, bounds, raised = _scan(
        model,
        lambda side: module.Config((side,) * module.DIMS, batch_size, **knobs),
        sides,
        budget_bytes,
    )
    index = _last_fitting(bounds, budget_bytes)
    if index is None:
        _check_bounded(model, bounds[0], configs[0])
        raise ModelingError(
            f"even the smallest valid image ({sides[0]}^{module.DIMS}) needs up to "
            f"{format_gib(bounds[0])} at batch {batch_size}, more than the "
            f"{format_gib(budget_bytes)} budget; use a smaller batch or more memory"
        )
    chosen = configs[index]
    following = index + 1 if index + 1 < len(configs) else None
    return ImageSizeAnswer(
        batch_size=batch_size,
        budget_bytes=int(budget_bytes),
        side=sides[index],
        predicted_bytes=int(model.point_bytes([chosen])[0]),
        bound_bytes=int(bounds[index]),
        next_side=None if following is None else sides[following],
        next_bound_bytes=_next_bound(bounds, following),
        basis=_basis(model, chosen, bool(raised[index])),
    )


def largest_batch(
    model: SizingModel,
    budget_bytes: int,
    image_shape: tuple[int, ...],
    knobs: Mapping[str, Any] | None = None,
    max_batch: int = MAX_BATCH_SIZE,
    workload: str = DEFAULT_WORKLOAD,
) -> BatchAnswer:
    """The largest batch, up to ``max_batch``, whose bound for ``image_shape`` fits the budget.

    Raises `ModelingError` when not even batch 1 fits.
    """
    _check_budget(budget_bytes)
    if not 1 <= max_batch <= MAX_BATCH_SIZE:
        raise ModelingError(f"max_batch must be between 1 and {MAX_BATCH_SIZE}, got {max_batch}")
    config_type = workloads.get(workload).Config
    knobs = _network(dict(knobs or {}), workload)
    shape = tuple(image_shape)
    configs, bounds, raised = _scan(
        model,
        lambda batch: config_type(shape, batch, **knobs),
        range(1, max_batch + 1),
        budget_bytes,
    )
    index = _last_fitting(bounds, budget_bytes)
    if index is None:
        _check_bounded(model, bounds[0], configs[0])
        raise ModelingError(
            f"image {configs[0].image_label} needs up to {format_gib(bounds[0])} at batch 1, more "
            f"than the {format_gib(budget_bytes)} budget; use a smaller image or more memory"
        )
    chosen = configs[index]
    following = index + 1 if index + 1 < len(configs) else None
    return BatchAnswer(
        image_shape=chosen.image_shape,
        budget_bytes=int(budget_bytes),
        batch_size=chosen.batch_size,
        predicted_bytes=int(model.point_bytes([chosen])[0]),
        bound_bytes=int(bounds[index]),
        next_batch=None if following is None else configs[following].batch_size,
        next_bound_bytes=_next_bound(bounds, following),
        basis=_basis(model, chosen, bool(raised[index])),
    )


def memory_to_buy(
    model: SizingModel,
    image_shape: tuple[int, ...],
    batch_size: int,
    headroom: float = DEFAULT_HEADROOM,
    knobs: Mapping[str, Any] | None = None,
    workload: str = DEFAULT_WORKLOAD,
) -> MemoryAnswer:
    """The smallest purchasable memory holding the bound plus ``headroom`` (a fraction, 0.2 = 20%).

    Raises `ModelingError` when even the largest purchasable size is too small.
    """
    if not isinstance(headroom, (int, float)) or not 0 <= headroom <= MAX_HEADROOM:
        raise ModelingError(
            f"headroom must be a fraction between 0 and {MAX_HEADROOM:g} (0.2 = 20%), "
            f"got {headroom!r}"
        )
    config_type = workloads.get(workload).Config
    config = config_type(tuple(image_shape), batch_size, **_network(dict(knobs or {}), workload))
    bounds, raised = _bounds(model, [config])
    bound = float(bounds[0])
    _check_bounded(model, bound, config)
    required = bound * (1 + headroom)
    fitting = [gb for gb in PURCHASABLE_MEMORY_GB if gb * BYTES_PER_MEMORY_GB >= required]
    if not fitting:
        largest = PURCHASABLE_MEMORY_GB[-1]
        raise ModelingError(
            f"{config.image_label} at batch {batch_size} needs {format_gib(required)} with "
            f"{headroom:.0%} headroom, more than the largest purchasable size ({largest} GB); "
            "use smaller images or batches, or split training across machines"
        )
    return MemoryAnswer(
        image_shape=config.image_shape,
        batch_size=batch_size,
        headroom=float(headroom),
        predicted_bytes=int(model.point_bytes([config])[0]),
        bound_bytes=int(bound),
        required_bytes=math.ceil(required),
        memory_gb=fitting[0],
        basis=_basis(model, config, bool(raised[0])),
    )


def _network(knobs: dict[str, Any], workload: str) -> dict[str, Any]:
    known = workloads.get(workload).NETWORK_KNOBS
    unknown = [name for name in knobs if name not in known]
    if unknown:
        raise ModelingError(
            f"unknown network setting(s) {', '.join(unknown)}; "
            f"known: {', '.join(known)} (the {workload} workload)"
        )
    return knobs


def _last_fitting(bounds: np.ndarray, budget_bytes: int) -> int | None:
    """Index of the last entry before the first bound over budget; None if the first is over."""
    over = np.flatnonzero(~(np.asarray(bounds, dtype=float) <= budget_bytes))
    if len(over) == 0:
        return len(bounds) - 1
    return None if over[0] == 0 else int(over[0] - 1)
