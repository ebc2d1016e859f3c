"""Calibration folds counted by configuration: grouped cross-conformal and forward-chaining."""

import dataclasses

import numpy as np
import pandas as pd
import pytest

from modeling.errors import ModelingError
from modeling.estimators.catalogue import catalogue, pick
from modeling.evaluation.bounds import ConformalBound
from modeling.evaluation.conformal import (
    CV,
    CV_FOLDS,
    FORWARD,
    MIN_FORWARD_TRAIN_SIDES,
    SplitCoverage,
    calibrate,
    configuration_scores,
    cv_splits,
    forward_splits,
    split_coverage,
)
from modeling.evaluation.fitting import checked_coverage, fit_predictors, with_calibration
from modeling.evaluation.protocol import PREDICTION_COLUMNS, evaluate, summarise
from modeling.evaluation.splits import point_ids
from modeling.features import measured_frame
from presentation.report import bounds_table
from tests.conftest import build_runs

SIDES = (32, 48, 64, 80, 96, 112)
BATCHES = (1, 2, 4, 8)
QUICK = ["refined", "least_squares"]


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    """24 configurations, each measured twice, peaks a little noisy."""
    return measured_frame(build_runs(SIDES, BATCHES, repeats=2, noise=0.02))


@pytest.fixture(scope="module")
def calibrated(frame: pd.DataFrame):
    specs = pick(catalogue(quick=True), QUICK)
    plain = evaluate(frame, specs, seeds=range(2))
    evaluation = with_calibration(plain, frame, specs)
    return specs, evaluation, fit_predictors(specs, frame, evaluation), plain


def _configurations(frame: pd.DataFrame, run_ids: tuple[str, ...]) -> set[int]:
    points = point_ids(frame)
    points.index = frame.index.astype(str)
    return set(points.loc[list(run_ids)].tolist())


def test_cv_folds_never_split_a_configuration_and_hold_each_out_once(frame) -> None:
    folds = cv_splits(frame)

    assert len(folds) == CV_FOLDS
    assert [fold.seed for fold in folds] == list(range(CV_FOLDS))
    held_out = [run for fold in folds for run in fold.test]
    assert sorted(held_out) == sorted(frame.index.astype(str))  # every run, once
    for fold in folds:
        assert not _configurations(frame, fold.train) & _configurations(frame, fold.test)


def test_fewer_configurations_than_folds_give_one_fold_each() -> None:
    small = measured_frame(build_runs((32, 48), (1, 2), repeats=2))

    folds = cv_splits(small)

    assert len(folds) == 4
    assert all(len(_configurations(small, fold.test)) == 1 for fold in folds)


def test_forward_folds_test_only_a_size_larger_than_every_size_fitted(frame) -> None:
    folds = forward_splits(frame)

    assert len(folds) == len(SIDES) - MIN_FORWARD_TRAIN_SIDES
    for fold, side in zip(folds, SIDES[MIN_FORWARD_TRAIN_SIDES:], strict=True):
        trained = frame.loc[list(fold.train), "side"]
        tested = frame.loc[list(fold.test), "side"]
        assert set(tested.round(6)) == {side}
        assert trained.max() < side
        assert len(fold.train) + len(fold.test) == int((frame["side"] <= side + 1e-6).sum())


def test_calibration_holds_out_every_run_once_per_model_and_calibration(frame) -> None:
    specs = pick(catalogue(quick=True), ["refined"])

    rows = calibrate(frame, specs)

    assert tuple(rows.columns) == PREDICTION_COLUMNS
    cv = rows[rows["split"] == CV]
    assert sorted(cv["run_id"]) == sorted(frame.index.astype(str))
    forward = rows[rows["split"] == FORWARD]
    larger = frame[frame["side"] > SIDES[MIN_FORWARD_TRAIN_SIDES - 1]]
    assert sorted(forward["run_id"]) == sorted(larger.index.astype(str))


def test_one_score_per_configuration_the_worst_of_its_runs(frame) -> None:
    # Two runs of one configuration: 10% and 30% over; every other run exact.
    first = point_ids(frame) == 0
    runs = frame.index.astype(str)
    predicted = np.ones(len(frame))
    measured = np.ones(len(frame))
    measured[np.flatnonzero(first)] = [1.1, 1.3]
    predictions = pd.DataFrame(
        {
            "model": "m",
            "split": CV,
            "seed": 0,
            "run_id": runs,
            "measured_bytes": measured,
            "predicted_bytes": predicted,
        }
    )

    scores = configuration_scores(predictions, frame, "m", CV)

    assert len(scores) == point_ids(frame).nunique() == 24
    assert scores[0] == pytest.approx(1.3)
    assert (scores[1:] == 1.0).all()


