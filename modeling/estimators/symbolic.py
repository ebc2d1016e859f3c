"""Symbolic regression of peak memory with gplearn, shown as a readable formula.

`SymbolicRegression` wraps gplearn's `SymbolicRegressor` the way the paper
used Pandora: evolve a formula over the image size and batch (and any knob that
varies) that predicts peak memory. Two choices make it work on this problem:

* **Relative error as fitness.** Peaks span two orders of magnitude, and
  the paper scores by MAPE; plain absolute error would let the few largest
  runs decide everything.
* **Linear scaling** (Keijzer, 2003). Each candidate program ``g`` is scored as
  ``a + b * g`` with the ``a, b`` that fit best (weighted least squares, in
  closed form). Evolution then searches for the *shape* of the law only; the
  intercept (the framework's baseline) and the scale come for free instead of
  having to be assembled out of random constants.

The result is kept as ``formula_`` (sympy-simplified, 4 significant digits,
target in GiB) with its size, and ``fit_seconds_``; the program itself as data,
``program_tokens_`` (`modeling.estimators.formula`), which is what predicts and
what `to_state` stores: no gplearn object is kept. ``SETTINGS_CANDIDATES``
lists the settings `modeling.evaluation.selection` chooses from on validation data.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from core.units import GIB
from modeling.estimators import formula
from modeling.estimators.plain import PlainRegressor

if TYPE_CHECKING:
    import sympy

# gplearn and SymPy are imported where a model is fitted or its formula written, not with
# this module: reading a stored model back and predicting needs neither, and importing
# them (gplearn's fitness imports SciPy's statistics) was ~2.3 s CPU of reading a stored
# symbolic model back on the 2-core VM, all of it paid by `memplan size` for a profile
# whose default model is a symbolic or hybrid one.

FUNCTION_SET: tuple[str, ...] = ("add", "sub", "mul", "div")
ALLOWED_FUNCTIONS: tuple[str, ...] = ("add", "sub", "mul", "div", "sqrt", "log", "neg", "inv")
# A formula needs some points per coefficient to mean anything.
MIN_SAMPLES = 5
# Reported for a program whose output is not finite on the training data.
WORST_FITNESS = 1e10
SIGNIFICANT_DIGITS = 4
# sympy's simplify cancels common factors of rational expressions by polynomial gcds,
# which can run for many minutes on a long program with divisions (seen: more than 15 on
# a hybrid's program of five inputs, in `python -m benchmarks.accuracy`). Longer
# programs are shown as evolved, expanded when polynomial: readable, and never stuck.
MAX_SIMPLIFIED_NODES = 80

# Settings tried on the validation split (all else is SymbolicRegression's default).
# Small enough to stay a few seconds each on ~50 runs and a laptop core.
SETTINGS_CANDIDATES: tuple[dict[str, Any], ...] = (
    {"parsimony_coefficient": 1e-4, "population_size": 500, "generations": 15},
    {"parsimony_coefficient": 1e-3, "population_size": 500, "generations": 15},
    {"parsimony_coefficient": 1e-4, "population_size": 1000, "generations": 25},
)


def linear_scaling(
    y: np.ndarray, g: np.ndarray, w: np.ndarray | None = None
) -> tuple[float, float]:
    """``(a, b)`` minimising the weighted squared *relative* error of ``a + b * g`` to ``y``.

    The relative weighting is 1/y^2; ``w`` multiplies it. A constant ``g`` gets ``b = 0``.
    """
    weights = 1.0 / np.square(y)
    if w is not None:
        weights = weights * w
    total = weights.sum()
    g_mean = np.dot(weights, g) / total
    y_mean = np.dot(weights, y) / total
    spread = np.dot(weights, np.square(g - g_mean))
    if not np.isfinite(spread) or spread <= np.finfo(float).tiny:
        return float(y_mean), 0.0
    slope = np.dot(weights, (g - g_mean) * (y - y_mean)) / spread
    return float(y_mean - slope * g_mean), float(slope)


def _scaled_relative_error(y: np.ndarray, y_pred: np.ndarray, w: np.ndarray) -> float:
    """gplearn fitness: mean relative error of the best linear rescaling of ``y_pred``."""
    # gplearn probes a custom fitness with y = 1s; guard the general case anyway.
    if not np.all(np.isfinite(y_pred)) or np.any(y == 0):
        return WORST_FITNESS
    with np.errstate(all="ignore"):
        intercept, slope = linear_scaling(y, y_pred, w)
        relative = np.abs(y - intercept - slope * y_pred) / np.abs(y)
        value = float(np.average(relative, weights=w))
    return value if np.isfinite(value) else WORST_FITNESS


def scaled_relative_error() -> Any:
    """`_scaled_relative_error` as gplearn's fitness object (`fit` passes it as its metric)."""
    from gplearn.fitness import make_fitness

    # wrap=False: a module-level function needs no cloudpickle wrapper (only lambdas
    # do); the fitted model keeps its program as tokens anyway, not the gplearn objects.
    return make_fitness(function=_scaled_relative_error, greater_is_better=False, wrap=False)


