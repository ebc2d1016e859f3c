"""The bundled evaluation: fitted models and scores shipped beside the bundled reference runs.

A fresh checkout's default database is built from `data/reference_runs.parquet`
(`core.database.ensure_database`); the models the dashboard and
``python -m modeling size`` predict with come from a full
``python -m modeling evaluate`` of those same runs, which takes ~17 minutes on
a 2-core machine. Rather than make every new user wait for it, the results of
one such evaluation are exported to `data/reference_results/` (one Parquet file
per results table) and copied into the default database the first time it is
read, but only while that database still holds exactly the runs of that
workload they were fit on (same data fingerprint): a database with other runs
needs its own evaluation.

    python -m modeling export-results data/reference_results --db results.duckdb

An export is stamped with its schema version like a runs export (Parquet
metadata ``memplan_schema_version``, `core.datafiles`). One without it is from
schema 1, as `data/reference_results/` is: its evaluation has no ``workload``
and is a ``unet3d`` one. Installing brings it to the current schema; a newer
export is refused, naming both versions. Its models are stored as data
(`modeling.stored.codec`; `scripts/convert_bundled_models.py` converted the
pickles they once were).

Reading never needs the install: `load_predictors`, `load_scores` and
`load_predictions` answer from the database's latest evaluation of a workload
and, when it has none but holds exactly the runs a bundle was fit on, from
that bundle's files read into memory. Read-only mode
(`modeling.stored.readonly`) and ``python -m modeling size`` use only those,
so they never write.
"""

from __future__ import annotations

import functools
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from core import database, datafiles, schema, store
from modeling.errors import ModelingError, NoModelsError
from modeling.evaluation.protocol import data_fingerprint
from modeling.features import measured_frame
from modeling.stored import tables
from modeling.stored.predictor import Predictor
from modeling.stored.tables import (
    BEST,
    DEFAULT_WORKLOAD,
    RESULT_TABLES,
    latest_evaluation_id,
    select_predictor,
)

BUNDLED_RESULTS_DIR = database.DATA_DIR / "reference_results"
# One bundled evaluation per workload with bundled runs (`core.database.BUNDLED_EXPORTS`).
BUNDLED_RESULTS_DIRS: tuple[Path, ...] = (
    BUNDLED_RESULTS_DIR,
    database.DATA_DIR / "alexnet_results",
)


def export_results(db_path: Path, directory: Path, workload: str = DEFAULT_WORKLOAD) -> Path:
    """Write ``workload``'s latest evaluation (four tables) as Parquet into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    with database.connect(db_path, read_only=True) as con:
        evaluation_id = latest_evaluation_id(con, workload)
        if evaluation_id is None:
            raise ModelingError(
                f"{db_path} holds no evaluation to export; run "
                f"`python -m modeling evaluate --db {db_path}` first"
            )
        for table in RESULT_TABLES:
            datafiles.write(
                con,
                directory / f"{table}.parquet",
                ".parquet",
                schema.columns_of(con, table),
                f"FROM {table} WHERE evaluation_id = ? ORDER BY rowid",
                [evaluation_id],
            )
    return directory


def _read(directory: Path, table: str) -> pa.Table:
    """One table of a results export, brought to the current schema."""
    path = directory / f"{table}.parquet"
    try:
        rows = pq.read_table(path)
    except (pa.ArrowException, OSError) as error:
        raise ModelingError(
            f"cannot read {path}: {error}; give a folder written by "
            "`python -m modeling export-results`"
        ) from error
    tag = (rows.schema.metadata or {}).get(datafiles.VERSION_METADATA_KEY.encode())
    version, rows = datafiles.export_version(
        path, rows, table, None if tag is None else tag.decode(errors="replace")
    )
    return schema.upgrade_export(table, rows, version)


def _bundled_evaluation(directory: Path) -> tuple[str, str] | None:
    """The bundle's workload and data fingerprint; None when there is no bundle."""
    if not (directory / "evaluations.parquet").exists():
        return None
    rows = _read(directory, "evaluations").select(["workload", "data_fingerprint"]).to_pylist()
    return (str(rows[0]["workload"]), str(rows[0]["data_fingerprint"])) if rows else None


