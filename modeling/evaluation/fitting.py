"""Fit each model on all measured runs for use, bounded by held-out predictions per configuration.

The evaluation fits every model many times on parts of the data to score it;
what the dashboard and the sizing answers use is one more fit per model on
*all* the runs (settings again chosen on a validation split carved from them).
Its upper bounds come from the calibration folds (`modeling.evaluation.conformal`):
grouped cross-conformal folds for the bound inside the measured range, and
forward-chaining folds by image size for the bound beyond it, each scored once
per distinct configuration. `with_calibration` adds those held-out predictions
to an evaluation (so they are stored with it); `fit_predictors` then reads them.
The folds' models were fit on less data than the final one, which errs on the
safe side.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import pandas as pd

from modeling.errors import ModelingError
from modeling.estimators.catalogue import ModelSpec
from modeling.evaluation import conformal
from modeling.evaluation.bounds import DEFAULT_COVERAGE, min_calibration_size
from modeling.evaluation.conformal import CALIBRATION_SPLITS, CV, FORWARD, CalibrationCheck
from modeling.evaluation.protocol import Evaluation
from modeling.evaluation.selection import fit_with_selection
from modeling.evaluation.splits import RANDOM
from modeling.stored.predictor import Predictor, TrainingRange

FINAL_SEED = 0


def with_calibration(
    evaluation: Evaluation,
    frame: pd.DataFrame,
    specs: Sequence[ModelSpec],
    progress: Callable[[str], None] | None = None,
) -> Evaluation:
    """``evaluation`` with every spec's cv and forward held-out predictions added.

    ``frame`` must be the runs ``evaluation`` scored. The scores (and so the MAPE
    tables) are untouched: they stay about the random and extrapolation splits.
    ``seeds`` gains "cv" and "forward": their fold numbers.
    """
    added = conformal.calibrate(frame, specs, progress)
    kept = evaluation.predictions[~evaluation.predictions["split"].isin(CALIBRATION_SPLITS)]
    seeds = dict(evaluation.seeds)
    for split in CALIBRATION_SPLITS:
        folds = sorted(added.loc[added["split"] == split, "seed"].unique().tolist())
        seeds[split] = tuple(int(fold) for fold in folds)
    return dataclasses.replace(
        evaluation,
        predictions=pd.concat([kept, added], ignore_index=True),
        seeds=seeds,
    )


def calibration_checks(
    evaluation: Evaluation, frame: pd.DataFrame, model: str, coverage: float = DEFAULT_COVERAGE
) -> dict[str, CalibrationCheck]:
    """``model``'s bound and leave-one-configuration-out coverage per calibration ("cv", ...)."""
    return {
        split: conformal.check(evaluation.predictions, frame, model, split, coverage)
        for split in CALIBRATION_SPLITS
    }


def checked_coverage(
    evaluation: Evaluation, frame: pd.DataFrame, model: str, coverage: float = DEFAULT_COVERAGE
) -> dict[str, float | None]:
    """Calibration ("cv", "forward") -> share of configurations its bound covered unseen.

    Each configuration is checked against the bound calibrated on the others
    (`bounds.leave_one_out_coverage`); None where too few configurations.
    """
    checks = calibration_checks(evaluation, frame, model, coverage)
    return {split: check.coverage_checked for split, check in checks.items()}


def fit_predictor(
    spec: ModelSpec,
    frame: pd.DataFrame,
    evaluation: Evaluation,
    coverage: float = DEFAULT_COVERAGE,
) -> Predictor:
    """``spec`` fit on every run of ``frame``, bounded by ``evaluation``'s calibration folds.

    ``evaluation`` must hold the calibration (`with_calibration`) of the same ``frame``.
    """
    predictions = evaluation.predictions
    mine = predictions[(predictions["model"] == spec.name) & (predictions["split"] == CV)]
    if mine.empty:
        raise ModelingError(
            f"the evaluation holds no cross-conformal predictions of {spec.name!r} to bound it "
            "with; add them with modeling.evaluation.fitting.with_calibration"
        )
    checks = calibration_checks(evaluation, frame, spec.name, coverage)
    bound = checks[CV].bound
    if bound is None:
        raise ModelingError(
            f"only {checks[CV].n_configurations} distinct configuration(s) to calibrate "
            f"{spec.name!r} on; a {coverage:.0%} bound needs {min_calibration_size(coverage)}: "
            "measure more (memplan sweep)"
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
        extrapolation_bound=checks[FORWARD].bound,
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
