"""The catalogue of models `memplan evaluate` compares, each with its candidate settings.

A `ModelSpec` says how to build a model for a training frame (``build``),
which feature columns it reads (``columns``), and which settings
`modeling.evaluation.selection` may choose between on validation data (``candidates``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from modeling.errors import ModelingError
from modeling.estimators.analytical import PaperModel, RefinedAnalyticalModel
from modeling.estimators.baselines import (
    CANDIDATES,
    ML_KINDS,
    AnalyticalLeastSquares,
    make_regressor,
)
from modeling.estimators.hybrid import HybridSymbolicRegression
from modeling.estimators.symbolic import SETTINGS_CANDIDATES, SymbolicRegression
from modeling.features import BASELINE_COLUMN, analytical_columns, model_inputs

ANALYTICAL = "analytical"
LEAST_SQUARES = "least squares"
SYMBOLIC = "symbolic regression"
HYBRID = "hybrid"
MACHINE_LEARNING = "machine learning"

# Tiny settings for `--quick` runs and tests: seconds, not minutes.
QUICK_SYMBOLIC_CANDIDATES: tuple[dict[str, Any], ...] = (
    {"population_size": 200, "generations": 5},
)


@dataclass(frozen=True)
class ModelSpec:
    """How to build, feed and tune one model of the comparison."""

    name: str  # short, used on the command line and as the key in the database
    title: str  # for tables
    kind: str
    build: Callable[[pd.DataFrame, dict[str, Any], int], Any]  # (train, settings, seed)
    columns: Callable[[pd.DataFrame], list[str]]
    candidates: tuple[dict[str, Any], ...] = ({},)


def _analytical_columns(frame: pd.DataFrame) -> list[str]:
    return [*analytical_columns(), BASELINE_COLUMN]


def _batch_of_one_columns(frame: pd.DataFrame) -> list[str]:
    return [*_analytical_columns(frame), "batch_size"]


def _hybrid_columns(frame: pd.DataFrame) -> list[str]:
    return [*model_inputs(frame), *_analytical_columns(frame)]


def _symbolic(frame: pd.DataFrame, params: dict[str, Any], seed: int) -> SymbolicRegression:
    return SymbolicRegression(random_state=seed, **params)


def _hybrid(mode: str) -> Callable[[pd.DataFrame, dict[str, Any], int], Any]:
    def build(frame: pd.DataFrame, params: dict[str, Any], seed: int) -> HybridSymbolicRegression:
        return HybridSymbolicRegression(
            mode=mode, shape_inputs=tuple(model_inputs(frame)), random_state=seed, **params
        )

    return build


def _ml(kind: str) -> Callable[[pd.DataFrame, dict[str, Any], int], Any]:
    def build(frame: pd.DataFrame, params: dict[str, Any], seed: int) -> Any:
        return make_regressor(kind, random_state=seed, **params)

    return build


ML_TITLES = {
    "xgboost": "XGBoost",
    "random_forest": "random forest",
    "extra_trees": "extremely randomized trees",
    "mlp": "neural network (MLP)",
}


def _least_squares_specs() -> list[ModelSpec]:
    """Least squares on the analytical terms, alone and with each extra term."""
    return [
        ModelSpec(
            "least_squares",
            "least squares on analytical terms",
            LEAST_SQUARES,
            lambda frame, params, seed: AnalyticalLeastSquares(),
            _analytical_columns,
        ),
        ModelSpec(
            "least_squares_workspace",
            "least squares on analytical terms + conv workspace",
            LEAST_SQUARES,
            lambda frame, params, seed: AnalyticalLeastSquares(workspace=True),
            _analytical_columns,
        ),
        ModelSpec(
            "least_squares_batch_of_one",
            "least squares on analytical terms + batch-of-one term",
            LEAST_SQUARES,
            lambda frame, params, seed: AnalyticalLeastSquares(batch_of_one=True),
            _batch_of_one_columns,
        ),
    ]


def catalogue(*, quick: bool = False) -> tuple[ModelSpec, ...]:
    """Every model of the comparison; ``quick`` shrinks symbolic regression to seconds."""
    symbolic = QUICK_SYMBOLIC_CANDIDATES if quick else SETTINGS_CANDIDATES
    specs = [
        ModelSpec(
            "paper",
            "paper analytical (Eq. 1 + Eq. 2)",
            ANALYTICAL,
            lambda frame, params, seed: PaperModel(),
            _analytical_columns,
        ),
        ModelSpec(
            "refined",
            "refined analytical (closed form)",
            ANALYTICAL,
            lambda frame, params, seed: RefinedAnalyticalModel(),
            _analytical_columns,
        ),
        *_least_squares_specs(),
        ModelSpec(
            "symbolic", "symbolic regression (gplearn)", SYMBOLIC, _symbolic, model_inputs, symbolic
        ),
        ModelSpec(
            "hybrid_ratio",
            "hybrid: SR of measured / refined",
            HYBRID,
            _hybrid("ratio"),
            _hybrid_columns,
            symbolic,
        ),
        ModelSpec(
            "hybrid_terms",
            "hybrid: SR given analytical terms",
            HYBRID,
            _hybrid("terms"),
            _hybrid_columns,
            symbolic,
        ),
    ]
    specs += [
        ModelSpec(
            kind, ML_TITLES[kind], MACHINE_LEARNING, _ml(kind), model_inputs, CANDIDATES[kind]
        )
        for kind in ML_KINDS
    ]
    return tuple(specs)


def spec_names(specs: tuple[ModelSpec, ...]) -> list[str]:
    return [spec.name for spec in specs]


def pick(specs: tuple[ModelSpec, ...], names: list[str] | None) -> tuple[ModelSpec, ...]:
    """The specs named (all if ``names`` is None); an unknown name is an error listing all."""
    if names is None:
        return specs
    known = {spec.name: spec for spec in specs}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ModelingError(
            f"unknown model(s) {', '.join(unknown)}; known: {', '.join(spec_names(specs))}"
        )
    return tuple(known[name] for name in names)
