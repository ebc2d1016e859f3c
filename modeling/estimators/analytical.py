"""The analytical models as scikit-learn-style estimators over a `modeling.features` frame.

`PaperModel` and `RefinedAnalyticalModel` read the term columns that
`modeling.features` writes, so the evaluation scores them exactly like the
fitted models. The arithmetic itself is `core.analytical`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.analytical import (
    DEFAULT_FRAMEWORK_BYTES,
    PAPER_TERM_COLUMNS,
    REFINED_TERM_COLUMNS,
)
from modeling.estimators.plain import PlainRegressor
from modeling.features import BASELINE_COLUMN


def _require_columns(X: object, columns: tuple[str, ...], model: str) -> pd.DataFrame:
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            f"{model} reads named columns: pass the frame modeling.features builds, "
            f"got {type(X).__name__}"
        )
    missing = [name for name in columns if name not in X.columns]
    if missing:
        raise ValueError(
            f"{model} needs columns {', '.join(columns)}; missing: {', '.join(missing)} "
            "(build X with modeling.features)"
        )
    return X


class PaperModel(PlainRegressor):
    """The white paper's Eq. 1 + Eq. 2 as an estimator: nothing to learn.

    X : frame with ``paper_activation_bytes`` and ``paper_weight_bytes``;
    predictions in bytes.
    """

    def fit(self, X: pd.DataFrame, y: object = None) -> PaperModel:
        _require_columns(X, PAPER_TERM_COLUMNS, "PaperModel")
        self.n_features_in_ = len(PAPER_TERM_COLUMNS)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_fitted()
        X = _require_columns(X, PAPER_TERM_COLUMNS, "PaperModel")
        return X[list(PAPER_TERM_COLUMNS)].sum(axis=1).to_numpy(dtype=float)

    def to_state(self) -> dict[str, Any]:
        """The fitted model as plain data (JSON): nothing was learned."""
        self.check_fitted()
        return {}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> PaperModel:
        model = cls()
        model.n_features_in_ = len(PAPER_TERM_COLUMNS)
        return model


class RefinedAnalyticalModel(PlainRegressor):
    """The refined closed-form model as an estimator.

    ``fit`` learns one thing, ``framework_bytes_``: the median of the training
    runs' measured ``baseline_bytes`` (or ``DEFAULT_FRAMEWORK_BYTES`` when none
    carries one). Peaks are never used. X : frame from `modeling.features`;
    predictions in bytes.
    """

    def fit(self, X: pd.DataFrame, y: object = None) -> RefinedAnalyticalModel:
        X = _require_columns(X, REFINED_TERM_COLUMNS, "RefinedAnalyticalModel")
        measured = X[BASELINE_COLUMN].dropna() if BASELINE_COLUMN in X else pd.Series([])
        if len(measured):
            self.framework_bytes_ = int(measured.median())
            self.framework_source_ = f"median measured baseline of {len(measured)} run(s)"
        else:
            self.framework_bytes_ = DEFAULT_FRAMEWORK_BYTES
            self.framework_source_ = "default (no measured baseline in the training runs)"
        self.n_features_in_ = len(REFINED_TERM_COLUMNS)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_fitted()
        X = _require_columns(X, REFINED_TERM_COLUMNS, "RefinedAnalyticalModel")
        terms = X[list(REFINED_TERM_COLUMNS)].sum(axis=1).to_numpy(dtype=float)
        return terms + self.framework_bytes_

    def to_state(self) -> dict[str, Any]:
        """The fitted model as plain data (JSON): the framework baseline and where it came from."""
        self.check_fitted()
        return {
            "framework_bytes": self.framework_bytes_,
            "framework_source": self.framework_source_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> RefinedAnalyticalModel:
        model = cls()
        framework = state["framework_bytes"]
        if type(framework) is not int:
            raise ValueError(f"framework_bytes must be a whole number, got {framework!r}")
        model.framework_bytes_ = framework
        model.framework_source_ = str(state["framework_source"])
        model.n_features_in_ = len(REFINED_TERM_COLUMNS)
        return model
