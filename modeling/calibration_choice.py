"""Which point a calibration measures next, and when it stops: pure arithmetic, nothing run.

A new machine's peaks are taken to be a line in the nearest profile's prediction,
peak ~ a + b * prior(x) (`fit_transfer`; one point fits the offset alone, b = 1).
Every candidate gets a *relative width*, how far its upper bound may lie above the
fit's prediction, over that prediction (`relative_widths`):

* with 3 or more points, the least-squares prediction interval of the line:
  t(0.95, n - 2) * s * sqrt(1 + h(x)) / yhat(x), where s is the residual standard
  deviation (at least `NOISE_FLOOR` of the mean measured peak: a line through three
  points can be exact by chance, never a run's noise) and h(x) the leverage of x;
* with fewer, the slope is not known from this machine: the between-profile
  widening evidence says how far another machine's peaks scale (W, the factor an
  answer from the nearest profile is widened by), so the width is
  (W - 1) * (distance in prior(x) to the nearest measured point) / yhat(x), and
  (W - 1) with no point measured (W - 1 at least `NOISE_FLOOR`: without evidence
  the distance still orders the candidates).

The next point is the candidate of widest relative width (ties: the cheapest,
then the first); the loop stops when the leave-one-out MAPE of the line over the
measured points is at most the target (with at least `MIN_POINTS_TO_STOP`), or at
`MAX_POINTS` points.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from modeling.evaluation.selection import mape_pct

# Issue 28, point 5: at most six measured points, and stop once held out within 5%.
MAX_POINTS = 6
TARGET_MAPE_PCT = 5.0
# A held-out error needs a line fitted on two other points: three points at least.
MIN_POINTS_TO_STOP = 3
# The least residual spread the interval assumes, as a share of the mean peak: the
# run-to-run noise of a peak is a few percent (docs/runs.md, the measurement floor).
NOISE_FLOOR = 0.01
# The one-sided level of the prediction interval.
INTERVAL_LEVEL = 0.95


@dataclass(frozen=True)
class TransferFit:
    """peak ~ offset + scale * prior, bytes; fitted on ``points`` measured points."""

    offset: float
    scale: float
    points: int

    def predict(self, prior: np.ndarray | float) -> np.ndarray:
        return self.offset + self.scale * np.asarray(prior, dtype=float)


def fit_transfer(prior: Sequence[float], peaks: Sequence[float]) -> TransferFit:
    """The line through the measured (prior prediction, peak) pairs, bytes.

    None measured: the prior itself; one: its offset only (scale 1); more: least squares.
    A scale that comes out not positive (points too close for a slope) falls back to the
    offset alone.
    """
    x = np.asarray(prior, dtype=float)
    y = np.asarray(peaks, dtype=float)
    if len(x) != len(y):
        raise ValueError(f"{len(x)} prior predictions for {len(y)} peaks")
    if len(x) == 0:
        return TransferFit(0.0, 1.0, 0)
    if len(x) >= 2 and np.ptp(x) > 0:
        scale, offset = np.polyfit(x, y, 1)
        if scale > 0:
            return TransferFit(float(offset), float(scale), len(x))
    return TransferFit(float(np.mean(y - x)), 1.0, len(x))


def leave_one_out(prior: Sequence[float], peaks: Sequence[float]) -> np.ndarray:
    """Each measured peak predicted by the line fitted on the others, bytes (empty below 3)."""
    x = np.asarray(prior, dtype=float)
    y = np.asarray(peaks, dtype=float)
    if len(x) < MIN_POINTS_TO_STOP:
        return np.array([], dtype=float)
    kept = [np.arange(len(x)) != i for i in range(len(x))]
    return np.array([fit_transfer(x[k], y[k]).predict(x[i]) for i, k in enumerate(kept)])


def loo_mape_pct(prior: Sequence[float], peaks: Sequence[float]) -> float | None:
    """The leave-one-out MAPE, percent; None with fewer than `MIN_POINTS_TO_STOP` points."""
    held_out = leave_one_out(prior, peaks)
    return mape_pct(np.asarray(peaks, dtype=float), held_out) if len(held_out) else None


def relative_widths(
    candidates: Sequence[float],
    prior: Sequence[float],
    peaks: Sequence[float],
    widening: float,
) -> np.ndarray:
    """Each candidate's relative bound width (module docstring), from its prior prediction.

    candidates : the prior's predictions at the candidates, bytes. prior, peaks : those of
    the measured points. widening : the between-profile factor W (>= 1).
    """
    c = np.asarray(candidates, dtype=float)
    x = np.asarray(prior, dtype=float)
    y = np.asarray(peaks, dtype=float)
    fit = fit_transfer(x, y)
    predicted = np.maximum(fit.predict(c), 1.0)
    # Never 0: where no pair of other profiles shares a configuration (W = 1) the distance
    # to the measured points must still order the candidates.
    spread = max(float(widening) - 1.0, NOISE_FLOOR)
    if len(x) == 0:
        return np.full(len(c), spread)
    if len(x) < MIN_POINTS_TO_STOP or np.ptp(x) == 0:
        nearest = np.min(np.abs(c[:, None] - x[None, :]), axis=1)
        return spread * nearest / predicted
    residuals = y - fit.predict(x)
    s = max(float(np.sqrt(np.sum(residuals**2) / (len(x) - 2))), NOISE_FLOOR * float(y.mean()))
    design = np.column_stack([np.ones(len(x)), x])
    inverse = np.linalg.inv(design.T @ design)
    rows = np.column_stack([np.ones(len(c)), c])
    leverage = np.einsum("ij,jk,ik->i", rows, inverse, rows)
    t = float(stats.t.ppf(INTERVAL_LEVEL, len(x) - 2))
    return t * s * np.sqrt(1 + leverage) / predicted


def choose_next(
    widths: Sequence[float], costs: Sequence[float], measured: Sequence[bool]
) -> int | None:
    """The index of the unmeasured candidate of widest width (ties: least cost, then first)."""
    order = [
        (-round(float(w), 9), float(cost), i)
        for i, (w, cost, done) in enumerate(zip(widths, costs, measured, strict=True))
        if not done
    ]
    return min(order)[2] if order else None


def stop_reason(
    prior: Sequence[float],
    peaks: Sequence[float],
    target_pct: float = TARGET_MAPE_PCT,
    max_points: int = MAX_POINTS,
) -> str | None:
    """Why the loop stops now, in words; None to go on."""
    error = loo_mape_pct(prior, peaks)
    if error is not None and error <= target_pct:
        return f"leave-one-out MAPE {error:.2f}% <= {target_pct:g}% over {len(peaks)} points"
    if len(peaks) >= max_points:
        held = "n/a" if error is None else f"{error:.2f}%"
        return f"{max_points} points measured (leave-one-out MAPE {held})"
    return None
