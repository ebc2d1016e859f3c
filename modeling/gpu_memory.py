"""GPU memory of a training configuration: what the tensors need, and a bound on what fits.

Fitted to the runs of one GPU profile (`core.profiles`: one device, its software and
allocator setting), measured as ``runs`` rows whose target is GPU memory
(`core.targets`). Pure: it takes runs, never a database.

Which figure decides a fit (docs/predictions.md, "GPU memory")
--------------------------------------------------------------
A configuration fits a GPU when the tensors' peak (``allocated_peak_bytes``), the
fragmentation the caching allocator cannot give back, the CUDA context and the
libraries' workspaces fit the memory the framework reports as usable
(``gpu_total_bytes``). ``reserved_peak_bytes`` is not that need: under pressure the
allocator frees cached blocks and retries before it fails, so part of it can be given
back; ``nvml_used_peak_bytes`` is reserved plus context plus workspaces: what the device
had in use, an upper figure of the same kind. So the model predicts *allocated* and
gives two figures around the need:

* ``floor_bytes``: allocated (at its lowest measured ratio to the line) plus the
  context: below it no allocator setting trains the configuration, so a GPU with less
  usable memory does not fit it;
* ``bound_bytes``: allocated (at its highest measured ratio to the line) times the
  largest measured reserved / allocated ratio, plus the largest measured
  device-used-over-reserved (context and workspaces): at least what the device had in
  use when it trained, so a GPU with that much usable memory fits it.

Between the two the allocator may or may not give enough back: verify first. The
bound is the default allocator's, as measured; ``expandable_segments:True`` lowers the
fragmentation, but no run measured by how much, so it is not a figure here
(`application.gpu_sizing` says so).

The line
--------
Per network (workload and every knob, precision included) the allocated peak is a line
in the input's elements times the batch (``elements``): the weights and optimizer
slots are the intercept, the activations the slope. On the H200 the U-Net's 256^3 at
batch 1 and 128^3 at batch 8 allocate the same bytes, to the byte. It is fitted by
least squares on relative error (weights 1/y), so small configurations count as much
as large ones. A shape the runs did not measure is answered only where the runs
measured more than one shape: AlexNet's fully connected layers grow with its image,
and one measured shape says nothing of how.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from core import targets, workloads
from core.workloads.base import WorkloadConfig
from modeling.errors import ModelingError

# A line needs two points; fewer and the network is not answered.
MIN_RUNS = 2
# The floor's allocated part is the line at its lowest left-out ratio, less this share: in
# the H200's random splits that ratio alone overstated a held-out run's allocated peak by
# up to 3.2% (5.5% of them), and a floor too high says "does not fit" of what trains.
FLOOR_ALLOWANCE = 0.05
# A figure this many times the largest measured elements (or fewer than the smallest) is
# beyond the measured range.
INSIDE_TOLERANCE = 1.0 + 1e-9


def network_key(config: WorkloadConfig) -> tuple[Any, ...]:
    """What a line is fitted per: the workload and every knob (precision among them)."""
    module = workloads.of(config)
    return (config.workload, *((knob, getattr(config, knob)) for knob in module.NETWORK_KNOBS))


def elements(config: WorkloadConfig) -> int:
    """The input's elements times the batch: what the activations grow with."""
    return math.prod(config.image_shape) * config.batch_size


@dataclass(frozen=True)
class GpuLine:
    """The fitted line of one network on one GPU profile, and the measured ratios around it."""

    key: tuple[Any, ...]
    fixed_bytes: float  # allocated's intercept: weights, gradients, optimizer slots
    bytes_per_element: float  # allocated's slope: activations per input element
    used_fixed_bytes: float  # device used's intercept (the context among it)
    used_bytes_per_element: float  # device used's slope
    low_ratio: float  # the smallest left-out allocated / its line (<= 1): the floor's
    high_ratio: float  # the largest left-out allocated / its line (>= 1)
    used_high_ratio: float  # the largest left-out device used / its line (>= 1)
    reserved_ratio: float  # the largest measured reserved / allocated
    overhead_bytes: int  # the largest measured device used - reserved: context, workspaces
    context_bytes: int  # the largest measured CUDA context
    elements_range: tuple[int, int]  # the smallest and largest measured elements
    shapes: tuple[tuple[int, ...], ...]  # the measured image shapes
    run_count: int

    def allocated_bytes(self, count: int) -> float:
        """The allocated line at ``count`` elements (the input's elements times the batch)."""
        return max(self.fixed_bytes + self.bytes_per_element * count, 1.0)

    def used_bytes(self, count: int) -> float:
        """The device-used line at ``count`` elements."""
        return max(self.used_fixed_bytes + self.used_bytes_per_element * count, 1.0)