def test_a_configurations_score_is_its_worst_ratio_over_every_model_that_held_it_out(
    frame,
) -> None:
    runs = frame.index.astype(str)
    exact = pd.DataFrame(
        {
            "model": "m",
            "split": CV,
            "seed": 0,
            "run_id": runs,
            "measured_bytes": 1.0,
            "predicted_bytes": 1.0,
        }
    )
    # A random split's model, fit on other runs, predicted configuration 0 30% low.
    first = runs[(point_ids(frame) == 0).to_numpy()]
    random = exact[exact["run_id"].isin(first)].assign(
        split="random", seed=1, predicted_bytes=1 / 1.3
    )
    predictions = pd.concat([exact, random], ignore_index=True)

    inside = configuration_scores(predictions, frame, "m", CV)

    assert inside[0] == pytest.approx(1.3)
    assert (inside[1:] == 1.0).all()
    # Checking that random split, its own predictions calibrate nothing.
    checked = split_coverage(predictions, frame, "m", "random")
    assert (checked.covered, checked.tested) == (0, 2)


def test_bounds_count_distinct_configurations_not_runs(frame, calibrated) -> None:
    _, _, predictors, _ = calibrated
    n_configurations = point_ids(frame).nunique()
    n_forward = point_ids(frame[frame["side"] > 64]).nunique()

    for predictor in predictors:
        assert predictor.bound.n_calibration == n_configurations == 24  # 48 runs
        assert predictor.bound.source == (
            "5-fold cross-conformal and 2 random splits, 24 distinct configurations"
        )
        assert not predictor.bound.thin
        forward = predictor.extrapolation_bound
        assert forward is not None and forward.n_calibration == n_forward == 12
        assert forward.source == (
            "forward-chaining by image size, 3 folds, 12 distinct configurations"
        )
        assert forward.thin  # 12 < 19: at 90% the worst of the 12


def test_calibration_is_stored_beside_the_splits_without_touching_the_scores(
    frame, calibrated
) -> None:
    specs, evaluation, _, plain = calibrated

    assert evaluation.scores == plain.scores
    pd.testing.assert_frame_equal(summarise(evaluation, specs), summarise(plain, specs))
    assert evaluation.seeds[CV] == tuple(range(CV_FOLDS))
    assert evaluation.seeds[FORWARD] == (0, 1, 2)
    assert set(evaluation.predictions["split"]) == {"random", "extrapolation", CV, FORWARD}
    before = evaluation.predictions[~evaluation.predictions["split"].isin([CV, FORWARD])]
    pd.testing.assert_frame_equal(before, plain.predictions)


def test_coverage_is_checked_on_configurations_left_out_of_the_calibration(
    frame, calibrated
) -> None:
    _, evaluation, _, _ = calibrated

    checked = checked_coverage(evaluation, frame, "least_squares", 0.9)

    # Each configuration's score against the bound from the other 23 (or 11): a share of them.
    assert checked[CV] is not None and checked[CV] * 24 == pytest.approx(round(checked[CV] * 24))
    assert checked[FORWARD] is not None
    assert checked[FORWARD] * 12 == pytest.approx(round(checked[FORWARD] * 12))


def test_too_few_configurations_beyond_the_first_sizes_give_no_extrapolation_bound() -> None:
    # 4 sizes x 3 batches: one forward fold of 3 configurations, fewer than the 9 needed.
    few = measured_frame(build_runs((32, 48, 64, 80), (1, 2, 4), noise=0.02))
    specs = pick(catalogue(quick=True), ["least_squares"])
    evaluation = with_calibration(evaluate(few, specs, seeds=range(1)), few, specs)

    (predictor,) = fit_predictors(specs, few, evaluation)

    assert predictor.bound.n_calibration == 12 and predictor.bound.thin
    assert predictor.extrapolation_bound is None


