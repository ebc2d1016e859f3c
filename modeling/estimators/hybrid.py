"""Symbolic regression that starts from the refined analytical model instead of from nothing.

Two ways to hand the physics to the search (``mode``):

* ``"ratio"``: learn the correction factor measured / refined-analytical as a
  formula of the shape inputs; predict refined x formula. Far from the data
  the factor flattens out, so the prediction inherits the analytical model's
  scaling with size — the hope for extrapolation.
* ``"terms"``: give the search the refined total (``refined_gib``) and the
  paper's Eq. 1 activations (``paper_activation_gib``) as extra inputs next to
  the shape inputs; it may use them or not.

Whether either extrapolates better than plain symbolic regression is for
`modeling.evaluation.protocol` to say. The framework baseline inside the refined total is
learned from the training rows only (`RefinedAnalyticalModel.fit`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from core.analytical import GIB
from modeling.estimators.analytical import RefinedAnalyticalModel
from modeling.estimators.formula import PAPER_ACTIVATION_INPUT, REFINED_ANALYTICAL, REFINED_INPUT
from modeling.estimators.plain import PlainRegressor
from modeling.estimators.symbolic import FUNCTION_SET, SymbolicRegression
from modeling.features import SHAPE_INPUTS

MODES = ("ratio", "terms")
# The ratio is dimensionless and close to 1: no unit to divide by.
RATIO_UNIT = 1.0


class HybridSymbolicRegression(PlainRegressor):
    """Symbolic regression on top of the refined analytical model (see module docstring).

    X : feature frame from `modeling.features` (shape inputs, analytical terms,
    ``baseline_bytes``); y and predictions in bytes.
    """

    # More than six parameters, by scikit-learn's estimator contract: one keyword parameter
    # per hyperparameter, since get_params/set_params and clone read an estimator's settings
    # from its __init__ parameters, by name (a request object would hide them from both).
    def __init__(
        self,
        *,
        mode: str = "ratio",
        shape_inputs: tuple[str, ...] = SHAPE_INPUTS,
        population_size: int = 1000,
        generations: int = 20,
        parsimony_coefficient: float = 1e-4,
        function_set: tuple[str, ...] = FUNCTION_SET,
        random_state: int = 0,
    ) -> None:
        self.mode = mode
        self.shape_inputs = shape_inputs
        self.population_size = population_size
        self.generations = generations
        self.parsimony_coefficient = parsimony_coefficient
        self.function_set = function_set
        self.random_state = random_state

    def _symbolic(self, target_unit: float) -> SymbolicRegression:
        return SymbolicRegression(
            population_size=self.population_size,
            generations=self.generations,
            parsimony_coefficient=self.parsimony_coefficient,
            function_set=self.function_set,
            target_unit=target_unit,
            random_state=self.random_state,
        )

    def _inputs(self, X: pd.DataFrame, refined_bytes: np.ndarray) -> pd.DataFrame:
        inputs = X[list(self.shape_inputs)].copy()
        if self.mode == "terms":
            inputs[REFINED_INPUT] = refined_bytes / GIB
            inputs[PAPER_ACTIVATION_INPUT] = X["paper_activation_bytes"].to_numpy(float) / GIB
        return inputs

    def fit(self, X: pd.DataFrame, y: Any) -> HybridSymbolicRegression:
        if self.mode not in MODES:
            raise ValueError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        target = np.asarray(y, dtype=float)
        analytical = RefinedAnalyticalModel().fit(X)
        refined = analytical.predict(X)
        inputs = self._inputs(X, refined)
        if self.mode == "ratio":
            symbolic = self._symbolic(RATIO_UNIT).fit(inputs, target / refined)
            self.formula_ = f"{REFINED_ANALYTICAL} * ({symbolic.formula_})"
        else:
            symbolic = self._symbolic(GIB).fit(inputs, target)
            self.formula_ = symbolic.formula_
        self.analytical_ = analytical
        self.symbolic_ = symbolic
        self.formula_length_ = symbolic.formula_length_
        self.fit_seconds_ = symbolic.fit_seconds_
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_fitted()
        refined = self.analytical_.predict(X)
        learned = self.symbolic_.predict(self._inputs(X, refined))
        return refined * learned if self.mode == "ratio" else learned

    def to_state(self) -> dict[str, Any]:
        """The fitted model as plain data (JSON): its settings and both fitted parts."""
        self.check_fitted()
        settings = self.get_params()
        return {
            "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in settings.items()},
            "analytical": self.analytical_.to_state(),
            "symbolic": self.symbolic_.to_state(),
            "formula": self.formula_,
            "n_features_in": self.n_features_in_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> HybridSymbolicRegression:
        """The model `to_state` described, ready to predict."""
        settings = dict(state["settings"])
        for name in ("shape_inputs", "function_set"):
            settings[name] = tuple(str(value) for value in settings[name])
        model = cls(**settings)
        if model.mode not in MODES:
            raise ValueError(f"mode {model.mode!r} is not one of {', '.join(MODES)}")
        model.analytical_ = RefinedAnalyticalModel.from_state(state["analytical"])
        model.symbolic_ = SymbolicRegression.from_state(state["symbolic"])
        model.formula_ = str(state["formula"])
        model.formula_length_ = model.symbolic_.formula_length_
        model.fit_seconds_ = model.symbolic_.fit_seconds_
        model.n_features_in_ = int(state["n_features_in"])
        return model
