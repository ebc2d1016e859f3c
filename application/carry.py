"""An evaluation of some models keeps the others: ``memplan evaluate --models`` adds, never drops.

Answers and pages read a workload and profile's *latest* evaluation
(`core.snapshot.Snapshot.latest_evaluation_id`; `latest_evaluation_id` here asks the
same of the connection that stores the next one). An evaluation of a few models
(``--models least_squares``) used to become that latest evaluation with only
those models, and every other model of the catalogue vanished from the answers
and the pages. `carry_models` copies the other models of the evaluation it
follows — their scores, held-out predictions and fitted models — into the new
one, in the same transaction, so the latest evaluation still has them. Each
copied model row keeps its own ``fitted_at``, ``data_fingerprint`` and ``n_runs``:
the runs it was fitted on.
"""

from __future__ import annotations

from collections.abc import Collection

import duckdb

from core import schema

# Where each results table names a row's model.
_MODEL_COLUMN = {"scores": "model", "predictions": "model", "models": "name"}
# A fresh id for a copied model row, as `application.results_store` makes them (uuid4, hex).
_NEW_MODEL_ID = "replace(CAST(uuid() AS VARCHAR), '-', '')"


def latest_evaluation_id(
    con: duckdb.DuckDBPyConnection, workload: str, machine: str | None
) -> str | None:
    """The newest stored evaluation of ``workload`` (of profile ``machine`` when given)."""
    chosen = {"workload": workload, "machine_profile": machine}
    given = {name: value for name, value in chosen.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in given)
    found = con.execute(
        f"SELECT evaluation_id FROM evaluations WHERE {where}"
        " ORDER BY created_at DESC, rowid DESC LIMIT 1",
        list(given.values()),
    ).fetchone()
    return None if found is None else str(found[0])


def carry_models(
    con: duckdb.DuckDBPyConnection, previous_id: str, evaluation_id: str, names: Collection[str]
) -> list[str]:
    """Copy the models of evaluation ``previous_id`` not in ``names`` into ``evaluation_id``.

    Returns the names copied (in their stored order). Run it in the transaction
    that stores ``evaluation_id``.
    """
    fitted = [
        row[0]
        for row in con.execute(
            "SELECT name FROM models WHERE evaluation_id = ? ORDER BY rowid", [previous_id]
        ).fetchall()
    ]
    kept = [name for name in fitted if name not in set(names)]
    if not kept:
        return []
    for table, model_column in _MODEL_COLUMN.items():
        columns = schema.columns_of(con, table)
        chosen = [
            "?" if column == "evaluation_id" else _NEW_MODEL_ID if column == "model_id" else column
            for column in columns
        ]
        con.execute(
            f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(chosen)} FROM {table}"
            f" WHERE evaluation_id = ? AND list_contains(?, {model_column}) ORDER BY rowid",
            [evaluation_id, previous_id, kept],
        )
    return kept
