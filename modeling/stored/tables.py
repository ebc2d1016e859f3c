"""Fitted models, scores and held-out predictions in DuckDB, next to the runs they came from.

Four tables in the *same* database file as ``runs`` (created here, with
``CREATE TABLE IF NOT EXISTS``, the first time results are stored):

* ``evaluations`` — one row per ``python -m modeling evaluate``: when, the
  command, which data (fingerprint, run and point counts), seeds, machine;
* ``scores`` — one row per model x split kind x seed (`modeling.evaluation.protocol.Score`);
* ``predictions`` — every held-out prediction, so a page can plot measured
  vs predicted without fitting anything;
* ``models`` — each model fit on all the runs: its formula and settings, the
  fitted estimator itself (pickled, BLOB), the columns it reads, its
  conformal bounds and training range. `load_predictors` rebuilds them, so
  the dashboard and ``python -m modeling size`` predict without refitting.

Connections are `core.store`'s: short-lived, retried while a sweep holds
the lock. Pickles are only as trustworthy as the database file: load results
only from databases you (or your team) wrote. A pickle also needs the library
versions that wrote it; each model row records them.
"""

from __future__ import annotations

import json
import pickle
import platform
import socket
import uuid
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from core import store
from modeling.errors import ModelingError, NoModelsError
from modeling.evaluation.bounds import ConformalBound
from modeling.evaluation.protocol import PREDICTION_COLUMNS, Evaluation, Score
from modeling.stored.predictor import Predictor, TrainingRange

SCORE_COLUMNS: tuple[str, ...] = tuple(Score.__dataclass_fields__)
# Libraries whose versions a stored pickle depends on.
PICKLED_LIBRARIES = ("scikit-learn", "xgboost", "gplearn", "numpy")
# The sizing default: the stored model with the lowest worst-case extrapolation error.
BEST = "best"

_DDL: tuple[str, ...] = (
    "CREATE TABLE IF NOT EXISTS evaluations (evaluation_id VARCHAR PRIMARY KEY,"
    " created_at VARCHAR NOT NULL, command VARCHAR, data_fingerprint VARCHAR NOT NULL,"
    " n_runs INTEGER NOT NULL, n_points INTEGER NOT NULL, seeds_json VARCHAR NOT NULL,"
    " hostname VARCHAR, python_version VARCHAR)",
    "CREATE TABLE IF NOT EXISTS scores (evaluation_id VARCHAR NOT NULL, model VARCHAR NOT NULL,"
    " split VARCHAR NOT NULL, seed INTEGER NOT NULL, mape_pct DOUBLE, r2 DOUBLE,"
    " max_ape_pct DOUBLE, n_train INTEGER, n_test INTEGER, fit_seconds DOUBLE,"
    " params_json VARCHAR, validation_mape_pct DOUBLE, formula VARCHAR)",
    "CREATE TABLE IF NOT EXISTS predictions (evaluation_id VARCHAR NOT NULL,"
    " model VARCHAR NOT NULL, split VARCHAR NOT NULL, seed INTEGER NOT NULL,"
    " run_id VARCHAR NOT NULL, measured_bytes DOUBLE, predicted_bytes DOUBLE)",
    "CREATE TABLE IF NOT EXISTS models (model_id VARCHAR PRIMARY KEY,"
    " evaluation_id VARCHAR NOT NULL, name VARCHAR NOT NULL, title VARCHAR, kind VARCHAR,"
    " formula VARCHAR, formula_length INTEGER, params_json VARCHAR, columns_json VARCHAR,"
    " estimator BLOB NOT NULL, fitted_at VARCHAR NOT NULL, fit_seconds DOUBLE,"
    " data_fingerprint VARCHAR, n_runs INTEGER, training_range_json VARCHAR,"
    " bound_json VARCHAR NOT NULL, extrapolation_bound_json VARCHAR, versions_json VARCHAR)",
)
RESULT_TABLES = ("evaluations", "scores", "predictions", "models")


def ensure_tables(con: duckdb.DuckDBPyConnection) -> None:
    """Create the results tables if this database does not have them yet."""
    for statement in _DDL:
        con.execute(statement)


def _bound_json(bound: ConformalBound | None) -> str | None:
    return None if bound is None else json.dumps(bound.__dict__)


def _bound_from(text: str | None) -> ConformalBound | None:
    return None if text is None else ConformalBound(**json.loads(text))


def _versions() -> dict[str, str]:
    return {name: metadata.version(name) for name in PICKLED_LIBRARIES}


def store_results(
    path: Path, evaluation: Evaluation, predictors: Sequence[Predictor], command: str = ""
) -> str:
    """Store an evaluation and its fitted models in one transaction; returns the evaluation_id."""
    evaluation_id = uuid.uuid4().hex
    created_at = store.now_iso()
    scores = evaluation.scores_frame()[list(SCORE_COLUMNS)]
    # None (nothing to choose between) would leave the column untyped for DuckDB.
    scores["validation_mape_pct"] = scores["validation_mape_pct"].astype(float)
    scores.insert(0, "evaluation_id", evaluation_id)
    predictions = evaluation.predictions[list(PREDICTION_COLUMNS)].copy()
    predictions.insert(0, "evaluation_id", evaluation_id)
    versions = json.dumps(_versions(), sort_keys=True)
    with store.transaction(path) as con:
        ensure_tables(con)
        con.execute(
            "INSERT INTO evaluations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [evaluation_id, created_at, command, evaluation.data_fingerprint, evaluation.n_runs,
             evaluation.n_points, json.dumps(evaluation.seeds), socket.gethostname(),
             platform.python_version()],
        )  # fmt: skip
        for table, rows in (("scores", scores), ("predictions", predictions)):
            con.register("_incoming", rows)
            names = ", ".join(rows.columns)
            try:
                con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM _incoming")
            finally:
                con.unregister("_incoming")
        for predictor in predictors:
            con.execute(
                "INSERT INTO models VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [uuid.uuid4().hex, evaluation_id, predictor.name, predictor.title, predictor.kind,
                 predictor.formula, predictor.formula_length, predictor.params_json,
                 json.dumps(list(predictor.columns)), pickle.dumps(predictor.estimator),
                 created_at, predictor.fit_seconds, evaluation.data_fingerprint,
                 evaluation.n_runs, json.dumps(predictor.training_range.to_dict()),
                 _bound_json(predictor.bound), _bound_json(predictor.extrapolation_bound),
                 versions],
            )  # fmt: skip
    return evaluation_id


