"""Installing and exporting bundled evaluations: the database side of `modeling.stored.bundle`.

`modeling.stored.bundle` says which bundle applies to a snapshot of a database and reads
its models; writing a bundle into a database (`install_bundled_results`, which the
dashboard's first start does) and writing a database's evaluation out as one
(`export_results`, ``memplan export-results``) open the database, so they live here.

The one rule for a new database, on every path (the dashboard, ``memplan size``,
``memplan report``): a database file that does not exist yet is created filled with
the bundled runs (`seed_if_new`), as the repository's own is; one that exists but
holds no runs is filled by `load_bundled`, which the dashboard's button and
``memplan import --bundled`` call (`EMPTY_HINT` names that command in the errors).
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from core import database, datafiles, migrations, schema, snapshot
from core.dbnames import DB_FLAG
from core.workloads import DEFAULT_WORKLOAD
from modeling.errors import ModelingError
from modeling.stored import bundle
from modeling.stored.bundle import BUNDLED_RESULTS_DIR, BUNDLED_RESULTS_DIRS
from modeling.stored.tables import RESULT_TABLES


def _latest_id(con: duckdb.DuckDBPyConnection, workload: str, machine: str | None) -> str | None:
    """The newest stored evaluation of ``workload`` (and profile ``machine``) of ``con``."""
    where = "WHERE workload = ?" + (" AND machine_profile = ?" if machine is not None else "")
    params = [workload] + ([machine] if machine is not None else [])
    found = con.execute(
        f"SELECT evaluation_id FROM evaluations {where} ORDER BY created_at DESC, rowid DESC"
        " LIMIT 1",
        params,
    ).fetchone()
    return None if found is None else str(found[0])


def export_results(
    db_path: Path, directory: Path, workload: str = DEFAULT_WORKLOAD, machine: str | None = None
) -> Path:
    """Write the latest evaluation of ``workload`` (and ``machine``) as Parquet into ``directory``.

    Four files, one per results table.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with database.connect(db_path, read_only=True) as con:
        evaluation_id = _latest_id(con, workload, machine)
        if evaluation_id is None:
            raise ModelingError(
                f"{db_path} holds no evaluation to export; run "
                f"`memplan evaluate {DB_FLAG} {db_path}` first"
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


def install_bundled_results(db_path: Path, directory: Path = BUNDLED_RESULTS_DIR) -> bool:
    """Copy the bundled evaluation into ``db_path`` if it has none and holds the same runs.

    "None" and "the same runs" are of the bundle's workload and machine profile.
    Returns True when it copied. Idempotent and cheap when there is nothing to do,
    so the (writable) dashboard calls it on every start.
    """
    found = bundle.bundled_evaluation(Path(directory))
    if found is None:
        return False
    return _install(db_path, directory, snapshot.read(db_path, found.workload))


def _install(db_path: Path, directory: Path, read: snapshot.Snapshot) -> bool:
    """`install_bundled_results` with the database's snapshot of the bundle's workload."""
    bundled = bundle.applies(read, directory)
    if bundled is None:
        return False
    rows = {table: bundle.read_export(directory, table) for table in RESULT_TABLES}
    with database.transaction(db_path) as con:
        if _latest_id(con, bundled.workload, bundled.machine) is not None:
            return False  # installed meanwhile
        for table, table_rows in rows.items():
            schema.insert_table(con, table, table_rows)
        # A bundle from before schema 3 does not name its profile; its runs do.
        migrations.fill_evaluation_profiles(con)
        # One from before schema 6 does not record its step count: the runs it matched do.
        for evaluation_id in rows["evaluations"].column("evaluation_id").to_pylist():
            con.execute(
                "UPDATE evaluations SET steps = ? WHERE evaluation_id = ? AND steps IS NULL",
                [bundled.steps, evaluation_id],
            )
    return True


# What an answer on a database without runs says to run (`empty_database_hint`).
EMPTY_HINT = "memplan import --bundled"


def seed_if_new(db_path: Path) -> bool:
    """Create ``db_path`` filled with the bundled runs if it does not exist (never in
    read-only mode, which creates nothing); whether this call did."""
    if database.read_only_mode():
        return False
    return database.created_seeded(Path(db_path))


def load_bundled(db_path: Path) -> int:
    """Fill the existing ``db_path``, which holds no runs, with the bundled runs and their
    models; how many runs (`core.database.seed_bundled` refuses one that holds any)."""
    added = database.seed_bundled(db_path)
    install_every_bundle(db_path)
    return added


def empty_database_hint(source: str, workload: str) -> str:
    """What a question on a database without runs of ``workload`` is told to run."""
    return (
        f"{source} holds no {workload} runs: `{EMPTY_HINT} {DB_FLAG} {source}` loads the bundled "
        f"measurements (data/REFERENCE.md), or measure this machine with `memplan calibrate "
        f"--workload {workload}`"
    )


def install_every_bundle(db_path: Path) -> int:
    """`install_bundled_results` for each bundled evaluation; how many were copied."""
    snapshots: dict[str, snapshot.Snapshot] = {}
    installed = 0
    for directory in BUNDLED_RESULTS_DIRS:
        found = bundle.bundled_evaluation(directory)
        if found is None:
            continue
        if found.workload not in snapshots:  # one read per workload; an install changes it
            snapshots[found.workload] = snapshot.read(db_path, found.workload)
        if _install(db_path, directory, snapshots[found.workload]):
            installed += 1
            snapshots.pop(found.workload)
    return installed