@dataclass(frozen=True)
class GpuNeed:
    """What one configuration needs on the profile's GPU (bytes) and how it was found."""

    config: WorkloadConfig
    allocated_bytes: int  # the line: what the tensors need at their peak
    floor_bytes: int  # less usable memory than this does not fit it
    bound_bytes: int  # this much usable memory fits it
    inside: bool  # within the measured elements and shapes
    beyond_factor: float  # measured elements range to the asked one: 1.0 inside
    run_count: int  # the runs the line was fitted to


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of ``y`` on ``x`` by least squares on relative error; slope >= 0.

    The weighted normal equations in closed form (weights 1/y^2 on squared residuals):
    the evaluations refit thousands of times, and numpy's polyfit costs 0.2 ms a call.
    """
    weights = 1.0 / (y * y)
    total, sx, sy = weights.sum(), (weights * x).sum(), (weights * y).sum()
    sxx, sxy = (weights * x * x).sum(), (weights * x * y).sum()
    spread = total * sxx - sx * sx
    if len(set(x)) < MIN_RUNS or spread <= 0:
        return float(np.median(y)), 0.0
    slope = (total * sxy - sx * sy) / spread
    if slope <= 0:
        return float(np.median(y)), 0.0
    return float((sy - slope * sx) / total), float(slope)


def _loo_ratios(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Each run's measured / the line fitted without it (the line of all where too few remain).

    Left-out ratios, not the fitted ones: a line passes closer to the runs it was fitted
    to than to the next one, so the spread it saw understates the spread it will meet.
    """
    ratios = []
    for i in range(len(x)):
        keep = np.arange(len(x)) != i
        fixed, slope = _fit(x[keep], y[keep]) if len(set(x[keep])) >= MIN_RUNS else _fit(x, y)
        ratios.append(y[i] / max(fixed + slope * x[i], 1.0))
    return np.array(ratios)


@dataclass(frozen=True)
class GpuPoint:
    """One ``ok`` GPU-memory run as the model reads it (bytes)."""

    config: WorkloadConfig
    key: tuple[Any, ...]  # `network_key`
    elements: int
    allocated: int
    reserved: int
    used: int  # nvml_used_peak_bytes
    context: int


def points_of(runs: pd.DataFrame) -> list[GpuPoint]:
    """The ``ok`` GPU-memory runs of ``runs`` (RUN_COLUMNS) as `GpuPoint` s, in order."""
    if runs.empty:
        return []
    ok = runs[(runs["status"] == "ok") & (runs[targets.TARGET_COLUMN] == targets.GPU_MEMORY)]
    points = []
    for row in ok.to_dict("records"):
        config = workloads.config_from_row(row)
        points.append(
            GpuPoint(
                config=config,
                key=network_key(config),
                elements=elements(config),
                allocated=int(row["allocated_peak_bytes"]),
                reserved=int(row["reserved_peak_bytes"]),
                used=int(row["nvml_used_peak_bytes"]),
                context=int(row["context_bytes"]),
            )
        )
    return points


def _line_of(key: tuple[Any, ...], points: list[GpuPoint]) -> GpuLine:
    """The lines of one network, fitted to its points."""
    x = np.array([p.elements for p in points], dtype=float)
    allocated = np.array([p.allocated for p in points], dtype=float)
    used = np.array([p.used for p in points], dtype=float)
    reserved = np.array([p.reserved for p in points], dtype=float)
    fixed, slope = _fit(x, allocated)
    used_fixed, used_slope = _fit(x, used)
    left_out = _loo_ratios(x, allocated)
    return GpuLine(
        key=key,
        fixed_bytes=fixed,
        bytes_per_element=slope,
        used_fixed_bytes=used_fixed,
        used_bytes_per_element=used_slope,
        low_ratio=min(1.0, float(np.min(left_out))),
        high_ratio=max(1.0, float(np.max(left_out))),
        used_high_ratio=max(1.0, float(np.max(_loo_ratios(x, used)))),
        reserved_ratio=float(np.max(reserved / allocated)),
        overhead_bytes=int(max(0.0, float(np.max(used - reserved)))),
        context_bytes=max(p.context for p in points),
        elements_range=(int(x.min()), int(x.max())),
        shapes=tuple(sorted({tuple(p.config.image_shape) for p in points})),
        run_count=len(points),
    )


