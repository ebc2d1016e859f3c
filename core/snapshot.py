"""What one question reads of a database, read once: a workload's runs and stored models.

Modeling is pure over data: it never opens the database (issue 39). The application
layer reads a `Snapshot` once per question (`read`: one connection, one query of the
runs) and hands it to every modeling function the question needs, which select from
it what they used to read for themselves: a profile's ok runs, the latest evaluation
of a profile, that evaluation's scores, held-out predictions and model rows.

Only the latest evaluation of each machine profile (and of the workload, any profile)
has its scores, predictions and models in the snapshot: the only ones an answer, a
page or a report reads without naming an evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa

from core import database, profiles, store, targets

RESULT_ROWS = ("scores", "predictions", "models")


@dataclass(frozen=True)
class Snapshot:
    """One workload's runs and stored evaluations, as a database held them when read.

    source : the database they were read from, in words (a path), for the messages that
    name what to run on it; never opened again. runs : every run of ``workload``, any
    status (`core.store.RUN_COLUMNS`). evaluations : the workload's evaluations, newest
    first. scores, predictions, models : the rows of the latest evaluation of each
    profile, in stored order.
    """

    source: str
    workload: str
    runs: pd.DataFrame
    evaluations: pd.DataFrame
    scores: pd.DataFrame
    predictions: pd.DataFrame
    models: pd.DataFrame
    # What is worked out of the frames once per snapshot (`remembered`): the runs' profile
    # keys took ~0.1 s for the 292 bundled U-Net runs (2-core Xeon VM, loaded), and which
    # bundles apply ~1.6 s a pass; one answer asks for them several times.
    _memo: dict[Hashable, Any] = field(default_factory=dict, repr=False, compare=False)

    def remembered(self, key: Hashable, compute: Callable[[], Any]) -> Any:
        """``compute()``, worked out once per snapshot under ``key``; never mutate it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def _keys(self) -> np.ndarray:
        """Each run's profile key (`core.profiles.profile_keys`), in the order of ``runs``."""

        def keys() -> np.ndarray:
            return np.asarray(profiles.profile_keys(self.runs), dtype=object)

        return self.remembered("profile keys", keys)

    def ok_runs(self, machine: str | None = None) -> pd.DataFrame:
        """The ok runs, of the profile ``machine`` if given (a key; `core.profiles`): what
        `core.store.load_runs` of ``RunFilter(status="ok")`` returns, column types too."""
        ok = (self.runs["status"] == "ok").to_numpy()
        # Typed once per snapshot: which bundles apply asks it once per bundle (~30 ms each).
        runs = self.remembered("ok runs", lambda: as_queried(self.runs[ok].reset_index(drop=True)))
        if machine is None or runs.empty:
            return runs.copy()
        return runs[self._keys()[ok] == machine].reset_index(drop=True)

    def keyed_ok_runs(self) -> pd.DataFrame:
        """`ok_runs` with each run's profile key in `core.profiles.KEY_COLUMN`: keyed once per
        snapshot, as ``ok_runs(machine)`` picks them."""
        ok = (self.runs["status"] == "ok").to_numpy()
        runs = self.ok_runs()
        keys = pd.Series(self._keys()[ok], index=runs.index, dtype=object)
        return runs.assign(**{profiles.KEY_COLUMN: keys})

    def runs_of(self, machine: str | None) -> pd.DataFrame:
        """Every run (any status) of the profile ``machine``; None: every profile's."""
        if machine is None or self.runs.empty:
            return self.runs.copy()
        return self.runs[self._keys() == machine].reset_index(drop=True)

    def evaluations_of(self, machine: str | None = None) -> pd.DataFrame:
        """The evaluations of profile ``machine`` (None: any), newest first."""
        if machine is None:
            return self.evaluations.copy()
        chosen = self.evaluations["machine_profile"] == machine
        return as_queried(self.evaluations[chosen].reset_index(drop=True))

    def latest_evaluation_id(self, machine: str | None = None) -> str | None:
        """The newest evaluation of profile ``machine`` (None: of any); None if there is none."""
        found = self.evaluations_of(machine)
        return None if found.empty else str(found["evaluation_id"].iloc[0])

    def rows(self, table: str, evaluation_id: str) -> pd.DataFrame:
        """The ``table`` rows (scores, predictions, models) of ``evaluation_id``, in order."""
        frame: pd.DataFrame = getattr(self, table)
        return as_queried(frame[frame["evaluation_id"] == evaluation_id].reset_index(drop=True))


def as_queried(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` (some of a read's) with the column types a query of just them returns:
    DuckDB gives a nullable integer or boolean column only where the rows hold a NULL, and a
    text column of objects (None) where they hold nothing but NULL."""
    rows = rows.copy()
    for column in rows.columns:
        dtype, missing = rows[column].dtype, rows[column].isna()
        nullable = isinstance(dtype, pd.Int64Dtype | pd.Int32Dtype | pd.BooleanDtype)
        if nullable and not missing.any():
            rows[column] = rows[column].to_numpy(dtype=dtype.numpy_dtype)
        elif isinstance(dtype, pd.StringDtype) and missing.all():
            rows[column] = pd.Series([None] * len(rows), index=rows.index, dtype=object)
    return rows


def read(path: Path, workload: str) -> Snapshot:
    """``workload``'s snapshot of the database at ``path``: one read-only connection."""
    with database.connect(Path(path), read_only=True) as con:
        return read_from(con, str(path), workload)


def read_from(con: duckdb.DuckDBPyConnection, source: str, workload: str) -> Snapshot:
    """``workload``'s snapshot through an open connection ``con`` to the database ``source``.

    Its runs are the host-RAM runs: the models, machines and answers a snapshot feeds
    are host RAM's, and a GPU run (no host figure, no CPU facts) is not a machine of
    theirs. GPU answers read their own runs (`application.gpu_models`)."""
    runs = store.runs_in(con, {"workload": workload, targets.TARGET_COLUMN: targets.HOST_RAM})
    evaluations = con.execute(
        "SELECT * FROM evaluations WHERE workload = ? ORDER BY created_at DESC, rowid DESC",
        [workload],
    ).df()
    latest = _latest_ids(evaluations)
    tables = {
        table: con.execute(
            f"SELECT * FROM {table} WHERE list_contains(?::VARCHAR[], evaluation_id) "
            "ORDER BY rowid",
            [latest],
        ).df()
        for table in RESULT_ROWS
    }
    return Snapshot(source, workload, runs, evaluations, **tables)


def _latest_ids(evaluations: pd.DataFrame) -> list[str]:
    """The newest evaluation of each profile (a NULL profile counted as one)."""
    profiles_seen = (
        evaluations["machine_profile"]
        .astype(object)
        .where(evaluations["machine_profile"].notna(), None)
    )
    first = ~profiles_seen.duplicated()
    return [str(value) for value in evaluations.loc[first, "evaluation_id"]]


def as_read(rows: pa.Table) -> pd.DataFrame:
    """``rows`` (an export's table) as a frame of the column types a `read` returns."""
    with duckdb.connect() as con:  # in memory: no file
        return con.from_arrow(rows).df()