def _applies(db_path: Path, directory: Path) -> str | None:
    """The bundle's workload if ``db_path`` has no evaluation of it and holds its runs.

    Reads the database read-only: nothing is written.
    """
    bundled = _bundled_evaluation(directory)
    if bundled is None:
        return None
    workload, fingerprint = bundled
    with database.connect(db_path, read_only=True) as con:
        if latest_evaluation_id(con, workload) is not None:
            return None
    runs = store.load_runs(db_path, status="ok", workload=workload)
    if runs.empty or data_fingerprint(measured_frame(runs)) != fingerprint:
        return None
    return workload


def install_bundled_results(db_path: Path, directory: Path = BUNDLED_RESULTS_DIR) -> bool:
    """Copy the bundled evaluation into ``db_path`` if it has none and holds the same runs.

    "None" and "the same runs" are of the bundle's workload. Returns True when it
    copied. Idempotent and cheap when there is nothing to do, so the (writable)
    dashboard calls it on every start.
    """
    workload = _applies(db_path, directory)
    if workload is None:
        return False
    rows = {table: _read(directory, table) for table in RESULT_TABLES}
    with database.transaction(db_path) as con:
        if latest_evaluation_id(con, workload) is not None:  # installed meanwhile
            return False
        for table, table_rows in rows.items():
            schema.insert_table(con, table, table_rows)
    return True


def install_every_bundle(db_path: Path) -> int:
    """`install_bundled_results` for each bundled evaluation; how many were copied."""
    return sum(install_bundled_results(db_path, directory) for directory in BUNDLED_RESULTS_DIRS)


# --- reading without installing -------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _bundled_frame(directory: Path, table: str, stamp: tuple[int, int]) -> pd.DataFrame:
    """A bundle's table as the database would return it (same column types), cached per file."""
    rows = _read(directory, table)
    with duckdb.connect() as con:  # in memory: no file
        return con.from_arrow(rows).df()


def _bundled(db_path: Path, workload: str, table: str) -> pd.DataFrame | None:
    """``workload``'s bundled ``table`` when ``db_path`` needs it (see module docstring)."""
    for directory in BUNDLED_RESULTS_DIRS:
        bundled = _bundled_evaluation(directory)
        if bundled is None or bundled[0] != workload or _applies(db_path, directory) is None:
            continue
        stat = (directory / f"{table}.parquet").stat()
        return _bundled_frame(directory, table, (stat.st_size, stat.st_mtime_ns)).copy()
    return None


def _stored_or_bundled(loader, db_path: Path, workload: str, table: str) -> pd.DataFrame:
    try:
        return loader(db_path, workload=workload)
    except NoModelsError:
        bundled = _bundled(db_path, workload, table)
        if bundled is None:
            raise
        return bundled


def load_scores(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> pd.DataFrame:
    """``workload``'s latest scores: the database's, else the bundle's for its runs."""
    return _stored_or_bundled(tables.load_scores, db_path, workload, "scores")


def load_predictions(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> pd.DataFrame:
    """``workload``'s latest held-out predictions: the database's, else the bundle's."""
    return _stored_or_bundled(tables.load_predictions, db_path, workload, "predictions")


def load_predictors(db_path: Path, workload: str = DEFAULT_WORKLOAD) -> list[Predictor]:
    """``workload``'s latest fitted models: the database's, else the bundle's for its runs.

    Raises `NoModelsError` when neither has any, and `ModelingError` for a model
    row not stored as data (`modeling.stored.tables.predictor_from_row`).
    """
    try:
        return tables.load_predictors(db_path, workload=workload)
    except NoModelsError:
        rows = _bundled(db_path, workload, "models")
        if rows is None:
            raise
    refit = f"python -m modeling evaluate --workload {workload} --db {db_path}"
    source = f"the bundled results of {workload}"
    return [tables.predictor_from_row(row, source, refit) for row in rows.to_dict("records")]


def load_predictor(db_path: Path, name: str = BEST, workload: str = DEFAULT_WORKLOAD) -> Predictor:
    """One of `load_predictors` by name; ``"best"`` picks by `tables.best_model_name`."""
    return select_predictor(
        load_predictors(db_path, workload),
        lambda: load_scores(db_path, workload),
        name,
        db_path,
    )
