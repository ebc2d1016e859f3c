"""Upper bounds on a prediction from held-out residuals: one-sided split-conformal, on ratios.

Errors in peak memory grow with the peak, so the residual that travels between
small and large configurations is the *ratio* measured / predicted, not the
difference. Given n held-out ratios (from points the model was not fit on),
the ``ceil((n + 1) * coverage)``-th smallest is a multiplier ``q`` with

    P(measured <= q * predicted) >= coverage

for a new point exchangeable with the held-out ones (split-conformal
prediction; Vovk et al., Lei et al. 2018). The guarantee is about points like
the held-out ones: it says nothing for configurations beyond the measured
range, which is why sizing answers flag extrapolation separately.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_COVERAGE = 0.9


@dataclass(frozen=True)
class ConformalBound:
    """Multiply a point prediction by ``ratio`` to get an upper bound at ``coverage``."""

    coverage: float
    ratio: float
    n_calibration: int
    source: str  # which held-out residuals, in words

    def upper(self, predicted: np.ndarray | float) -> np.ndarray:
        """The bound for point prediction(s) ``predicted`` (same unit, e.g. bytes).

        +inf where the prediction is not positive: nothing to scale.
        """
        return upper_bound(predicted, self.ratio)

    @property
    def name(self) -> str:
        return f"{self.coverage:.0%} split-conformal upper bound (x{self.ratio:.3f}, {self.source})"


def upper_bound(predicted: np.ndarray | float, ratio: np.ndarray | float) -> np.ndarray:
    """``predicted * ratio``, or +inf where ``predicted`` is not a positive finite number."""
    predicted = np.asarray(predicted, dtype=float)
    usable = np.isfinite(predicted) & (predicted > 0)
    with np.errstate(invalid="ignore"):
        return np.where(usable, predicted * ratio, np.inf)


def _check_coverage(coverage: float) -> None:
    if not 0 < coverage < 1:
        raise ValueError(f"coverage must be between 0 and 1 (exclusive), got {coverage!r}")


def min_calibration_size(coverage: float) -> int:
    """The fewest held-out points for which a finite bound at ``coverage`` exists."""
    _check_coverage(coverage)
    # Need ceil((n + 1) * coverage) <= n, i.e. n >= coverage / (1 - coverage).
    return math.ceil(coverage / (1 - coverage) - 1e-12)


def conformal_ratio(measured: np.ndarray, predicted: np.ndarray, coverage: float) -> float:
    """The split-conformal multiplier from held-out ``measured`` and ``predicted`` values."""
    _check_coverage(coverage)
    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    if measured.shape != predicted.shape or measured.ndim != 1:
        raise ValueError(
            f"measured and predicted must be 1-D and the same length, got shapes "
            f"{measured.shape} and {predicted.shape}"
        )
    n = len(measured)
    needed = min_calibration_size(coverage)
    if n < needed:
        raise ValueError(
            f"a {coverage:.0%} bound needs at least {needed} held-out points, got {n}; "
            "measure more points or ask for a lower coverage"
        )
    rank = math.ceil((n + 1) * coverage)
    return float(np.sort(ratios(measured, predicted))[rank - 1])


def ratios(measured: np.ndarray, predicted: np.ndarray) -> np.ndarray:
    """measured / predicted; +inf where a prediction is not a positive finite number.

    A model that predicts zero or negative memory says nothing a bound could
    scale, so such a point counts as missed by any finite multiplier.
    """
    measured = np.asarray(measured, dtype=float)
    predicted = np.asarray(predicted, dtype=float)
    usable = np.isfinite(predicted) & (predicted > 0)
    result = np.full(measured.shape, np.inf)
    result[usable] = measured[usable] / predicted[usable]
    return result


def fit_bound(
    measured: np.ndarray,
    predicted: np.ndarray,
    coverage: float = DEFAULT_COVERAGE,
    source: str = "held-out residuals",
) -> ConformalBound:
    """A `ConformalBound` from held-out measured and predicted values."""
    ratio = conformal_ratio(measured, predicted, coverage)
    return ConformalBound(coverage, ratio, len(np.asarray(measured)), source)


def empirical_coverage(measured: np.ndarray, upper: np.ndarray) -> float:
    """Share of points whose measured value is at or under its upper bound."""
    measured = np.asarray(measured, dtype=float)
    return float(np.mean(measured <= np.asarray(upper, dtype=float)))