def _has_results(con: duckdb.DuckDBPyConnection) -> bool:
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'evaluations'"
    ).fetchone()
    return bool(found and found[0])


def _no_models(path: Path) -> NoModelsError:
    return NoModelsError(
        f"no fitted models in {path} yet; run `python -m modeling evaluate --db {path}` first"
    )


def latest_evaluation_id(con: duckdb.DuckDBPyConnection) -> str | None:
    """The newest stored evaluation's id; None when there is none."""
    if not _has_results(con):
        return None
    found = con.execute(
        "SELECT evaluation_id FROM evaluations ORDER BY created_at DESC, rowid DESC LIMIT 1"
    ).fetchone()
    return None if found is None else str(found[0])


def _latest_id(con: duckdb.DuckDBPyConnection, path: Path) -> str:
    found = latest_evaluation_id(con)
    if found is None:
        raise _no_models(path)
    return found


def load_evaluations(path: Path) -> pd.DataFrame:
    """Every stored evaluation, newest first (empty when none was stored)."""
    with store.connect(path, read_only=True) as con:
        if not _has_results(con):
            return pd.DataFrame()
        return con.execute("SELECT * FROM evaluations ORDER BY created_at DESC").df()


def _load_table(path: Path, table: str, evaluation_id: str | None) -> pd.DataFrame:
    with store.connect(path, read_only=True) as con:
        chosen = evaluation_id or _latest_id(con, path)
        return con.execute(
            f"SELECT * FROM {table} WHERE evaluation_id = ? ORDER BY rowid", [chosen]
        ).df()


def load_scores(path: Path, evaluation_id: str | None = None) -> pd.DataFrame:
    """Scores of one evaluation (default: the latest)."""
    return _load_table(path, "scores", evaluation_id)


def load_predictions(path: Path, evaluation_id: str | None = None) -> pd.DataFrame:
    """Held-out predictions of one evaluation (default: the latest)."""
    return _load_table(path, "predictions", evaluation_id)


def _unpickled(row: dict[str, Any]) -> Any:
    # The pickle was written by `store_results` into this database (see module docstring).
    try:
        return pickle.loads(bytes(row["estimator"]))
    except Exception as error:  # an unpickling failure can raise nearly anything
        raise ModelingError(
            f"stored model {row['name']!r} cannot be loaded here ({type(error).__name__}: "
            f"{error}); it was written with {row['versions_json']}, this environment has "
            f"{json.dumps(_versions(), sort_keys=True)}. Refit with `python -m modeling evaluate`"
        ) from error


def _predictor(row: dict[str, Any]) -> Predictor:
    return Predictor(
        name=row["name"],
        title=row["title"],
        kind=row["kind"],
        estimator=_unpickled(row),
        columns=tuple(json.loads(row["columns_json"])),
        bound=_bound_from(row["bound_json"]),
        extrapolation_bound=_bound_from(row["extrapolation_bound_json"]),
        training_range=TrainingRange.from_dict(json.loads(row["training_range_json"])),
        params_json=row["params_json"],
        formula=row["formula"],
        formula_length=None if pd.isna(row["formula_length"]) else int(row["formula_length"]),
        fit_seconds=float(row["fit_seconds"]),
    )


def load_predictors(path: Path, evaluation_id: str | None = None) -> list[Predictor]:
    """The models fit by one evaluation (default: the latest), ready to predict."""
    with store.connect(path, read_only=True) as con:
        chosen = evaluation_id or _latest_id(con, path)
        result = con.execute(
            "SELECT * FROM models WHERE evaluation_id = ? ORDER BY rowid", [chosen]
        )
        columns = [description[0] for description in result.description]
        rows = [dict(zip(columns, values, strict=True)) for values in result.fetchall()]
    if not rows:
        raise _no_models(path)
    return [_predictor(row) for row in rows]


def best_model_name(scores: pd.DataFrame, split: str = "extrapolation") -> str:
    """The model with the lowest worst-case error on ``split``, then the lowest mean MAPE.

    Sizing mostly asks beyond the data, and running out of memory is what it must
    avoid: the worst single error on the extrapolation split matters more than the mean.
    """
    mine = scores[scores["split"] == split]
    if mine.empty:
        mine = scores
    ranked = mine.groupby("model").agg(worst=("max_ape_pct", "max"), mean=("mape_pct", "mean"))
    return str(ranked.sort_values(["worst", "mean"], kind="stable").index[0])


def load_predictor(path: Path, name: str = BEST) -> Predictor:
    """One stored model of the latest evaluation by name; ``"best"`` picks by `best_model_name`."""
    predictors = load_predictors(path)
    if name == BEST:
        name = best_model_name(load_scores(path))
    for predictor in predictors:
        if predictor.name == name:
            return predictor
    known = ", ".join([BEST, *(predictor.name for predictor in predictors)])
    raise ModelingError(f"no stored model {name!r} in {path}; known: {known}")
