"""Choose a model's settings on validation data carved from the training rows, then refit.

The only data `fit_with_selection` ever sees is the training frame it is
given: candidates are fit on part of it and scored on the rest (a validation
split of the same kind as the evaluation's split), and the winner is refit on
all of it. Test rows cannot influence the choice because they are never passed in.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from modeling.evaluation.splits import validation_split
from modeling.features import TARGET_COLUMN

# Builds an unfitted estimator from the training frame (to learn e.g. which
# knobs vary) and one candidate's settings.
EstimatorFactory = Callable[[pd.DataFrame, dict[str, Any]], Any]
ColumnChooser = Callable[[pd.DataFrame], list[str]]


@dataclass(frozen=True)
class Selection:
    """The settings chosen, their validation MAPE (%), and what every candidate scored."""

    params: dict[str, Any]
    validation_mape_pct: float | None  # None when there was nothing to choose between
    tried: tuple[tuple[str, float], ...]  # (settings as JSON, validation MAPE %)

    @property
    def params_json(self) -> str:
        return json.dumps(self.params, sort_keys=True)


@dataclass(frozen=True)
class FitOutcome:
    """A fitted estimator, the columns it reads, how its settings were chosen, fit time."""

    estimator: Any
    columns: tuple[str, ...]
    selection: Selection
    fit_seconds: float


def mape_pct(measured: np.ndarray, predicted: np.ndarray) -> float:
    """Mean absolute percentage error, in percent."""
    measured = np.asarray(measured, dtype=float)
    return float(np.mean(np.abs(np.asarray(predicted, dtype=float) - measured) / measured) * 100)


def fit_with_selection(
    build: EstimatorFactory,
    candidates: Sequence[dict[str, Any]],
    columns: ColumnChooser,
    train: pd.DataFrame,
    split_kind: str,
    seed: int,
) -> FitOutcome:
    """Pick the candidate with the lowest validation MAPE on ``train`` and refit it on all of it.

    train : feature frame with the target column; the *only* rows used.
    With a single candidate there is nothing to choose, and no validation fit.
    """
    if not candidates:
        raise ValueError("no candidate settings to choose from; give at least one (e.g. {})")
    started = time.perf_counter()
    chosen = list(columns(train))
    if len(candidates) == 1:
        selection = Selection(dict(candidates[0]), None, ())
    else:
        selection = _select(build, candidates, chosen, train, split_kind, seed)
    estimator = build(train, selection.params)
    estimator.fit(train[chosen], train[TARGET_COLUMN].to_numpy())
    return FitOutcome(estimator, tuple(chosen), selection, time.perf_counter() - started)


def _select(
    build: EstimatorFactory,
    candidates: Sequence[dict[str, Any]],
    chosen: list[str],
    train: pd.DataFrame,
    split_kind: str,
    seed: int,
) -> Selection:
    split = validation_split(train, split_kind, seed)
    fit_rows, check_rows = train.loc[list(split.train)], train.loc[list(split.test)]
    tried: list[tuple[str, float]] = []
    best: tuple[float, dict[str, Any]] | None = None
    for params in candidates:
        estimator = build(fit_rows, dict(params))
        estimator.fit(fit_rows[chosen], fit_rows[TARGET_COLUMN].to_numpy())
        score = mape_pct(
            check_rows[TARGET_COLUMN].to_numpy(), estimator.predict(check_rows[chosen])
        )
        tried.append((json.dumps(params, sort_keys=True), score))
        # A non-finite score (e.g. a formula that blew up) never wins.
        if np.isfinite(score) and (best is None or score < best[0]):
            best = (score, dict(params))
    if best is None:
        best = (float("nan"), dict(candidates[0]))
    return Selection(best[1], best[0], tuple(tried))