def readable_formula(
    program: str, feature_names: Sequence[str], intercept: float = 0.0, slope: float = 1.0
) -> sympy.Expr:
    """``intercept + slope * program`` as a simplified sympy expression, 4 significant digits.

    ``program`` is gplearn's text of a program (``add(mul(x, b), 0.5)``), read by
    `modeling.estimators.formula.parse_formula`: never evaluated.
    """
    import sympy

    expression = formula.parse_formula(
        program, feature_names, lambda name: sympy.Symbol(name, positive=True)
    )
    expression = sympy.Float(intercept) + sympy.Float(slope) * expression
    if expression_size(expression) <= MAX_SIMPLIFIED_NODES:
        expression = sympy.simplify(expression)
    expression = sympy.expand(expression) if expression.is_polynomial() else expression
    return expression.xreplace(
        {
            number: sympy.Float(number, SIGNIFICANT_DIGITS)
            for number in expression.atoms(sympy.Float)
        }
    )


def expression_size(expression: sympy.Expr) -> int:
    """Nodes in the expression tree (symbols, numbers and operations)."""
    import sympy

    return sum(1 for _ in sympy.preorder_traversal(expression))


class SymbolicRegression(PlainRegressor):
    """gplearn symbolic regression with relative-error fitness and linear scaling.

    X : DataFrame of numeric inputs (its column names become the formula's
    variables); y : target, e.g. peak bytes. ``target_unit`` divides the
    target inside, so constants read in that unit (default GiB); predictions
    come back in the target's own unit.
    """

    # More than six parameters, by scikit-learn's estimator contract: one keyword parameter
    # per hyperparameter, since get_params/set_params and clone read an estimator's settings
    # from its __init__ parameters, by name (a request object would hide them from both).
    def __init__(
        self,
        *,
        population_size: int = 1000,
        generations: int = 20,
        tournament_size: int = 20,
        parsimony_coefficient: float = 1e-4,
        function_set: tuple[str, ...] = FUNCTION_SET,
        init_depth: tuple[int, int] = (2, 4),
        max_samples: float = 1.0,
        target_unit: float = GIB,
        random_state: int = 0,
    ) -> None:
        self.population_size = population_size
        self.generations = generations
        self.tournament_size = tournament_size
        self.parsimony_coefficient = parsimony_coefficient
        self.function_set = function_set
        self.init_depth = init_depth
        self.max_samples = max_samples
        self.target_unit = target_unit
        self.random_state = random_state

    def _validate_settings(self) -> None:
        unknown = [name for name in self.function_set if name not in ALLOWED_FUNCTIONS]
        if unknown or not self.function_set:
            raise ValueError(
                f"function_set {self.function_set!r} has unsupported entries "
                f"{unknown}; allowed: {', '.join(ALLOWED_FUNCTIONS)}"
            )
        if self.target_unit <= 0:
            raise ValueError(f"target_unit must be positive, got {self.target_unit!r}")

    def fit(self, X: pd.DataFrame, y: Any) -> SymbolicRegression:
        from gplearn.genetic import SymbolicRegressor

        self._validate_settings()
        inputs, target = _validated_xy(X, y)
        started = time.perf_counter()
        regressor = SymbolicRegressor(
            population_size=self.population_size,
            generations=self.generations,
            tournament_size=self.tournament_size,
            parsimony_coefficient=self.parsimony_coefficient,
            function_set=self.function_set,
            init_depth=self.init_depth,
            max_samples=self.max_samples,
            metric=scaled_relative_error(),
            feature_names=list(inputs.columns),
            random_state=self.random_state,
            n_jobs=1,
            # Keep only the last generation: the history would make every stored model ~10 MB.
            low_memory=True,
        )
        scaled = target / self.target_unit
        regressor.fit(inputs.to_numpy(dtype=float), scaled)
        # The program as data (no gplearn objects kept): what `to_state` stores.
        self.program_tokens_ = formula.program_tokens(regressor._program.program)
        raw = formula.execute(self.program_tokens_, inputs.to_numpy(dtype=float))
        self.intercept_, self.slope_ = linear_scaling(scaled, raw)
        self.fit_seconds_ = time.perf_counter() - started
        self.program_ = str(regressor._program)
        self.program_length_ = int(regressor._program.length_)
        self.feature_names_in_ = np.asarray(inputs.columns, dtype=object)
        self.n_features_in_ = inputs.shape[1]
        expression = readable_formula(
            self.program_, list(inputs.columns), self.intercept_, self.slope_
        )
        self.formula_ = str(expression)
        self.formula_length_ = expression_size(expression)
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        self.check_fitted()
        inputs = _select(X, list(self.feature_names_in_))
        raw = formula.execute(self.program_tokens_, inputs.to_numpy(dtype=float))
        return (self.intercept_ + self.slope_ * raw) * self.target_unit

    def to_state(self) -> dict[str, Any]:
        """The fitted model as plain data (JSON): settings, program tokens, scaling, formula."""
        self.check_fitted()
        return {
            "settings": _plain(self.get_params()),
            "program_tokens": self.program_tokens_,
            "program": self.program_,
            "program_length": self.program_length_,
            "intercept": self.intercept_,
            "slope": self.slope_,
            "feature_names": [str(name) for name in self.feature_names_in_],
            "formula": self.formula_,
            "formula_length": self.formula_length_,
            "fit_seconds": self.fit_seconds_,
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> SymbolicRegression:
        """The model `to_state` described, ready to predict; `formula.FormulaError` if malformed."""
        settings = dict(state["settings"])
        for name in ("function_set", "init_depth"):
            settings[name] = tuple(settings[name])
        model = cls(**settings)
        model._validate_settings()
        names = [str(name) for name in state["feature_names"]]
        model.program_tokens_ = formula.check_tokens(state["program_tokens"], len(names))
        model.program_ = str(state["program"])
        model.program_length_ = int(state["program_length"])
        model.intercept_, model.slope_ = float(state["intercept"]), float(state["slope"])
        model.feature_names_in_ = np.asarray(names, dtype=object)
        model.n_features_in_ = len(names)
        model.formula_ = str(state["formula"])
        model.formula_length_ = int(state["formula_length"])
        model.fit_seconds_ = float(state["fit_seconds"])
        return model


def _plain(settings: dict[str, Any]) -> dict[str, Any]:
    """Settings with tuples as lists, as JSON holds them."""
    return {name: list(v) if isinstance(v, tuple) else v for name, v in settings.items()}


def _select(X: Any, columns: list[str]) -> pd.DataFrame:
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"X must be a DataFrame with columns {columns}, got {type(X).__name__}")
    missing = [name for name in columns if name not in X.columns]
    if missing:
        raise ValueError(f"X lacks column(s) {', '.join(missing)}; the model was fit on {columns}")
    return X[columns]


def _validated_xy(X: Any, y: Any) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric, finite inputs and a positive, finite target of the same length."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"X must be a DataFrame of named inputs, got {type(X).__name__}")
    target = np.asarray(y, dtype=float).ravel()
    if len(target) != len(X):
        raise ValueError(f"X has {len(X)} rows but y has {len(target)} values")
    if len(X) < MIN_SAMPLES:
        raise ValueError(f"need at least {MIN_SAMPLES} samples to fit a formula, got {len(X)}")
    values = X.to_numpy(dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError("X has missing or infinite values; every input must be a finite number")
    if not np.all(np.isfinite(target)) or np.any(target <= 0):
        raise ValueError("y must be finite and positive (relative error divides by it)")
    return X, target
