"""Storing an evaluation: its ``evaluations`` row, scores, held-out predictions and models.

`store_results` writes them in one transaction, by column name, into the results
tables of `core.schema` that `modeling.stored.tables` reads back. Each model row
records the library versions that wrote it, and its fitted estimator as data
(`modeling.stored.codec`), never as a pickle.
"""

from __future__ import annotations

import json
import platform
import socket
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from application.carry import carry_models, latest_evaluation_id
from core import database, store, workloads
from modeling.errors import ModelingError
from modeling.evaluation.bounds import ConformalBound
from modeling.evaluation.protocol import PREDICTION_COLUMNS, Evaluation, Score
from modeling.stored import codec
from modeling.stored.predictor import Predictor

SCORE_COLUMNS: tuple[str, ...] = tuple(Score.__dataclass_fields__)
# Libraries whose versions a stored model was written with.
STORED_LIBRARIES = ("scikit-learn", "xgboost", "gplearn", "skops", "numpy")


def _insert_row(con: duckdb.DuckDBPyConnection, table: str, row: dict[str, Any]) -> None:
    names = list(row)
    con.execute(
        f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})",
        [row[name] for name in names],
    )


def _bound_json(bound: ConformalBound | None) -> str | None:
    return None if bound is None else json.dumps(bound.__dict__)


def _versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in STORED_LIBRARIES}


@dataclass(frozen=True)
class EvaluationFacts:
    """What an evaluation was of, stored in its ``evaluations`` row.

    command : the command line that ran it ("" when not from a command).
    workload : the workload whose runs it fit.
    machine : the profile key of the runs it fit (`core.profiles`); None only for
        runs whose profile is not one.
    steps : the training steps of every run it fit; None: not known.
    other_steps : step count -> usable runs at it the evaluation left out; None:
        not recorded.
    """

    command: str = ""
    workload: str = workloads.DEFAULT_WORKLOAD
    machine: str | None = None
    steps: int | None = None
    other_steps: Mapping[int, int] | None = None
    subset: bool = False


def store_results(
    path: Path,
    evaluation: Evaluation,
    predictors: Sequence[Predictor],
    facts: EvaluationFacts = EvaluationFacts(),
) -> str:
    """Store an evaluation of ``facts.workload``'s runs and its fitted models in one transaction.

    Returns the evaluation_id.
    """
    if not facts.workload:
        raise ModelingError("an evaluation needs the workload whose runs it fit, e.g. 'unet3d'")
    evaluation_id = uuid.uuid4().hex
    created_at = store.now_iso()
    scores = evaluation.scores_frame()[list(SCORE_COLUMNS)]
    # None (nothing to choose between) would leave the column untyped for DuckDB.
    scores["validation_mape_pct"] = scores["validation_mape_pct"].astype(float)
    scores.insert(0, "evaluation_id", evaluation_id)
    predictions = evaluation.predictions[list(PREDICTION_COLUMNS)].copy()
    predictions.insert(0, "evaluation_id", evaluation_id)
    versions = json.dumps(_versions(), sort_keys=True)
    with database.transaction(path) as con:
        previous_id = latest_evaluation_id(con, facts.workload, facts.machine)
        row = _evaluation_row(evaluation, facts, evaluation_id, created_at)
        _insert_row(con, "evaluations", row)
        for table, rows in (("scores", scores), ("predictions", predictions)):
            _insert_frame(con, table, rows)
        for predictor in predictors:
            _insert_row(con, "models", _model_row(predictor, row, versions))
        if facts.subset and previous_id is not None:
            carry_models(con, previous_id, evaluation_id, [p.name for p in predictors])
    return evaluation_id


def _evaluation_row(
    evaluation: Evaluation, facts: EvaluationFacts, evaluation_id: str, created_at: str
) -> dict[str, Any]:
    """The ``evaluations`` row of ``evaluation``, stored as ``evaluation_id`` at ``created_at``."""
    other_steps = facts.other_steps
    return {
        "evaluation_id": evaluation_id,
        "workload": facts.workload,
        "machine_profile": facts.machine,
        "created_at": created_at,
        "command": facts.command,
        "data_fingerprint": evaluation.data_fingerprint,
        "n_runs": evaluation.n_runs,
        "n_points": evaluation.n_points,
        "seeds_json": json.dumps(evaluation.seeds),
        "hostname": socket.gethostname(),
        "python_version": platform.python_version(),
        "steps": facts.steps,
        "other_steps_json": None
        if other_steps is None
        else json.dumps({str(k): int(v) for k, v in sorted(other_steps.items())}),
    }


def _model_row(predictor: Predictor, evaluation: dict[str, Any], versions: str) -> dict[str, Any]:
    """The ``models`` row of ``predictor``, fitted by the ``evaluations`` row ``evaluation``."""
    return {
        "model_id": uuid.uuid4().hex,
        "evaluation_id": evaluation["evaluation_id"],
        "name": predictor.name,
        "title": predictor.title,
        "kind": predictor.kind,
        "formula": predictor.formula,
        "formula_length": predictor.formula_length,
        "params_json": predictor.params_json,
        "columns_json": json.dumps(list(predictor.columns)),
        "estimator": codec.encode(predictor.estimator),
        "fitted_at": evaluation["created_at"],
        "fit_seconds": predictor.fit_seconds,
        "data_fingerprint": evaluation["data_fingerprint"],
        "n_runs": evaluation["n_runs"],
        "training_range_json": json.dumps(predictor.training_range.to_dict()),
        "bound_json": _bound_json(predictor.bound),
        "extrapolation_bound_json": _bound_json(predictor.extrapolation_bound),
        "versions_json": versions,
    }


def _insert_frame(con: duckdb.DuckDBPyConnection, table: str, rows: pd.DataFrame) -> None:
    con.register("_incoming", rows)
    names = ", ".join(rows.columns)
    try:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _incoming")
    finally:
        con.unregister("_incoming")
