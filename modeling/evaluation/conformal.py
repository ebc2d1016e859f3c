"""Held-out predictions to calibrate the upper bounds on, counted by configuration.

A bound's evidence is the ratio measured / predicted on configurations the
model was not fit on (`modeling.evaluation.bounds`). Two calibrations, each
giving every distinct configuration at most one held-out prediction per model:

* **cv** — grouped cross-conformal: `CV_FOLDS` folds from scikit-learn's
  ``GroupKFold`` grouped by configuration (`splits.point_ids`), so the repeats of
  a configuration are always held out together; each fold is predicted by the
  model fit on the other folds. The bound inside the measured range.
* **forward** — forward-chaining by image size: for every size after the first
  `MIN_FORWARD_TRAIN_SIDES`, fit on all smaller sizes and predict that size. Every
  test point is larger than everything its model saw: the bound beyond the range.

Each fold is fit and predicted exactly as the evaluation fits and predicts a
split (`protocol.score_split`: settings chosen on validation rows carved from
the fold's training rows only). The conformity score is one per distinct
configuration — the largest ratio over its repeated runs, which is
conservative and makes the scores exchangeable by configuration — so
``n_calibration`` counts configurations, never a run once per seed.

The bound inside the range also reads the evaluation's random splits
(`POOLED`): a configuration's score is its largest ratio over *every* model
that predicted it without having seen it, the cv fold's and those of the random
splits that held it out. One fold model's residual understates how much a
model fit on other runs can miss, and a bound that tight was below the truth
more often than it said: on the oneDNN-off knob data the cv scores alone gave
x1.093 and covered 80.3% of the random splits' 71 held-out runs (p = 0.01
against 90%); pooled, x1.103, 84.5% (`benchmarks.accuracy`, data/REFERENCE.md).
This is the idea of Barber et al.'s CV+ (the fold models' spread enters the
bound) at the cost of nothing but the predictions the evaluation already made.

Why not MAPIE directly: MAPIE's regressors take a grouped splitter and custom
conformity scores, but they refit one estimator with fixed settings on every
fold, while these models choose their settings inside each fold
(`fit_with_selection`, on a validation split of the fold's training rows) and
are built from the training rows they get; nor does MAPIE reduce the scores to
one per configuration. What is done here is MAPIE's "CV" method (out-of-fold
scores, the final model fit on all the data; ``method="base"`` with K folds),
with folds grouped by configuration and a ratio score. Be clear what that
gives: the split-conformal guarantee does not carry over exactly, since the
final model is not the one the scores came from. Barber et al. (2021, "Predictive
inference with the jackknife+") prove coverage of at least 1 - 2 alpha only for
CV+, and show the plain CV/jackknife form can fall short for unstable models.
Whether it holds for these models is an empirical question:
`bounds.leave_one_out_coverage` checks it on the data (`benchmarks.accuracy`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from modeling.errors import ModelingError
from modeling.evaluation.bounds import (
    DEFAULT_COVERAGE,
    ConformalBound,
    bound_from_scores,
    conformal_quantile,
    leave_one_out_coverage,
    min_calibration_size,
    ratios,
    upper_bound,
)
from modeling.evaluation.protocol import PREDICTION_COLUMNS, score_or_explain
from modeling.evaluation.splits import (
    EXTRAPOLATION,
    RANDOM,
    SIDE_DECIMALS,
    Split,
    point_ids,
)

if TYPE_CHECKING:  # the catalogue imports every estimator: only calibrating needs it
    from modeling.estimators.catalogue import ModelSpec

CV = "cv"
FORWARD = "forward"
CALIBRATION_SPLITS = (CV, FORWARD)
# Folds of the cross-conformal calibration (fewer when there are fewer configurations).
CV_FOLDS = 5
# Forward folds start once this many image sizes can be fit on.
MIN_FORWARD_TRAIN_SIDES = 3
# How each calibration's fold chooses a model's settings (`selection.validation_split`):
# cv like the random split (a random quarter), forward like extrapolation (the largest size).
_SELECTION_KIND = {CV: RANDOM, FORWARD: EXTRAPOLATION}
# The held-out predictions each bound is calibrated on (module docstring): inside the
# range, the cv folds' and the random splits'; beyond it, the forward folds'.
POOLED: dict[str, tuple[str, ...]] = {CV: (CV, RANDOM), FORWARD: (FORWARD,)}


@dataclass(frozen=True)
class CalibrationCheck:
    """One model's bound from one calibration and how often it covered unseen configurations."""

    bound: ConformalBound | None  # None: too few configurations for the coverage
    n_configurations: int
    coverage_checked: float | None  # leave-one-configuration-out share covered; None: too few


