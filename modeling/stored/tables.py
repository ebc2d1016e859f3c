"""Fitted models, scores and held-out predictions in DuckDB, next to the runs they came from.

Four tables in the *same* database file as ``runs``, part of its schema
(`core.schema`, which also migrates the results of older databases):

* ``evaluations`` — one row per ``memplan evaluate``: the workload
  whose runs it fit, when, the command, which data (fingerprint, run and point
  counts, the step count of its runs and the runs at other step counts it left
  out: `modeling.evaluation.steps`), seeds, machine;
* ``scores`` — one row per model x split kind x seed (`modeling.evaluation.protocol.Score`);
* ``predictions`` — every held-out prediction, so a page can plot measured
  vs predicted without fitting anything;
* ``models`` — each model fit on all the runs: its formula and settings, the
  fitted estimator itself (BLOB, as data: `modeling.stored.codec`), the
  columns it reads, its conformal bounds and training range. `load_predictors`
  rebuilds them, so the dashboard and ``memplan size`` predict
  without refitting.

Each workload and machine profile (`core.profiles`) has its own evaluations: the
loaders take ``workload`` (default ``unet3d``, the only one before schema 2)
and ``machine`` (a profile key; None: whichever profile was evaluated last) and,
without an ``evaluation_id``, read that pair's latest evaluation. A model is
never fitted on runs of two profiles. Rows are written by column name, by
`modeling.stored.writer`; this module reads them.

Connections are `core.store`'s: short-lived, retried while a sweep holds
the lock. Loading a stored model runs nothing it holds: formulas are token
lists, trees are XGBoost JSON or skops arrays (`modeling.stored.codec`). A row
that is not in that format — a pickle of an older memplan, or a tampered
one — is refused with a `ModelingError` naming the model and saying to refit.
Each model row records the library versions that wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from core import database, schema, workloads
from modeling.errors import ModelingError, NoModelsError
from modeling.evaluation.bounds import ConformalBound
from modeling.stored import codec
from modeling.stored.predictor import Predictor, TrainingRange

RESULT_TABLES: tuple[str, ...] = schema.RESULT_TABLES
# The sizing default: the stored model whose weakest split is best (`best_model_name`).
BEST = "best"

# What the loaders read unless told otherwise: the only workload before schema 2.
DEFAULT_WORKLOAD: str = workloads.DEFAULT_WORKLOAD


def _bound_from(text: str | None) -> ConformalBound | None:
    return None if text is None else ConformalBound(**json.loads(text))


def no_models_error(path: Path, workload: str, machine: str | None = None) -> NoModelsError:
    """The error for no evaluation of ``workload`` (and ``machine``), saying what to run."""
    which = "" if workload == DEFAULT_WORKLOAD else f" of workload {workload!r}"
    flags = f" --workload {workload}" if workload != DEFAULT_WORKLOAD else ""
    if machine is not None:
        which += f" for machine profile {machine}"
        flags += f" --machine {machine}"
    return NoModelsError(
        f"no fitted models{which} in {path} yet; run `memplan evaluate{flags} --db {path}` first"
    )


def _evaluation_filter(workload: str | None, machine: str | None) -> tuple[str, list[Any]]:
    """A WHERE clause (empty when nothing is chosen) and its parameters."""
    chosen = {"workload": workload, "machine_profile": machine}
    given = {name: value for name, value in chosen.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in given)
    return (f"WHERE {where}" if where else ""), list(given.values())


def latest_evaluation_id(
    con: duckdb.DuckDBPyConnection,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
) -> str | None:
    """The newest stored evaluation of ``workload`` (for profile ``machine`` if given)."""
    where, params = _evaluation_filter(workload, machine)
    found = con.execute(
        f"SELECT evaluation_id FROM evaluations {where} ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1",
        params,
    ).fetchone()
    return None if found is None else str(found[0])


def _latest_id(
    con: duckdb.DuckDBPyConnection, path: Path, workload: str, machine: str | None
) -> str:
    found = latest_evaluation_id(con, workload, machine)
    if found is None:
        raise no_models_error(path, workload, machine)
    return found


def load_evaluations(
    path: Path, workload: str | None = DEFAULT_WORKLOAD, machine: str | None = None
) -> pd.DataFrame:
    """The stored evaluations of ``workload`` and ``machine`` (None: any), newest first.

    Empty (with the table's columns) when none was stored.
    """
    where, params = _evaluation_filter(workload, machine)
    with database.connect(path, read_only=True) as con:
        return con.execute(
            f"SELECT * FROM evaluations {where} ORDER BY created_at DESC, rowid DESC", params
        ).df()


def _load_table(
    path: Path, table: str, evaluation_id: str | None, workload: str, machine: str | None
) -> pd.DataFrame:
    with database.connect(path, read_only=True) as con:
        chosen = evaluation_id or _latest_id(con, path, workload, machine)
        return con.execute(
            f"SELECT * FROM {table} WHERE evaluation_id = ? ORDER BY rowid", [chosen]
        ).df()


def load_scores(
    path: Path,
    evaluation_id: str | None = None,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
) -> pd.DataFrame:
    """Scores of one evaluation (default: the latest of ``workload`` and ``machine``)."""
    return _load_table(path, "scores", evaluation_id, workload, machine)


def load_predictions(
    path: Path,
    evaluation_id: str | None = None,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
) -> pd.DataFrame:
    """Held-out predictions of one evaluation (default: the latest of ``workload``, ``machine``)."""
    return _load_table(path, "predictions", evaluation_id, workload, machine)


def _estimator(row: dict[str, Any], source: str, refit: str, lazy: bool = False) -> Any:
    """The stored estimator of ``row``, rebuilt from data (``lazy``: when first used,
    `codec.Stored`); refused with a message if it is not."""

    def refused(error: codec.UnreadableModel) -> ModelingError:
        return ModelingError(
            f"stored model {row['name']!r} in {source} is refused, nothing of it was run: "
            f"{error}. Re-run `{refit}` to refit the models and store them as data "
            f"(this one was written with {row['versions_json']})"
        )

    try:
        return codec.Stored(row["estimator"], refused) if lazy else codec.decode(row["estimator"])
    except codec.UnreadableModel as error:
        raise refused(error) from None


def predictor_from_row(
    row: dict[str, Any], source: str, refit: str, lazy: bool = False
) -> Predictor:
    """A ``models`` row (column -> value) as a `Predictor`.

    ``source`` names where the row came from and ``refit`` the command that
    replaces it, for the message that refuses a row not stored as data. lazy :
    decode the estimator when it first predicts (`codec.Stored`), not now.
    """
    return Predictor(
        name=row["name"],
        title=row["title"],
        kind=row["kind"],
        estimator=_estimator(row, source, refit, lazy),
        columns=tuple(json.loads(row["columns_json"])),
        bound=_bound_from(row["bound_json"]),
        extrapolation_bound=_bound_from(row["extrapolation_bound_json"]),
        training_range=TrainingRange.from_dict(json.loads(row["training_range_json"])),
        params_json=row["params_json"],
        # A model without one reads back as a missing value (NaN from a bundle's Parquet).
        formula=None if pd.isna(row["formula"]) else str(row["formula"]),
        formula_length=None if pd.isna(row["formula_length"]) else int(row["formula_length"]),
        fit_seconds=float(row["fit_seconds"]),
    )


def load_predictors(
    path: Path,
    evaluation_id: str | None = None,
    workload: str = DEFAULT_WORKLOAD,
    machine: str | None = None,
    names: Collection[str] | None = None,
    lazy: bool = False,
) -> list[Predictor]:
    """The models fit by one evaluation (default: the latest of ``workload``, ``machine``).

    names : only these models (None: every one); the others are not decoded at all.
    lazy : decode each when it first predicts (`codec.Stored`), not now.
    """
    with database.connect(path, read_only=True) as con:
        chosen = evaluation_id or _latest_id(con, path, workload, machine)
        result = con.execute(
            "SELECT * FROM models WHERE evaluation_id = ? ORDER BY rowid", [chosen]
        )
        columns = [description[0] for description in result.description]
        rows = [dict(zip(columns, values, strict=True)) for values in result.fetchall()]
    if not rows:
        raise no_models_error(path, workload, machine)
    refit = f"memplan evaluate --db {path}"
    return [predictor_from_row(row, str(path), refit, lazy) for row in named(rows, names)]


def named(rows: list[dict[str, Any]], names: Collection[str] | None) -> list[dict[str, Any]]:
    """The ``models`` rows called one of ``names``; every row when ``names`` is None."""
    return rows if names is None else [row for row in rows if row["name"] in names]


# Mean MAPEs are compared to this many decimals (0.1 percentage point): finer
# differences are far below the run-to-run noise of a peak (1-7%, docs/runs.md,
# "The measurement floor") and would pick a model by chance.
MAPE_DECIMALS = 1


def best_model_name(scores: pd.DataFrame) -> str:
    """The model whose weakest split is best: the lowest of its largest per-split mean MAPE
    (to `MAPE_DECIMALS`), then the lowest of its largest single-point error.

    Every split kind asks its own question: random, a configuration among those
    measured; extrapolation, a larger image; knob, a network not measured. Sizing
    answers all three, so a model is as good as its worst kind of question; on a
    tie, the one whose worst single error is smaller (running out of memory is what
    sizing must avoid). The upper bounds carry the risk of each answer; this picks
    the answer that is usually closest.
    """
    per_kind = scores.groupby(["model", "split"]).agg(
        mean=("mape_pct", "mean"), worst=("max_ape_pct", "max")
    )
    ranked = per_kind.groupby("model").agg(mean=("mean", "max"), worst=("worst", "max"))
    ranked["mean"] = ranked["mean"].round(MAPE_DECIMALS)
    return str(ranked.sort_values(["mean", "worst"], kind="stable").index[0])


def select_predictor(
    predictors: Sequence[Predictor],
    scores: Callable[[], pd.DataFrame],
    name: str,
    source: Path | str,
) -> Predictor:
    """The model called ``name`` among ``predictors``; ``"best"`` picks by `best_model_name`.

    scores : reads the evaluation's scores, only asked for ``"best"``.
    """
    if name == BEST:
        name = best_model_name(scores())
    for predictor in predictors:
        if predictor.name == name:
            return predictor
    known = ", ".join([BEST, *(predictor.name for predictor in predictors)])
    raise ModelingError(f"no stored model {name!r} in {source}; known: {known}")


def load_predictor(
    path: Path, name: str = BEST, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> Predictor:
    """One stored model of the latest evaluation of ``workload`` and ``machine``, by name.

    ``"best"`` picks by `best_model_name`.
    """
    return select_predictor(
        load_predictors(path, workload=workload, machine=machine),
        lambda: load_scores(path, workload=workload, machine=machine),
        name,
        path,
    )