def fit_lines(points: list[GpuPoint]) -> dict[tuple[Any, ...], GpuLine]:
    """One `GpuLine` per network of ``points`` (of ONE GPU profile); fewer than MIN_RUNS: none."""
    groups: dict[tuple[Any, ...], list[GpuPoint]] = {}
    for point in points:
        groups.setdefault(point.key, []).append(point)
    return {key: _line_of(key, group) for key, group in groups.items() if len(group) >= MIN_RUNS}


class GpuMemoryModel:
    """Allocated peak, floor and bound of a configuration on one GPU profile.

    ``fit(runs)`` takes the runs of one GPU profile (RUN_COLUMNS; other targets and
    statuses are left out) and returns self; ``need(config)`` gives a `GpuNeed`, or None
    for a network, or a shape, the runs cannot answer.
    """

    def __init__(self) -> None:
        self.lines_: dict[tuple[Any, ...], GpuLine] | None = None

    def fit(self, runs: pd.DataFrame) -> GpuMemoryModel:
        kinds = runs[targets.TARGET_COLUMN].unique() if len(runs) else []
        if any(kind != targets.GPU_MEMORY for kind in kinds):
            raise ModelingError("a GPU memory model is fitted to GPU-memory runs only")
        return self.fit_points(points_of(runs))

    def fit_points(self, points: list[GpuPoint]) -> GpuMemoryModel:
        """`fit` on runs already read as points (`points_of`): what evaluations refit."""
        self.lines_ = fit_lines(points)
        return self

    def line(self, config: WorkloadConfig) -> GpuLine | None:
        """The line that answers for ``config``'s network, or None."""
        if self.lines_ is None:
            raise ModelingError("the GPU memory model is not fitted; call fit(runs) first")
        return self.lines_.get(network_key(config))

    def need(self, config: WorkloadConfig) -> GpuNeed | None:
        """What ``config`` needs, or None where no line answers (network or shape unmeasured)."""
        line = self.line(config)
        if line is None:
            return None
        if len(line.shapes) == 1 and tuple(config.image_shape) != line.shapes[0]:
            return None  # one measured shape says nothing of how the need moves with the shape
        return need_on(line, config)


def need_on(line: GpuLine, config: WorkloadConfig) -> GpuNeed:
    """``config``'s need by ``line`` (its network's): the line, its floor and its bound."""
    count = elements(config)
    allocated = line.allocated_bytes(count)
    low, high = line.elements_range
    beyond = max(count / high, low / count, 1.0)
    return GpuNeed(
        config=config,
        allocated_bytes=round(allocated),
        floor_bytes=math.floor(allocated * line.low_ratio * (1 - FLOOR_ALLOWANCE))
        + line.context_bytes,
        bound_bytes=bound_of(line, count),
        inside=beyond <= INSIDE_TOLERANCE,
        beyond_factor=beyond,
        run_count=line.run_count,
    )


def bound_of(line: GpuLine, count: int) -> int:
    """The bound at ``count`` elements: the larger of the device-used line at its highest
    left-out ratio and the allocated line at its highest, times the largest reserved /
    allocated ratio, plus the largest context and workspaces. Two readings of the same
    measurements, because neither alone covered every left-out run: the device-used line
    misses where fragmentation grows with the batch (AlexNet: reserved 1.2x allocated at
    batch 32, 2.4x at 1024), the ratio where the line itself bends."""
    by_used = line.used_bytes(count) * line.used_high_ratio
    by_ratio = line.allocated_bytes(count) * line.high_ratio * line.reserved_ratio
    return math.ceil(max(by_used, by_ratio + line.overhead_bytes))
