"""Conformal upper bounds on ratios: coverage holds, small samples and bad input refused, and
each bound says in words how much evidence stands behind it."""

import numpy as np
import pytest

from modeling.evaluation.bounds import (
    THIN_EVIDENCE_CONFIGURATIONS,
    ConformalBound,
    bound_from_scores,
    fewest_beyond_worst,
    leave_one_out_coverage,
    min_calibration_size,
    ratios,
    thin_evidence,
)


def _noisy(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Predictions of 1-100 GiB and measurements off by a skewed multiplicative error."""
    predicted = rng.uniform(1, 100, n) * 2**30
    return predicted * rng.lognormal(0.02, 0.05, n), predicted


@pytest.mark.parametrize("coverage", [0.8, 0.9, 0.95])
def test_the_bound_covers_new_points_at_least_as_often_as_stated(coverage: float) -> None:
    rng = np.random.default_rng(0)
    covered = []
    for _ in range(400):
        measured, predicted = _noisy(rng, 40)
        bound = bound_from_scores(ratios(measured, predicted), coverage)
        new_measured, new_predicted = _noisy(rng, 50)
        covered.append(np.mean(new_measured <= bound.upper(new_predicted)))

    # Split-conformal guarantees >= coverage on average (and < coverage + 1/(n+1)).
    assert coverage <= np.mean(covered) < coverage + 1 / 41 + 0.01


def test_the_ratio_is_the_conformal_rank_of_the_sorted_ratios() -> None:
    measured = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9])
    # n = 10, coverage 0.8: rank ceil(11 * 0.8) = 9, the 9th smallest ratio.
    assert bound_from_scores(ratios(measured, np.ones(10)), 0.8).ratio == pytest.approx(1.8)


def test_a_bound_states_its_coverage_source_and_size() -> None:
    source = "5-fold cross-conformal, 19 distinct configurations"
    bound = bound_from_scores(np.full(19, 2.0), 0.9, source=source)

    assert (bound.coverage, bound.ratio, bound.n_calibration) == (0.9, 2.0, 19)
    assert bound.name == f"90% conformal upper bound (x2.000, {source})"
    assert not bound.thin


def test_below_19_configurations_a_90_percent_bound_is_the_worst_score() -> None:
    scores = np.linspace(1.0, 1.18, 18)

    # rank ceil(19 * 0.9) = 18 = n: the largest; with 19 scores, rank 18 < 19.
    assert bound_from_scores(scores, 0.9).ratio == scores.max()
    assert bound_from_scores(np.append(scores, 2.0), 0.9).ratio == scores.max()
    assert THIN_EVIDENCE_CONFIGURATIONS == fewest_beyond_worst(0.9) == 19
    assert fewest_beyond_worst(0.95) == 39
    assert thin_evidence(18, 0.9) and not thin_evidence(19, 0.9)


def test_a_thin_bound_says_it_is_the_worst_of_few_configurations() -> None:
    source = "forward-chaining by image size, 2 folds, 9 distinct configurations"
    bound = ConformalBound(0.9, 1.3, 9, source)

    assert bound.thin
    assert bound.name == (
        f"90% conformal upper bound (x1.300, {source}; thin evidence: the bound is the worst "
        "of only 9 configurations)"
    )


def test_an_older_bound_counted_residuals_and_says_so_rather_than_configurations() -> None:
    # As stored by evaluations before bounds were counted by configuration.
    old = ConformalBound(0.9, 1.06, 15, "15 held-out extrapolation-split residuals, 3 seed(s)")

    assert old.legacy and not old.thin
    assert "distinct configurations" not in old.name and "thin" not in old.name
    assert old.name == (
        "90% split-conformal upper bound (x1.060, 15 held-out residuals, not counted by "
        "configuration (an older evaluation: re-run `memplan evaluate` for a bound "
        "counted by configuration))"
    )


def test_too_few_held_out_points_for_the_coverage_are_refused() -> None:
    assert min_calibration_size(0.9) == 9
    assert min_calibration_size(0.95) == 19

    with pytest.raises(ValueError, match="a 90% bound needs at least 9 held-out points, got 8"):
        bound_from_scores(np.ones(8), 0.9)


def test_non_positive_predictions_count_as_unbounded() -> None:
    assert ratios(np.array([2.0, 2.0, 2.0]), np.array([1.0, 0.0, -5.0])).tolist() == [
        2.0,
        np.inf,
        np.inf,
    ]
    bound = bound_from_scores(ratios(np.ones(10), np.ones(10)), 0.9)
    assert bound.upper(np.array([-1.0, 3.0])).tolist() == [np.inf, 3.0]


@pytest.mark.parametrize("coverage", [0.0, 1.0, 1.5, -0.1])
def test_coverage_outside_zero_to_one_is_refused(coverage: float) -> None:
    with pytest.raises(ValueError, match=f"coverage must be between 0 and 1.*got {coverage}"):
        bound_from_scores(np.ones(50), coverage)


def test_scores_that_are_not_one_per_configuration_are_refused() -> None:
    with pytest.raises(ValueError, match="scores must be 1-D, got shape \\(3, 2\\)"):
        bound_from_scores(np.ones((3, 2)), 0.5)


def test_leave_one_out_coverage_of_distinct_scores_is_the_rank_over_n() -> None:
    # Score i is covered by the bound from the others iff its rank is at most
    # ceil(n * coverage): 18 of 20 at 90%, 10 of 11.
    assert leave_one_out_coverage(np.arange(1.0, 21.0), 0.9) == pytest.approx(18 / 20)
    assert leave_one_out_coverage(np.arange(1.0, 12.0), 0.9) == pytest.approx(10 / 11)


def test_leave_one_out_coverage_never_calibrates_on_the_score_it_checks() -> None:
    # One configuration far worse than the 19 alike: the others' bound misses it.
    scores = np.append(np.ones(19), 5.0)

    assert leave_one_out_coverage(scores, 0.9) == pytest.approx(19 / 20)


def test_leave_one_out_coverage_needs_enough_other_scores() -> None:
    assert leave_one_out_coverage(np.ones(9), 0.9) is None  # 8 others: no 90% bound
    assert leave_one_out_coverage(np.ones(10), 0.9) == 1.0
