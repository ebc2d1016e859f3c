"""Upper bounds on a prediction from held-out scores: one-sided conformal, on ratios.

Errors in peak memory grow with the peak, so the score that travels between
small and large configurations is the *ratio* measured / predicted, not the
difference. Given n held-out scores (from points the model was not fit on),
the ``ceil((n + 1) * coverage)``-th smallest is a multiplier ``q`` with

    P(measured <= q * predicted) >= coverage

for a new point exchangeable with the held-out ones, when the scores came from
the very model that is bounded (split-conformal prediction; Vovk et al., Lei
et al. 2018). Cross-conformal scores, from fold models rather than the final
one, make that approximate: `leave_one_out_coverage` checks it on the data.
The scores come from `modeling.evaluation.conformal`: one per distinct
configuration, so n counts configurations, not repeated runs of them. The
guarantee is about points like the held-out ones: it says nothing for
configurations beyond the measured range, which is why sizing answers flag
extrapolation separately.

With few scores the rank ``ceil((n + 1) * coverage)`` is n itself: the bound is
then simply the worst score seen (for 90%, whenever n < 19), and a bound says
so in words (`ConformalBound.evidence`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

DEFAULT_COVERAGE = 0.9
# Bounds stored before scores were counted by configuration name their source
# like "118 held-out random-split residuals, 10 seed(s)": runs counted per seed.
_LEGACY_SOURCE_WORDS = ("held-out", "residuals")


@dataclass(frozen=True)
class ConformalBound:
    """Multiply a point prediction by ``ratio`` to get an upper bound at ``coverage``."""

    coverage: float
    ratio: float
    n_calibration: int
    source: str  # where the scores came from, in words, e.g. "5-fold cross-conformal, ..."

    def upper(self, predicted: np.ndarray | float) -> np.ndarray:
        """The bound for point prediction(s) ``predicted`` (same unit, e.g. bytes).

        +inf where the prediction is not positive: nothing to scale.
        """
        return upper_bound(predicted, self.ratio)

    @property
    def legacy(self) -> bool:
        """Stored by an older evaluation, whose ``n_calibration`` counted runs once per seed."""
        return all(word in self.source for word in _LEGACY_SOURCE_WORDS)

    @property
    def thin(self) -> bool:
        """The bound is the worst score seen: too few configurations to leave any out."""
        return not self.legacy and thin_evidence(self.n_calibration, self.coverage)

    @property
    def evidence(self) -> str:
        """What stands behind the bound, in words: how many distinct configurations, or why not.

        E.g. "5-fold cross-conformal, 41 distinct configurations", or with 9
        configurations at 90%: "...; thin evidence: the bound is the worst of only 9
        configurations".
        """
        if self.legacy:
            return (
                f"{self.n_calibration} held-out residuals, not counted by configuration (an older "
                "evaluation: re-run `memplan evaluate` for a bound counted by "
                "configuration)"
            )
        if self.thin:
            return (
                f"{self.source}; thin evidence: the bound is the worst of only "
                f"{self.n_calibration} configurations"
            )
        return self.source

    @property
    def name(self) -> str:
        method = "split-conformal" if self.legacy else "conformal"
        return f"{self.coverage:.0%} {method} upper bound (x{self.ratio:.3f}, {self.evidence})"


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


def fewest_beyond_worst(coverage: float) -> int:
    """The fewest scores for which the bound at ``coverage`` is not simply the largest one.

    The rank ``ceil((n + 1) * coverage)`` is below n once n >= (1 + coverage) / (1 - coverage):
    19 at 90%, 39 at 95%. With fewer, the bound is the worst score seen (`thin_evidence`).
    """
    _check_coverage(coverage)
    return math.ceil((1 + coverage) / (1 - coverage) - 1e-12)


# At the default coverage: with fewer configurations a bound is the worst one seen.
THIN_EVIDENCE_CONFIGURATIONS = fewest_beyond_worst(DEFAULT_COVERAGE)


def thin_evidence(n_calibration: int, coverage: float) -> bool:
    """Whether a bound from ``n_calibration`` scores at ``coverage`` is just the largest one."""
    return n_calibration < fewest_beyond_worst(coverage)


def conformal_quantile(scores: np.ndarray, coverage: float) -> float:
    """The ``ceil((n + 1) * coverage)``-th smallest of n held-out ``scores`` (1-D).

    Raises ValueError with fewer than `min_calibration_size` scores: no finite bound exists.
    """
    _check_coverage(coverage)
    scores = np.asarray(scores, dtype=float)
    if scores.ndim != 1:
        raise ValueError(f"scores must be 1-D, got shape {scores.shape}")
    n = len(scores)
    needed = min_calibration_size(coverage)
    if n < needed:
        raise ValueError(
            f"a {coverage:.0%} bound needs at least {needed} held-out points, got {n}; "
            "measure more points or ask for a lower coverage"
        )
    rank = math.ceil((n + 1) * coverage - 1e-12)
    return float(np.sort(scores)[rank - 1])


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


def bound_from_scores(
    scores: np.ndarray, coverage: float = DEFAULT_COVERAGE, source: str = "held-out points"
) -> ConformalBound:
    """A `ConformalBound` from held-out ratios measured / predicted, one per exchangeable unit."""
    scores = np.asarray(scores, dtype=float)
    return ConformalBound(coverage, conformal_quantile(scores, coverage), len(scores), source)


def leave_one_out_coverage(scores: np.ndarray, coverage: float = DEFAULT_COVERAGE) -> float | None:
    """Share of scores at or under the bound calibrated on all the *other* scores.

    Each score is a unit (a configuration) the bound is checked on without having
    been calibrated on it: covered when its ratio measured / predicted is at or
    under the multiplier from the rest. None when the others are too few for a bound.
    """
    scores = np.asarray(scores, dtype=float)
    if len(scores) - 1 < min_calibration_size(coverage):
        return None
    covered = [
        scores[i] <= conformal_quantile(np.delete(scores, i), coverage) for i in range(len(scores))
    ]
    return float(np.mean(covered))
