"""The bundled evaluation: fitted models and scores shipped beside the bundled reference runs.

A fresh checkout's default database is built from `data/reference_runs.parquet`
(`core.store.ensure_database`); the models the dashboard and
``python -m modeling size`` predict with come from a full
``python -m modeling evaluate`` of those same runs, which takes ~17 minutes on
a 2-core machine. Rather than make every new user wait for it, the results of
one such evaluation are exported to `data/reference_results/` (one Parquet file
per results table) and copied into the default database the first time it is
read, but only while that database still holds exactly the runs they were fit
on (same data fingerprint): a database with other runs needs its own evaluation.

    python -m modeling export-results data/reference_results --db results.duckdb
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from core import store
from modeling.errors import ModelingError
from modeling.evaluation.protocol import data_fingerprint
from modeling.features import measured_frame
from modeling.stored.tables import RESULT_TABLES, ensure_tables, latest_evaluation_id

BUNDLED_RESULTS_DIR = store.DATA_DIR / "reference_results"


def export_results(db_path: Path, directory: Path) -> Path:
    """Write the latest evaluation of ``db_path`` (four tables) as Parquet into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    with store.connect(db_path, read_only=True) as con:
        evaluation_id = latest_evaluation_id(con)
        if evaluation_id is None:
            raise ModelingError(f"{db_path} holds no evaluation to export; run "
                                f"`python -m modeling evaluate --db {db_path}` first")  # fmt: skip
        for table in RESULT_TABLES:
            target = directory / f"{table}.parquet"
            con.execute(
                f"COPY (SELECT * FROM {table} WHERE evaluation_id = ? ORDER BY rowid) "
                f"TO '{target}' (FORMAT parquet)",
                [evaluation_id],
            )
    return directory


def _bundle_fingerprint(directory: Path) -> str | None:
    evaluations = directory / "evaluations.parquet"
    if not evaluations.exists():
        return None
    fingerprints = pq.read_table(evaluations, columns=["data_fingerprint"]).column(0).to_pylist()
    return str(fingerprints[0]) if fingerprints else None


def install_bundled_results(db_path: Path, directory: Path = BUNDLED_RESULTS_DIR) -> bool:
    """Copy the bundled evaluation into ``db_path`` if it has none and holds the same runs.

    Returns True when it copied. Idempotent and cheap when there is nothing to do,
    so the dashboard calls it on every start.
    """
    bundled = _bundle_fingerprint(directory)
    if bundled is None:
        return False
    with store.connect(db_path, read_only=True) as con:
        if latest_evaluation_id(con) is not None:
            return False
    runs = store.load_runs(db_path, status="ok")
    if runs.empty or data_fingerprint(measured_frame(runs)) != bundled:
        return False
    with store.transaction(db_path) as con:
        ensure_tables(con)
        if latest_evaluation_id(con) is not None:  # another process installed it meanwhile
            return False
        for table in RESULT_TABLES:
            names = ", ".join(
                row[0]
                for row in con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                    "ORDER BY ordinal_position",
                    [table],
                ).fetchall()
            )
            con.execute(
                f"INSERT INTO {table} ({names}) SELECT {names} FROM '{directory / table}.parquet'"
            )
    return True
