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
export is refused, naming both versions.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from core import database, datafiles, schema, store
from modeling.errors import ModelingError
from modeling.evaluation.protocol import data_fingerprint
from modeling.features import measured_frame
from modeling.stored.tables import DEFAULT_WORKLOAD, RESULT_TABLES, latest_evaluation_id

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


def install_bundled_results(db_path: Path, directory: Path = BUNDLED_RESULTS_DIR) -> bool:
    """Copy the bundled evaluation into ``db_path`` if it has none and holds the same runs.

    "None" and "the same runs" are of the bundle's workload. Returns True when it
    copied. Idempotent and cheap when there is nothing to do, so the dashboard
    calls it on every start.
    """
    bundled = _bundled_evaluation(directory)
    if bundled is None:
        return False
    workload, fingerprint = bundled
    with database.connect(db_path, read_only=True) as con:
        if latest_evaluation_id(con, workload) is not None:
            return False
    runs = store.load_runs(db_path, status="ok", workload=workload)
    if runs.empty or data_fingerprint(measured_frame(runs)) != fingerprint:
        return False
    tables = {table: _read(directory, table) for table in RESULT_TABLES}
    with database.transaction(db_path) as con:
        if latest_evaluation_id(con, workload) is not None:  # installed meanwhile
            return False
        for table, rows in tables.items():
            schema.insert_table(con, table, rows)
    return True


def install_every_bundle(db_path: Path) -> int:
    """`install_bundled_results` for each bundled evaluation; how many were copied."""
    return sum(install_bundled_results(db_path, directory) for directory in BUNDLED_RESULTS_DIRS)
