"""The closed-form floor under every bound a sizing answer, a page or the sweep's pre-check uses.

Every measured run needed more than the refined
analytical model (`core.analytical`) says, by 6-29% on the reference
data; a fitted formula that predicts less, typically far outside the measured
range, is extrapolating nonsense. So a bound below the refined closed-form
estimate is replaced, and the answer says so: not by that estimate, which
every run exceeded and which is therefore no bound, but by it times the most
any run the model was fitted on exceeded it (`replace_below_floor`). With
oneDNN on, an AVX2 EPYC's runs exceeded it by up to 1.33x; 176^3 at batch 2,
six times their largest image x batch, measured 1.10x it (docs/data.md).
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


def closed_form_floor(model: SizingModel, configs: Sequence[WorkloadConfig]) -> np.ndarray:
    """The refined closed-form estimate, bytes, with the model's measured framework baseline."""
    framework = int(model.training_range.framework_bytes)
    return np.array([refined_breakdown(c, framework).total_bytes for c in configs], dtype=float)


def ceiling_factor(model: SizingModel) -> float:
    """The most a run the model was fitted on peaked above the refined closed form, as a
    factor (`TrainingRange.closed_form_excess`); 1 where that is unknown or below 1."""
    excess = model.training_range.closed_form_excess
    return max(1.0, float(excess)) if excess is not None else 1.0


def replace_below_floor(
    model: SizingModel, configs: Sequence[WorkloadConfig], bounds: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(bounds, raised): the model's upper ``bounds`` for ``configs``, each one below
    `closed_form_floor` replaced by that floor times `ceiling_factor`. The floor alone
    would be a bound that every measured run exceeded; this is as far above it as any
    of them went. Every answer, the pages' bounds and the sweep's pre-check use it.
    Then each is widened for knob values the profile never measured
    (`TrainingRange.widening`): after the floor, so no bound narrows for them."""
    floor = closed_form_floor(model, configs)
    raised = bounds < floor
    widening = np.array([model.training_range.widening(c) for c in configs], dtype=float)
    return np.where(raised, floor * ceiling_factor(model), bounds) * widening, raised
