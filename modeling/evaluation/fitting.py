"""Fit each model on all measured runs for use, bounded by the evaluation's held-out residuals.

The evaluation fits every model many times on parts of the data to score it;
what the dashboard and the sizing answers use is one more fit per model on
*all* the runs (settings again chosen on a validation split carved from them).
Its upper bound comes from the held-out residuals the evaluation already
collected: the ratios measured / predicted on the random splits' test points
(pooled over seeds), and separately on the extrapolation split's test points.
Those residuals were made by models fit on less data than the final one, which
errs on the safe side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from modeling.errors import ModelingError
from modeling.estimators.catalogue import ModelSpec
from modeling.evaluation.bounds import (
    DEFAULT_COVERAGE,
    ConformalBound,
    fit_bound,
    min_calibration_size,
)
from modeling.evaluation.protocol import Evaluation
from modeling.evaluation.selection import fit_with_selection
from modeling.evaluation.splits import EXTRAPOLATION, RANDOM
from modeling.stored.predictor import Predictor, TrainingRange

FINAL_SEED = 0


def held_out_bound(
    evaluation: Evaluation, model: str, split: str, coverage: float
) -> ConformalBound | None:
    """The conformal bound from ``model``'s held-out predictions on ``split``; None if too few."""
    rows = evaluation.predictions
    mine = rows[(rows["model"] == model) & (rows["split"] == split)]
    if len(mine) < min_calibration_size(coverage):
        return None
    return fit_bound(
        mine["measured_bytes"].to_numpy(),
        mine["predicted_bytes"].to_numpy(),
        coverage,
        source=f"{len(mine)} held-out {split}-split residuals, {mine['seed'].nunique()} seed(s)",
    )


def cross_seed_coverage(
    evaluation: Evaluation, model: str, coverage: float = DEFAULT_COVERAGE
) -> float | None:
    """How often the random-split bound covers points it was not calibrated on.

    For each seed: calibrate on the other seeds' held-out residuals, leaving out
    every run in this seed's test set, then count this seed's test runs at or
    under the bound. Returns the share over all seeds (None with fewer than 2 seeds).
    """
    rows = evaluation.predictions
    mine = rows[(rows["model"] == model) & (rows["split"] == RANDOM)]
    covered: list[bool] = []
    for seed in mine["seed"].unique():
        test = mine[mine["seed"] == seed]
        calibration = mine[(mine["seed"] != seed) & ~mine["run_id"].isin(test["run_id"])]
        if len(calibration) < min_calibration_size(coverage):
            continue
        bound = fit_bound(
            calibration["measured_bytes"].to_numpy(),
            calibration["predicted_bytes"].to_numpy(),
            coverage,
        )
        upper = bound.upper(test["predicted_bytes"].to_numpy())
        covered.extend((test["measured_bytes"].to_numpy() <= upper).tolist())
    return float(np.mean(covered)) if covered else None


def fit_predictor(
    spec: ModelSpec,
    frame: pd.DataFrame,
    evaluation: Evaluation,
    coverage: float = DEFAULT_COVERAGE,
) -> Predictor:
    """``spec`` fit on every run of ``frame``, with its bounds from ``evaluation``."""
    bound = held_out_bound(evaluation, spec.name, RANDOM, coverage)
    if bound is None:
        raise ModelingError(
            f"the evaluation holds too few random-split residuals of {spec.name!r} for a "
            f"{coverage:.0%} bound (needs {min_calibration_size(coverage)}); run it with more seeds"
        )

    def build(rows: pd.DataFrame, params: dict) -> object:
        return spec.build(rows, params, FINAL_SEED)

    outcome = fit_with_selection(build, spec.candidates, spec.columns, frame, RANDOM, FINAL_SEED)
    estimator = outcome.estimator
    return Predictor(
        name=spec.name,
        title=spec.title,
        kind=spec.kind,
        estimator=estimator,
        columns=outcome.columns,
        bound=bound,
        extrapolation_bound=held_out_bound(evaluation, spec.name, EXTRAPOLATION, coverage),
        training_range=TrainingRange.of(frame),
        params_json=outcome.selection.params_json,
        formula=getattr(estimator, "formula_", None),
        formula_length=getattr(estimator, "formula_length_", None),
        fit_seconds=outcome.fit_seconds,
    )


def fit_predictors(
    specs: Sequence[ModelSpec],
    frame: pd.DataFrame,
    evaluation: Evaluation,
    coverage: float = DEFAULT_COVERAGE,
) -> list[Predictor]:
    """`fit_predictor` for each spec, in order."""
    return [fit_predictor(spec, frame, evaluation, coverage) for spec in specs]
