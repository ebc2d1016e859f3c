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
loaders take a snapshot of one workload (`core.snapshot.Snapshot`)
and ``machine`` (a profile key; None: whichever profile was evaluated last) and,
without an ``evaluation_id``, read that pair's latest evaluation. A model is
never fitted on runs of two profiles. Rows are written by column name, by
`application.results_store`; this module reads them.

The loaders read a `core.snapshot.Snapshot`, which the application layer read
once: this module never opens the database. Loading a stored model runs nothing
it holds: formulas are token lists, trees are XGBoost JSON or skops arrays
(`modeling.stored.codec`). A row that is not in that format — a pickle of an
older memplan, or a tampered one — is refused with a `ModelingError` naming the
model and saying to refit. Each model row records the library versions that wrote it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Sequence
from typing import Any

import pandas as pd

from core import schema, workloads
from core.dbnames import DB_FLAG
from core.snapshot import Snapshot
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


def no_models_error(source: str, workload: str, machine: str | None = None) -> NoModelsError:
    """The error for no evaluation of ``workload`` (and ``machine``), saying what to run."""
    which = "" if workload == DEFAULT_WORKLOAD else f" of workload {workload!r}"
    flags = f" --workload {workload}" if workload != DEFAULT_WORKLOAD else ""
    if machine is not None:
        which += f" for machine profile {machine}"
        flags += f" --machine {machine}"
    return NoModelsError(
        f"no fitted models{which} in {source} yet; run "
        f"`memplan evaluate{flags} {DB_FLAG} {source}` first"
    )


def load_evaluations(snapshot: Snapshot, machine: str | None = None) -> pd.DataFrame:
    """The evaluations of the snapshot's workload and profile ``machine`` (None: any),
    newest first; empty (with the table's columns) when none was stored."""
    return snapshot.evaluations_of(machine)


def _load_table(
    snapshot: Snapshot, table: str, evaluation_id: str | None, machine: str | None
) -> pd.DataFrame:
    chosen = evaluation_id or snapshot.latest_evaluation_id(machine)
    if chosen is None:
        raise no_models_error(snapshot.source, snapshot.workload, machine)
    return snapshot.rows(table, chosen)


def load_scores(
    snapshot: Snapshot, evaluation_id: str | None = None, machine: str | None = None
) -> pd.DataFrame:
    """Scores of one evaluation (default: the latest of profile ``machine``, None: any)."""
    return _load_table(snapshot, "scores", evaluation_id, machine)


def load_predictions(
    snapshot: Snapshot, evaluation_id: str | None = None, machine: str | None = None
) -> pd.DataFrame:
    """Held-out predictions of one evaluation (default: the latest of profile ``machine``)."""
    return _load_table(snapshot, "predictions", evaluation_id, machine)


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
    snapshot: Snapshot,
    evaluation_id: str | None = None,
    machine: str | None = None,
    names: Collection[str] | None = None,
    lazy: bool = False,
) -> list[Predictor]:
    """The models fit by one evaluation (default: the latest of profile ``machine``).

    names : only these models (None: every one); the others are not decoded at all.
    lazy : decode each when it first predicts (`codec.Stored`), not now.
    """
    frame = _load_table(snapshot, "models", evaluation_id, machine)
    # A NULL is None, as a row read from the database gives it (a frame says NaN).
    rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
    if not rows:
        raise no_models_error(snapshot.source, snapshot.workload, machine)
    source = snapshot.source
    refit = f"memplan evaluate {DB_FLAG} {source}"
    return [predictor_from_row(row, source, refit, lazy) for row in named(rows, names)]


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
    source: str,
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


def load_predictor(snapshot: Snapshot, name: str = BEST, machine: str | None = None) -> Predictor:
    """One stored model of the latest evaluation of profile ``machine``, by name.

    ``"best"`` picks by `best_model_name`.
    """
    return select_predictor(
        load_predictors(snapshot, machine=machine),
        lambda: load_scores(snapshot, machine=machine),
        name,
        snapshot.source,
    )
