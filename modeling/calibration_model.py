"""A calibrated profile's model: the nearest profile's, transferred, stored like any model.

`calibrated_predictor` turns the line `modeling.calibration_choice` fits (peak = a + b
* prior(x)) into a `Predictor` whose estimator is a `CalibratedTransfer` (stored as
data: `modeling.stored.codec`, type ``calibrated``). Its bound is honest about how
few points stand behind it: the largest of the points' leave-one-out ratios (peak
over held-out prediction) and the prior's own bound, marked thin evidence; beyond
the measured range, also at least the prior's extrapolation bound. While the
evidence is thin (fewer than 19 points at 90%, so every calibration of at most six:
`modeling.evaluation.bounds.thin_evidence`), the prior's bound counts widened by
the between-profile factor the answer had before any point was measured
(`application.calibration_loop.Prior.widening`): three to six points do not show how
far this machine's peaks stray from the line, and the worst of their leave-one-out
ratios covered 75-88% of the replayed grids' configurations in four of five replays
(docs/machines.md). `application.calibration_loop` stores it
as an evaluation of the profile (one model, its leave-one-out scores and
predictions), so `memplan size` and the pages answer for the profile as for any.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from modeling.calibration_choice import fit_transfer, leave_one_out
from modeling.estimators.calibrated import CalibratedTransfer
from modeling.evaluation.bounds import DEFAULT_COVERAGE, ConformalBound, thin_evidence
from modeling.evaluation.protocol import PREDICTION_COLUMNS, Evaluation, Score, data_fingerprint
from modeling.features import TARGET_COLUMN
from modeling.stored.predictor import Predictor, TrainingRange

NAME = "calibrated"
TITLE = "Nearest profile's model, calibrated (a + b x prior)"
KIND = "calibrated transfer"
# The split its scores are stored under: each measured point held out once.
SPLIT = "leave-one-out"


def _bound(ratios: np.ndarray, floor: float, source: str) -> ConformalBound:
    worst = float(np.max(ratios)) if len(ratios) else 1.0
    return ConformalBound(DEFAULT_COVERAGE, max(worst, floor, 1.0), len(ratios), source)


def calibrated_predictor(
    prior: Predictor,
    frame: pd.DataFrame,
    prior_bytes: np.ndarray,
    chosen: Sequence[Mapping[str, object]] = (),
    widening: float = 1.0,
) -> Predictor:
    """The calibrated model of the runs ``frame`` (`modeling.features.measured_frame`, one row
    per measured point, peaks in TARGET_COLUMN), whose prior predictions are ``prior_bytes``.

    chosen : the points this calibration chose and why (side, batch, width, among, why),
    kept in its ``params_json`` for the pages (`presentation.calibration_view`).
    widening : the between-profile factor of the prior's answer for this machine (>= 1),
    which widens the prior's bound while the points are too few for a conformal one.
    """
    peaks = frame[TARGET_COLUMN].to_numpy(dtype=float)
    fit = fit_transfer(prior_bytes, peaks)
    held = leave_one_out(prior_bytes, peaks)
    ratios = peaks / held if len(held) else np.array([], dtype=float)
    thin = thin_evidence(len(ratios), DEFAULT_COVERAGE)
    factor = max(widening, 1.0) if thin else 1.0
    widened = f" x{factor:.3f} for another machine (thin evidence)" if factor > 1 else ""
    source = (
        f"worst of {len(ratios)} leave-one-out ratios of the calibration points, "
        f"at least the prior's own x{prior.bound.ratio:.3f} ({prior.name}){widened}"
    )
    bound = _bound(ratios, prior.bound.ratio * factor, source)
    # Beyond the points, at least the prior's own extrapolation bound: the line is measured
    # here, the shape beyond it is the prior's.
    beyond = (prior.extrapolation_bound.ratio if prior.extrapolation_bound else 1.0) * factor
    extrapolation = _bound(ratios, beyond, source + f", and beyond the points x{beyond:.3f}")
    # The prior reads its features with the L3 cache of its own runs: kept, so that
    # prior(x) is what the calibration fitted against.
    measured = TrainingRange.of(frame)
    training_range = TrainingRange(
        **{**measured.__dict__, "l3_cache_bytes": prior.training_range.l3_cache_bytes}
    )
    estimator = CalibratedTransfer(offset=fit.offset, scale=fit.scale, prior=prior.estimator)
    params = {
        "offset_bytes": fit.offset,
        "scale": fit.scale,
        "prior": prior.name,
        "chosen": [dict(step) for step in chosen],
    }
    return Predictor(
        name=NAME,
        title=TITLE,
        kind=KIND,
        estimator=estimator,
        columns=prior.columns,
        bound=bound,
        extrapolation_bound=extrapolation,
        training_range=training_range,
        params_json=json.dumps(params),
        formula=f"{fit.offset / 2**30:.4f} GiB + {fit.scale:.4f} x {prior.name}",
    )


def calibration_evaluation(frame: pd.DataFrame, prior_bytes: Any) -> Evaluation:
    """The leave-one-out evaluation of the calibrated model over ``frame``'s runs (prior
    ``prior_bytes`` each), to store with it (`application.calibration_loop`)."""
    prior_bytes = np.asarray(prior_bytes, dtype=float)
    peaks = frame[TARGET_COLUMN].to_numpy(dtype=float)
    held = leave_one_out(prior_bytes, peaks)
    if not len(held):
        held = fit_transfer(prior_bytes, peaks).predict(prior_bytes)  # in-sample: too few
    errors = np.abs(held - peaks) / peaks * 100
    score = Score(
        model=NAME,
        split=SPLIT,
        seed=0,
        mape_pct=float(errors.mean()),
        r2=float("nan") if len(peaks) < 2 else float(np.corrcoef(held, peaks)[0, 1] ** 2),
        max_ape_pct=float(errors.max()),
        n_train=max(len(peaks) - 1, 1),
        n_test=len(peaks),
        fit_seconds=0.0,
        params_json="{}",
        validation_mape_pct=None,
        formula=None,
    )
    predictions = pd.DataFrame(
        {"model": NAME, "split": SPLIT, "seed": 0, "run_id": frame.index.astype(str)}
        | {"measured_bytes": peaks, "predicted_bytes": held}
    )[list(PREDICTION_COLUMNS)]
    return Evaluation(
        (score,), predictions, len(frame), len(frame), data_fingerprint(frame), {SPLIT: (0,)}
    )