def cv_splits(frame: pd.DataFrame, folds: int = CV_FOLDS) -> list[Split]:
    """``folds`` (fewer with fewer configurations) grouped folds: a configuration is never split.

    Split ``kind`` is the random split's, as each fold chooses settings like it; ``seed`` is
    the fold number.
    """
    groups = point_ids(frame).to_numpy()
    n_groups = len(np.unique(groups))
    if n_groups < 2:
        raise ValueError(f"need at least 2 distinct configurations for folds, got {n_groups}")
    # Imported here: the sizing report reads this module's split names, and scikit-learn's
    # and SciPy's imports took ~2 s of ``memplan size``'s cold start on 2 cores.
    from sklearn.model_selection import GroupKFold

    kfold = GroupKFold(n_splits=min(folds, n_groups))
    index = frame.index.astype(str)
    return [
        Split(RANDOM, fold, tuple(index[train]), tuple(index[test]))
        for fold, (train, test) in enumerate(kfold.split(frame, groups=groups))
    ]


def forward_splits(
    frame: pd.DataFrame, min_train_sides: int = MIN_FORWARD_TRAIN_SIDES
) -> list[Split]:
    """One fold per image size after the first ``min_train_sides``: fit below it, test on it.

    Empty when there are no more sizes than ``min_train_sides``. Split ``kind`` is the
    extrapolation split's (settings chosen on the largest training size); ``seed`` is the
    fold number.
    """
    sides = frame["side"].round(SIDE_DECIMALS).to_numpy()
    distinct = np.sort(np.unique(sides))
    index = frame.index.astype(str)
    return [
        Split(EXTRAPOLATION, fold, tuple(index[sides < side]), tuple(index[sides == side]))
        for fold, side in enumerate(distinct[min_train_sides:])
    ]


def calibration_splits(frame: pd.DataFrame) -> dict[str, list[Split]]:
    """The folds of each calibration (`CALIBRATION_SPLITS`) of ``frame``."""
    return {CV: cv_splits(frame), FORWARD: forward_splits(frame)}


