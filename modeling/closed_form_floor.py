"""The closed-form floor under every bound a sizing answer, a page or the sweep's pre-check uses.

No run the model was fitted on peaked below a share of the refined analytical
model (`core.analytical`): that share, the floor factor, is the least
peak / estimate over those runs, at most 1. TensorFlow's runs reach 0.95-1.27x the
estimate (the bundled profiles' least), so their floor is the estimate itself or
5% under it; PyTorch's need less memory, down to 0.85x on the bundled U-Net, so
theirs is lower. A fitted formula that predicts less than the floor, typically far
outside the measured range, is extrapolating nonsense. So a bound below the floor
is replaced, and the answer says so: not by the floor, which is no bound, but by
the estimate times the most any of those runs exceeded it (`replace_below_floor`).
With oneDNN on, an AVX2 EPYC's runs exceeded it by up to 1.33x; 176^3 at batch 2,
six times their largest image x batch, measured 1.10x it (docs/data.md).

A floor at the estimate itself under a PyTorch model (before the floor factor)
raised bounds its runs did not support: 128^3 at batch 4 measured 8.51 GiB on the
bundled torch profile, and the bound was replaced by the closed form x1.49,
14.84 GiB, because the model's own bound fell below the estimate its runs
undercut.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from core.analytical import refined_breakdown
from core.workloads.base import WorkloadConfig
from modeling.evaluation.bounds import ConformalBound


class SizingModel(Protocol):
    """What sizing needs from a model (`modeling.stored.predictor.Predictor` is one)."""

    name: str

    def point_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray: ...

    def upper_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray: ...

    def bound_for(self, config: WorkloadConfig) -> ConformalBound: ...

    @property
    def training_range(self) -> Any: ...


def closed_form_estimate(model: SizingModel, configs: Sequence[WorkloadConfig]) -> np.ndarray:
    """The refined closed-form estimate, bytes, with the model's measured framework baseline."""
    framework = int(model.training_range.framework_bytes)
    return np.array([refined_breakdown(c, framework).total_bytes for c in configs], dtype=float)


def floor_factor(model: SizingModel) -> float:
    """The least a run the model was fitted on peaked relative to the refined closed form
    (`TrainingRange.closed_form_least`), at most 1; 1 where that is unknown."""
    least = model.training_range.closed_form_least
    return min(1.0, float(least)) if least is not None else 1.0


def ceiling_factor(model: SizingModel) -> float:
    """The most a run the model was fitted on peaked above the refined closed form, as a
    factor (`TrainingRange.closed_form_excess`); 1 where that is unknown or below 1."""
    excess = model.training_range.closed_form_excess
    return max(1.0, float(excess)) if excess is not None else 1.0


def floor_words(model: SizingModel) -> str:
    """The floor in words, for an answer that says its bound was raised from below it."""
    factor = floor_factor(model)
    if factor >= 1:
        return "the refined closed-form estimate, which every run it was fitted on reached"
    return (
        f"the refined closed-form estimate x{factor:.2f}, the least any run it was fitted "
        "on reached"
    )


def replace_below_floor(
    model: SizingModel, configs: Sequence[WorkloadConfig], bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bounds, raised): the model's upper ``bounds`` for ``configs``, each one below
    the floor (`closed_form_estimate` x `floor_factor`) replaced by the estimate times
    `ceiling_factor`. The floor would be a bound that measured runs exceeded; this is
    as far above the estimate as any of them went. Every answer, the pages' bounds and
    the sweep's pre-check use it. Then each is widened for knob values the profile
    never measured (`TrainingRange.widening`): after the floor, so no bound narrows
    for them."""
    estimate = closed_form_estimate(model, configs)
    raised = bounds < estimate * floor_factor(model)
    widening = np.array([model.training_range.widening(c) for c in configs], dtype=float)
    return np.where(raised, estimate * ceiling_factor(model), bounds) * widening, raised
