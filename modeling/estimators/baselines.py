"""The regressors the paper compared symbolic regression with, plus least squares on the terms.

* XGBoost, random forest, extremely randomized trees and a neural network
  (scikit-learn MLP, inputs and target standardised) over the shape inputs.
  The tree models learn log(peak): errors are judged relative (MAPE), and
  peaks span two orders of magnitude. Trees cannot predict beyond the largest
  peak they saw, which the extrapolation split shows.
* `AnalyticalLeastSquares`: peak = c0 + c1 * per-batch terms + c2 * model-state
  terms, the refined model's terms (`core.analytical`) with coefficients
  fit by least squares on relative error, optionally + c3 * the convolution
  gradients' im2col workspace, or + c4 where the batch is a single sample
  (PyTorch's runs at batch 1 peak ~0.1 GiB above the line its other batches lie
  on; TensorFlow's do not: docs/accuracy_unet3d_torch.md). This is *fitted*,
  unlike the refined analytical model, and is named so everywhere.

Settings are seeded; ``*_CANDIDATES`` are what `modeling.evaluation.selection` chooses
from on validation data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from modeling.estimators.plain import PlainRegressor
from modeling.features import WORKSPACE_COLUMN

if TYPE_CHECKING:
    from sklearn.compose import TransformedTargetRegressor

# The refined terms, grouped the way they scale: with the batch, or not at all.
PER_BATCH_TERMS: tuple[str, ...] = ("activation_bytes", "backward_bytes", "input_bytes")
MODEL_STATE_TERMS: tuple[str, ...] = ("weight_bytes", "gradient_bytes", "optimizer_bytes")
LEAST_SQUARES_INPUTS: tuple[str, ...] = ("per_batch_bytes", "model_state_bytes")
# 1 where the batch is a single sample, else 0: the one least-squares input not in bytes.
BATCH_OF_ONE = "batch_of_one"
GIB = 2**30

ML_KINDS = ("xgboost", "random_forest", "extra_trees", "mlp")
# Enough trees that the forests' averages settle; small data, so this stays fast.
TREES = 300
MLP_MAX_ITER = 5000

XGBOOST_CANDIDATES: tuple[dict[str, Any], ...] = (
    {"max_depth": 3, "learning_rate": 0.1},
    {"max_depth": 6, "learning_rate": 0.05},
)
FOREST_CANDIDATES: tuple[dict[str, Any], ...] = ({"min_samples_leaf": 1}, {"min_samples_leaf": 2})
MLP_CANDIDATES: tuple[dict[str, Any], ...] = (
    {"hidden_layer_sizes": (32, 32), "alpha": 1e-4},
    {"hidden_layer_sizes": (64,), "alpha": 1e-3},
)
CANDIDATES: dict[str, tuple[dict[str, Any], ...]] = {
    "xgboost": XGBOOST_CANDIDATES,
    "random_forest": FOREST_CANDIDATES,
    "extra_trees": FOREST_CANDIDATES,
    "mlp": MLP_CANDIDATES,
}


def make_regressor(kind: str, random_state: int = 0, **params: Any) -> TransformedTargetRegressor:
    """An unfitted ML baseline of ``kind`` (one of `ML_KINDS`), its target transformed."""
    # Imported here, not with the module: a stored least-squares model is read back
    # through this module, and XGBoost's and these imports are slow on 2 cores.
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from xgboost import XGBRegressor

    if kind == "xgboost":
        model: Any = XGBRegressor(n_estimators=TREES, random_state=random_state, n_jobs=1, **params)
    elif kind == "random_forest":
        model = RandomForestRegressor(n_estimators=TREES, random_state=random_state, **params)
    elif kind == "extra_trees":
        model = ExtraTreesRegressor(n_estimators=TREES, random_state=random_state, **params)
    elif kind == "mlp":
        model = make_pipeline(
            StandardScaler(),
            MLPRegressor(max_iter=MLP_MAX_ITER, random_state=random_state, **params),
        )
        # A ReLU network is piecewise linear in its inputs: on a standardised peak
        # it extrapolates linearly, on log(peak) it would extrapolate exponentially.
        return TransformedTargetRegressor(regressor=model, transformer=StandardScaler())
    else:
        raise ValueError(f"baseline kind {kind!r} is not one of {', '.join(ML_KINDS)}")
    return TransformedTargetRegressor(regressor=model, func=np.log, inverse_func=np.exp)


def least_squares_inputs(frame: pd.DataFrame) -> pd.DataFrame:
    """The grouped analytical terms (bytes), and the convolution-gradient workspace if given.

    A model stored before the workspace term existed reads only the refined terms.
    """
    terms = pd.DataFrame(
        {
            "per_batch_bytes": frame[list(PER_BATCH_TERMS)].sum(axis=1),
            "model_state_bytes": frame[list(MODEL_STATE_TERMS)].sum(axis=1),
        },
        index=frame.index,
    )
    if WORKSPACE_COLUMN in frame:
        terms[WORKSPACE_COLUMN] = frame[WORKSPACE_COLUMN]
    if "batch_size" in frame:
        terms[BATCH_OF_ONE] = (frame["batch_size"] == 1).astype(float)
    return terms


def _scale(name: str) -> float:
    """What a least-squares input is divided by for the fit: GiB for byte terms. Weighted
    by 1/peak^2, byte-sized terms beside a 0/1 one leave the solver a matrix whose small
    singular values it drops (the batch-of-one coefficient came out 3e-11)."""
    return 1.0 if name == BATCH_OF_ONE else float(GIB)


def _term_text(name: str, coefficient: float) -> str:
    if name == BATCH_OF_ONE:
        return f"{coefficient / GIB:.4g} GiB*{name}"
    return f"{coefficient:.4g}*{name}"


class AnalyticalLeastSquares(PlainRegressor):
    """Least squares on the analytical terms: ``c0 + c1 * per_batch + c2 * model_state``.

    ``workspace=True`` adds ``c3 * workspace_bytes``, the im2col buffer of
    TensorFlow's own convolution gradients (`core.analytical.backprop_workspace_bytes`),
    for machines where oneDNN does not run the network. ``batch_of_one=True`` adds
    ``c4 * batch_of_one`` (bytes where the batch is one sample; X needs ``batch_size``).
    Fit on relative error (weights 1/peak^2). A term that is constant in the
    training data (model state, when the network never changes) cannot be told
    apart from the intercept; it gets coefficient 0 and the intercept absorbs it.
    X : feature frame with the refined term columns; y and predictions in bytes.
    """

    def __init__(self, *, workspace: bool = False, batch_of_one: bool = False) -> None:
        self.workspace = workspace
        self.batch_of_one = batch_of_one

    def _inputs(self) -> tuple[str, ...]:
        workspace = (WORKSPACE_COLUMN,) if self.workspace else ()
        single = (BATCH_OF_ONE,) if self.batch_of_one else ()
        return (*LEAST_SQUARES_INPUTS, *workspace, *single)

    def fit(self, X: pd.DataFrame, y: Any) -> AnalyticalLeastSquares:
        inputs = self._inputs()
        terms = least_squares_inputs(X)
        target = np.asarray(y, dtype=float)
        if len(target) != len(terms) or len(target) < len(inputs) + 1:
            raise ValueError(
                f"least squares needs as many targets as rows and at least "
                f"{len(inputs) + 1}; got {len(terms)} rows, {len(target)} targets"
            )
        varying = [name for name in inputs if terms[name].nunique() > 1]
        from sklearn.linear_model import LinearRegression  # see `make_regressor`

        scales = np.array([_scale(name) for name in varying])
        regression = LinearRegression()
        regression.fit(
            terms[varying] / scales, target / GIB, sample_weight=1.0 / np.square(target / GIB)
        )
        coefficients = dict.fromkeys(inputs, 0.0)
        coefficients.update(zip(varying, (regression.coef_ * GIB / scales).tolist(), strict=True))
        self.intercept_bytes_ = float(regression.intercept_ * GIB)
        self.coefficients_ = coefficients
        self.n_features_in_ = len(inputs)
        self.formula_ = " + ".join(
            [f"{self.intercept_bytes_ / GIB:.4g} GiB"]
            + [_term_text(name, value) for name, value in coefficients.items() if value]
        )
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_fitted()
        inputs = list(self._inputs())
        terms = least_squares_inputs(X)
        weights = np.array([self.coefficients_[name] for name in inputs])
        return self.intercept_bytes_ + terms[inputs].to_numpy(float) @ weights

    def to_state(self) -> dict[str, Any]:
        """The fitted model as plain data (JSON): intercept, coefficients, formula."""
        self.check_fitted()
        return {
            "workspace": self.workspace,
            "batch_of_one": self.batch_of_one,
            "intercept_bytes": self.intercept_bytes_,
            "coefficients": self.coefficients_,
            "formula": self.formula_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> AnalyticalLeastSquares:
        # Models stored before the workspace or batch-of-one term existed have neither.
        model = cls(
            workspace=bool(state.get("workspace", False)),
            batch_of_one=bool(state.get("batch_of_one", False)),
        )
        inputs = model._inputs()
        coefficients = {name: float(state["coefficients"][name]) for name in inputs}
        model.intercept_bytes_ = float(state["intercept_bytes"])
        model.coefficients_ = coefficients
        model.formula_ = str(state["formula"])
        model.n_features_in_ = len(inputs)
        return model
