"""Split-conformal upper bounds on ratios: coverage holds, small samples and bad input refused."""

import numpy as np
import pandas as pd
import pytest

from modeling.evaluation.bounds import (
    conformal_ratio,
    empirical_coverage,
    fit_bound,
    min_calibration_size,
    ratios,
)
from modeling.evaluation.fitting import cross_seed_coverage
from modeling.evaluation.protocol import Evaluation


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
        bound = fit_bound(measured, predicted, coverage)
        new_measured, new_predicted = _noisy(rng, 50)
        covered.append(empirical_coverage(new_measured, bound.upper(new_predicted)))

    # Split-conformal guarantees >= coverage on average (and < coverage + 1/(n+1)).
    assert coverage <= np.mean(covered) < coverage + 1 / 41 + 0.01


def test_the_ratio_is_the_conformal_rank_of_the_sorted_ratios() -> None:
    measured = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9])
    # n = 10, coverage 0.8: rank ceil(11 * 0.8) = 9, the 9th smallest ratio.
    assert conformal_ratio(measured, np.ones(10), 0.8) == pytest.approx(1.8)


def test_a_bound_states_its_coverage_source_and_size() -> None:
    bound = fit_bound(np.full(19, 2.0), np.ones(19), 0.9, source="test residuals")

    assert (bound.coverage, bound.ratio, bound.n_calibration) == (0.9, 2.0, 19)
    assert bound.name == "90% split-conformal upper bound (x2.000, test residuals)"


def test_too_few_held_out_points_for_the_coverage_are_refused() -> None:
    assert min_calibration_size(0.9) == 9
    assert min_calibration_size(0.95) == 19

    with pytest.raises(ValueError, match="a 90% bound needs at least 9 held-out points, got 8"):
        conformal_ratio(np.ones(8), np.ones(8), 0.9)


def test_non_positive_predictions_count_as_unbounded() -> None:
    assert ratios(np.array([2.0, 2.0, 2.0]), np.array([1.0, 0.0, -5.0])).tolist() == [
        2.0,
        np.inf,
        np.inf,
    ]
    bound = fit_bound(np.ones(10), np.ones(10), 0.9)
    assert bound.upper(np.array([-1.0, 3.0])).tolist() == [np.inf, 3.0]


@pytest.mark.parametrize("coverage", [0.0, 1.0, 1.5, -0.1])
def test_coverage_outside_zero_to_one_is_refused(coverage: float) -> None:
    with pytest.raises(ValueError, match=f"coverage must be between 0 and 1.*got {coverage}"):
        conformal_ratio(np.ones(50), np.ones(50), coverage)


def test_mismatched_lengths_are_refused() -> None:
    with pytest.raises(ValueError, match="same length, got shapes \\(3,\\) and \\(2,\\)"):
        conformal_ratio(np.ones(3), np.ones(2), 0.5)


def test_cross_seed_coverage_never_calibrates_on_the_points_it_checks() -> None:
    # Seeds 0 and 1 test the same runs a-j (seed 1's model 10x too low); seed 2 tests others.
    runs = [chr(ord("a") + i) for i in range(10)]
    predictions = pd.DataFrame(
        {
            "model": "m",
            "split": "random",
            "seed": [0] * 10 + [1] * 10 + [2] * 10,
            "run_id": runs + runs + [f"other{i}" for i in range(10)],
            "measured_bytes": [1.0] * 30,
            "predicted_bytes": [1.0] * 10 + [0.1] * 10 + [1.0] * 10,
        }
    )
    evaluation = Evaluation((), predictions, 30, 30, "x", {"random": (0, 1, 2)})

    # Seeds 0 and 1 may not calibrate on a-j, so only on seed 2 (ratio 1): seed 0 is
    # covered, seed 1 is not. Seed 2 calibrates on both others (ratio 10): covered.
    assert cross_seed_coverage(evaluation, "m", 0.9) == pytest.approx(20 / 30)