def calibrate(
    frame: pd.DataFrame,
    specs: Sequence[ModelSpec],
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """Every spec's held-out predictions on the cv and forward folds (`PREDICTION_COLUMNS`).

    ``split`` is "cv" or "forward" and ``seed`` the fold number; append the rows to an
    evaluation's predictions (`modeling.evaluation.fitting.with_calibration`) so they are
    stored with it and the final models take their bounds from them.
    """
    predictions: list[pd.DataFrame] = []
    for name, folds in calibration_splits(frame).items():
        for split in folds:
            for spec in specs:
                if progress:
                    progress(f"{name} calibration, fold {split.seed}: {spec.name}")
                where = f"{name} calibration fold {split.seed}"
                _, held_out = score_or_explain(spec, frame, split, where, "")
                predictions.append(held_out.assign(split=name))
    if not predictions:
        return pd.DataFrame(columns=list(PREDICTION_COLUMNS))
    return pd.concat(predictions, ignore_index=True)[list(PREDICTION_COLUMNS)]


def configuration_scores(
    predictions: pd.DataFrame, frame: pd.DataFrame, model: str, split: str
) -> np.ndarray:
    """``model``'s conformity scores for calibration ``split``: one per distinct configuration.

    The largest ratio measured / predicted over the configuration's held-out
    predictions in the splits `POOLED` under ``split`` (+inf where a prediction is
    not positive). ``frame`` maps run ids to configurations.
    """
    return _scores_by_configuration(predictions, frame, model, split).to_numpy(dtype=float)


def _configurations(frame: pd.DataFrame) -> pd.Series:
    """Run id -> configuration number (`splits.point_ids`)."""
    configuration = point_ids(frame)
    configuration.index = frame.index.astype(str)
    return configuration


def _scores_by_configuration(
    predictions: pd.DataFrame,
    frame: pd.DataFrame,
    model: str,
    split: str,
    leave_out_seed: int | None = None,
) -> pd.Series:
    """Configuration -> score for calibration ``split``, optionally without one random seed."""
    pooled = predictions["split"].isin(POOLED[split])
    if leave_out_seed is not None:
        pooled &= ~((predictions["split"] == RANDOM) & (predictions["seed"] == leave_out_seed))
    mine = predictions[(predictions["model"] == model) & pooled]
    configuration = _configurations(frame)
    unknown = set(mine["run_id"].astype(str)) - set(configuration.index)
    if unknown:
        raise ModelingError(
            f"{len(unknown)} held-out run(s) of {model!r} are not in the frame given "
            f"(e.g. {sorted(unknown)[0]}); calibrate and fit on the same runs"
        )
    scores = pd.Series(
        ratios(mine["measured_bytes"].to_numpy(), mine["predicted_bytes"].to_numpy()),
        index=configuration.loc[mine["run_id"].astype(str)].to_numpy(),
    )
    return scores.groupby(level=0).max()


# A split's bounds under-state their risk when, at a true miss rate of 1 - coverage,
# as many misses or more would happen less often than this (one-sided binomial test).
UNDERSTATED_P_VALUE = 0.05


@dataclass(frozen=True)
class SplitCoverage:
    """How many of a split's held-out runs stayed at or under the bound a user would get."""

    covered: int
    tested: int
    coverage: float  # the bound's stated coverage, e.g. 0.9

    @property
    def share(self) -> float:
        return self.covered / self.tested

    @property
    def p_value(self) -> float:
        """The chance of this many misses or more if the bound missed 1 - coverage of runs."""
        from scipy.stats import binomtest  # here: SciPy's import is slow, see `cv_splits`

        misses = self.tested - self.covered
        return float(binomtest(misses, self.tested, 1 - self.coverage, "greater").pvalue)

    @property
    def understated(self) -> bool:
        """The bound missed more often than its coverage allows (`UNDERSTATED_P_VALUE`).

        Approximate: a configuration held out by several seeds counts once per seed,
        which makes the test quicker to call a bound under-stated, not slower.
        """
        return self.p_value < UNDERSTATED_P_VALUE


def split_coverage(
    predictions: pd.DataFrame,
    frame: pd.DataFrame,
    model: str,
    split: str,
    coverage: float = DEFAULT_COVERAGE,
) -> SplitCoverage | None:
    """How many of an evaluation split's held-out runs are at or under the bound a user would get.

    ``split`` is one the evaluation scores (random, extrapolation, knob). For each of
    its seeds, the multiplier is calibrated on the configurations that seed did *not*
    hold out, never on that seed's own predictions: the cv one for the random split
    (pooled with the other random seeds, `POOLED`); for the extrapolation and knob splits,
    whose test points lie beyond what their model saw (a larger image, a knob value
    never fitted), the larger of cv and forward, as `Predictor.bound_for` chooses.
    The prediction it multiplies is the split's own (a model that never saw the
    point). None when no seed leaves enough configurations to calibrate on.
    """
    rows = predictions[(predictions["model"] == model) & (predictions["split"] == split)]
    configuration = _configurations(frame)
    calibrations = [CV] if split == RANDOM else [CV, FORWARD]

    def calibration_scores(leave_out_seed: int | None) -> dict[str, pd.Series]:
        return {
            name: _scores_by_configuration(predictions, frame, model, name, leave_out_seed)
            for name in calibrations
        }

    # Only a random split's own predictions are pooled, so only its seeds need their own.
    shared = None if split == RANDOM else calibration_scores(None)
    covered: list[bool] = []
    for seed, held_out in rows.groupby("seed"):
        scores = shared if shared is not None else calibration_scores(int(seed))
        tested = set(configuration.loc[held_out["run_id"].astype(str)])
        multipliers = [
            conformal_quantile(others.to_numpy(dtype=float), coverage)
            for others in (mine[~mine.index.isin(tested)] for mine in scores.values())
            if len(others) >= min_calibration_size(coverage)
        ]
        if not multipliers:
            continue
        upper = upper_bound(held_out["predicted_bytes"].to_numpy(), max(multipliers))
        covered.extend((held_out["measured_bytes"].to_numpy() <= upper).tolist())
    if not covered:
        return None
    return SplitCoverage(covered=int(np.sum(covered)), tested=len(covered), coverage=coverage)


def _source(split: str, n_folds: int, n_random: int, n_configurations: int) -> str:
    if split == CV:
        random = f" and {n_random} random splits" if n_random else ""
        return f"{n_folds}-fold cross-conformal{random}, {n_configurations} distinct configurations"
    return (
        f"forward-chaining by image size, {n_folds} folds, "
        f"{n_configurations} distinct configurations"
    )


def check(
    predictions: pd.DataFrame, frame: pd.DataFrame, model: str, split: str, coverage: float
) -> CalibrationCheck:
    """``model``'s bound from its ``split`` ("cv" or "forward") predictions, and its check.

    The bound is None with fewer configurations than `bounds.min_calibration_size`.
    """
    if split not in CALIBRATION_SPLITS:
        raise ValueError(f"calibration {split!r} is not one of {', '.join(CALIBRATION_SPLITS)}")
    scores = configuration_scores(predictions, frame, model, split)
    if len(scores) < min_calibration_size(coverage):
        return CalibrationCheck(None, len(scores), None)
    mine = predictions[predictions["model"] == model]
    folds = int(mine.loc[mine["split"] == split, "seed"].nunique())
    random = int(mine.loc[mine["split"] == RANDOM, "seed"].nunique()) if split == CV else 0
    source = _source(split, folds, random, len(scores))
    return CalibrationCheck(
        bound_from_scores(scores, coverage, source),
        len(scores),
        leave_one_out_coverage(scores, coverage),
    )