def test_a_model_cannot_be_fitted_for_use_without_its_calibration(frame) -> None:
    specs = pick(catalogue(quick=True), ["refined"])
    evaluation = evaluate(frame, specs, seeds=range(1))

    with pytest.raises(ModelingError, match="no cross-conformal predictions of 'refined'"):
        fit_predictors(specs, frame, evaluation)


def test_the_bounds_table_states_configurations_checked_coverage_and_thin_evidence(
    frame, calibrated
) -> None:
    _, evaluation, predictors, _ = calibrated
    checked = {p.name: checked_coverage(evaluation, frame, p.name) for p in predictors}

    table = bounds_table(predictors, checked)

    header, _, refined, *rest = table.splitlines()
    assert header == (
        "| model | stated coverage | inside: bound x | inside: configurations | inside: checked "
        "| beyond: bound x | beyond: configurations | beyond: checked |"
    )
    assert "| 24 | " in refined and "| 12 (thin) | " in refined
    assert rest[-1] == (
        "thin: thin evidence, fewer than 19 configurations, so the 90% bound is simply the "
        "worst configuration seen."
    )


def test_the_bounds_table_says_an_older_bound_counted_residuals(calibrated) -> None:
    _, _, (predictor, _), _ = calibrated
    old = ConformalBound(0.9, 1.25, 118, "118 held-out random-split residuals, 10 seed(s)")

    table = bounds_table([dataclasses.replace(predictor, bound=old)])

    assert "| 118 residuals (older evaluation) |" in table
    assert table.endswith(
        "older evaluation: its bounds counted held-out residuals, the same configuration once "
        "per seed; re-run `memplan evaluate` for bounds counted by configuration."
    )


def test_each_split_is_checked_against_the_bound_calibrated_without_its_test_points() -> None:
    frame = measured_frame(build_runs(sides=(32, 48, 64), batches=(1, 2, 4, 8)))  # 12 configs
    runs = frame.index.astype(str).tolist()
    measured = frame["peak_bytes"].to_numpy()
    # Cross-conformal ratios measured / predicted of 1.00, 1.01, ..., 1.11, one per run.
    cv = pd.DataFrame(
        {
            "model": "m",
            "split": CV,
            "seed": 0,
            "run_id": runs,
            "measured_bytes": measured,
            "predicted_bytes": measured / (1 + np.arange(12) / 100),
        }
    )
    # A random split holding out the runs of ratio 1.00 and 1.11, predicted 20% low.
    held_out = cv.iloc[[0, 11]].assign(
        split="random", predicted_bytes=lambda r: r.measured_bytes / 1.2
    )
    predictions = pd.concat([cv, held_out], ignore_index=True)

    # Calibrated on the other 10 ratios (1.01 ... 1.10): the 90% multiplier is their 10th
    # smallest, 1.10, which leaves both held-out runs (1.2) above their bound.
    missed = split_coverage(predictions, frame, "m", "random")
    assert (missed.covered, missed.tested, missed.share) == (0, 2, 0.0)
    closer = predictions.assign(predicted_bytes=predictions.measured_bytes / 1.05)
    assert split_coverage(closer, frame, "m", "random").share == 1.0


def test_a_split_no_seed_of_which_leaves_enough_configurations_has_no_coverage(
    frame, calibrated
) -> None:
    _, evaluation, _, _ = calibrated
    predictions = evaluation.predictions
    # Only 5 configurations calibrated at all: too few for a 90% bound (9).
    kept = predictions[(predictions["split"] != "cv") | (predictions["seed"] == 0)]

    assert split_coverage(kept, frame, "least_squares", "random") is None


def test_a_split_whose_bounds_miss_more_often_than_their_coverage_allows_is_called_so() -> None:
    # At 90%, 1 miss in 4 happens a third of the time (1 - 0.9^4): allowed. 3 misses in
    # 10 happen 7% of the time: still allowed. 5 in 20 happen 4.3% of the time: too many.
    assert not SplitCoverage(covered=3, tested=4, coverage=0.9).understated
    assert SplitCoverage(3, 4, 0.9).p_value == pytest.approx(1 - 0.9**4)
    assert not SplitCoverage(7, 10, 0.9).understated
    assert SplitCoverage(15, 20, 0.9).understated
    assert SplitCoverage(15, 20, 0.9).p_value == pytest.approx(0.0432, abs=1e-4)
    assert not SplitCoverage(20, 20, 0.9).understated
