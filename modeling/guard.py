"""The sweep's pre-check bound from a fitted model, for the points a model covers.

A sweep skips a point whose bound exceeds the memory limit. The closed form with
margins (`profiling.estimate`) must work with no model at all, so it stays on
the high side: on a 125 GiB Xeon it skipped 240x240x144 at batch 8 as 96.34 GiB
against a 94.40 GiB limit, a point that measured 77.5 GiB. Where this machine
has a fitted model, its upper bound is the better pre-check: the default model
(`modeling.stored.tables.best_model_name`) of the machine profile's latest
evaluation, with its conformal ratio; where that falls below the refined closed
form, the closed form times the most a run exceeded it
(`modeling.closed_form_floor.replace_below_floor`); and only for a network the model was
fitted on (every knob value among those it saw). Any other point keeps the
closed form with margins.

profiling and modeling never import each other: a sweep reaches this
through `application.sweep_guard`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from core import workloads
from core.records import PeakBound
from core.workloads.base import WorkloadConfig
from modeling.closed_form_floor import ceiling_factor, floor_words, replace_below_floor
from modeling.stored.predictor import Predictor


def _covers(predictor: Predictor, config: WorkloadConfig) -> bool:
    """Whether the model saw this network (each knob's value), whatever the size and batch."""
    seen = predictor.training_range.knobs
    return all(
        getattr(config, knob) in seen.get(knob, ()) for knob in workloads.of(config).NETWORK_KNOBS
    )


def fitted_bounds(
    predictors: Mapping[str, Predictor], configs: Sequence[WorkloadConfig], profile_key: str
) -> dict[WorkloadConfig, PeakBound]:
    """The fitted upper bound of each of ``configs`` a model of ``profile_key`` covers.

    predictors : each workload's default model for ``profile_key`` (`bundle.load_predictor`
    with ``"best"``), where it has one. A configuration left out has no such model (none
    fitted for this machine or workload, or not for its network): the caller keeps the
    closed form for it.
    """
    bounds: dict[WorkloadConfig, PeakBound] = {}
    for workload in sorted({config.workload for config in configs}):
        predictor = predictors.get(workload)
        if predictor is None:
            continue  # no fitted model here: the closed form is the pre-check
        covered = [c for c in configs if c.workload == workload and _covers(predictor, c)]
        if not covered:
            continue
        uppers, raised = replace_below_floor(
            predictor, covered, np.asarray(predictor.upper_bytes(covered), dtype=float)
        )
        factor = ceiling_factor(predictor)
        for config, upper, below in zip(covered, uppers, raised, strict=True):
            if not np.isfinite(upper):
                continue  # the model predicts nothing usable here
            ratio = predictor.bound_for(config).ratio
            model = f"the {predictor.name} model's upper bound (x{ratio:.2f})"
            source = (
                f"the refined closed form x{factor:.2f}, the most a run exceeded it "
                f"({model} for machine {profile_key} is below {floor_words(predictor)})"
                if below
                else f"{model} for machine {profile_key}"
            )
            bounds[config] = PeakBound(bound_bytes=int(upper), source=source)
    return bounds
