"""The database schema: every table, its version, and what each version added.

A memplan database is one DuckDB file holding eight tables: ``meta`` (key/value,
``schema_version`` among them), ``sweeps``, ``runs`` (one `RunRecord` per row,
its fields in order), ``samples`` (their memory timelines), and what
``memplan evaluate`` stores (`modeling.stored.tables`):
``evaluations``, ``scores``, ``predictions`` and ``models``. `create` makes all
of them at SCHEMA_VERSION; `core.migrations.migrate` brings a file written by an
older memplan to it. This module is the bottom of the storage code: it runs SQL on
a connection it is given and opens nothing (`core.store` opens, locks and decides
when to migrate; `core.datafiles` reads and writes exports).

Versions
--------
1. The four tables of runs; the results tables were made on first use. Every run
   was a 3D U-Net.
2. Several workloads: ``runs.workload`` (right after ``message``) names the
   network (`core.workloads`) and the U-Net-only columns ``depth``,
   ``base_filters``, ``levels`` and ``upsampling`` may be NULL; each evaluation
   names the workload whose runs it fit (``evaluations.workload``). Rows from
   version 1 get ``'unet3d'``. The results tables are part of the schema.
3. Machine profiles (`core.profiles`): ``runs`` gains ``cpu_vendor``,
   ``cpu_isa``, ``usable_cores`` and ``intra_op_threads`` (NULL for older runs:
   they did not record them, and nothing guesses them); each evaluation names
   the profile whose runs it fit (``evaluations.machine_profile``), derived for
   an older evaluation from the runs its predictions name when they all share one
   profile, else NULL (fitted on more than one machine).
4. Slurm: ``runs`` gains ``slurm_job_id`` (``"1234"``, or ``"1234_5"`` for an
   array task) and ``slurm_cpus_per_task`` (the job's ``--cpus-per-task``) at
   the end of the table, NULL for runs measured locally and for every older run.
5. The L3 cache size TensorFlow's CPU kernels read (``runs.l3_cache_bytes``, at
   the end of the table; `core.machine.l3_cache_bytes`), which sizes the
   convolution-gradient buffers of a machine without oneDNN. NULL for every older
   run: memplan did not read it, and nothing guesses it.
6. An evaluation fits the runs of one step count (`modeling.evaluation.steps`):
   ``evaluations`` gains ``steps`` (the step count of every run it fit) and
   ``other_steps_json`` (``{"1": 4}``: how many usable runs at other step counts
   it left out), at the end of the table. An older evaluation gets the step count
   of the runs its held-out predictions name when they share one
   (`fill_evaluation_steps`), else NULL; ``other_steps_json`` is NULL (not
   recorded).
7. Which generation of its model name a run's CPU is: ``runs`` gains ``cpu_family``,
   ``cpu_model_number`` and ``cpu_stepping`` (/proc/cpuinfo; `core.machine.cpu_generation`)
   at the end of the table, NULL for every older run: memplan did not read them, and
   nothing guesses them. Family and model are part of the machine profile.
8. The framework that trained a run (`core.frameworks`): ``runs`` gains ``framework``
   (``'tensorflow'`` or ``'torch'``), ``framework_version`` and ``torch_intra_op_threads``
   (torch's intra-op threads, NULL for a TensorFlow run) at the end of the table. Every
   older run trained with TensorFlow: it gets ``'tensorflow'`` and its own
   ``tensorflow_version``. The framework is part of the machine profile; a TensorFlow
   run's profile key is what it was.
9. Which memory a run measured (`core.targets`): ``runs`` gains ``memory_target``
   (``'host_ram'`` for every older run) and, for a GPU run, the device's facts
   (``gpu_name``, ``gpu_total_bytes``, ``gpu_compute_capability``, ``gpu_driver``,
   ``cuda_version``, ``cudnn_version``, ``alloc_conf``) and figures
   (``allocated_peak_bytes``, ``reserved_peak_bytes``, ``nvml_used_peak_bytes``,
   ``context_bytes``) at the end of the table, NULL for every older run. The host facts
   and protocol settings only memplan's child records (`core.targets.HOST_FACT_COLUMNS`)
   may be NULL: a GPU run measured by an outside script did not record them.

Changing the schema
-------------------
Raise SCHEMA_VERSION; change the DDL below (and `RunRecord` for ``runs``);
append to `core.migrations.MIGRATIONS` a function from the previous version to the
new one; add the columns the new version adds to ADDED_COLUMNS, with the value an
older row gets (None: NULL; `SameAs`: another column of the row), so that older *exports*
still import (`upgrade_export`). A
migration runs inside the caller's transaction, must not commit, and spells
out every table it creates: never the current DDL, which will change again.
Keep a database and an export written by the release before the change in
``tests/fixtures/schemaN/`` (see ``tests/fixtures/schema1/README.md``);
``tests/integration/test_schema_migrations.py`` shows what to check.

A new network knob's column is the smallest such change: the knob's `Knob`
declaration already appends it to `RunRecord` (nullable, `core.records`), so the
current DDL has it; the migration is ``ALTER TABLE runs ADD COLUMN`` with its
type, and ADDED_COLUMNS names it with None (docs/workloads.md).
"""

from __future__ import annotations

import contextlib
import functools
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from core import targets
from core.dbnames import DB_ENV_VAR, DB_FLAG
from core.errors import StoreError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, RunRecord

SCHEMA_VERSION = 9
# Where a database keeps its version: the ``meta`` row with this key.
VERSION_KEY = "schema_version"
# What every run and evaluation before schema 2 measured.
LEGACY_WORKLOAD = "unet3d"
# The machine facts runs record since schema 3.
NEW_MACHINE_COLUMNS: tuple[str, ...] = ("cpu_vendor", "cpu_isa", "usable_cores", "intra_op_threads")
# The Slurm job facts runs record since schema 4 (NULL for a run measured locally).
SLURM_COLUMNS: tuple[str, ...] = ("slurm_job_id", "slurm_cpus_per_task")
# The cache fact runs record since schema 5.
CACHE_COLUMNS: tuple[str, ...] = ("l3_cache_bytes",)
# What an evaluation records since schema 6: the step count of the runs it fit and
# the usable runs at other step counts it left out (NULL: not recorded).
STEPS_COLUMNS: tuple[str, ...] = ("steps", "other_steps_json")
# The CPU generation facts runs record since schema 7 (`core.machine.GENERATION_LINES`).
GENERATION_COLUMNS: tuple[str, ...] = ("cpu_family", "cpu_model_number", "cpu_stepping")
# The framework facts runs record since schema 8 (`core.frameworks`).
FRAMEWORK_COLUMNS: tuple[str, ...] = ("framework", "framework_version", "torch_intra_op_threads")
# What every run before schema 8 trained with.
LEGACY_FRAMEWORK = "tensorflow"
# What schema 9 added to runs: the target, the device's facts and figures (`core.targets`).
TARGET_COLUMNS: tuple[str, ...] = (
    targets.TARGET_COLUMN,
    *targets.DEVICE_FACT_COLUMNS,
    *targets.DEVICE_FIGURE_COLUMNS,
)


@dataclass(frozen=True)
class SameAs:
    """The fill value of an added column that an older row has in another column."""

    column: str


_SQL_TYPES: dict[type, str] = {str: "VARCHAR", int: "BIGINT", float: "DOUBLE", bool: "BOOLEAN"}
_ARROW_TYPES: dict[type, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}


def _run_column_types() -> tuple[dict[str, type], frozenset[str]]:
    """Python type of each runs column and which may be NULL, from RunRecord's annotations."""
    hints = typing.get_type_hints(RunRecord)
    column_types: dict[str, type] = {}
    nullable: set[str] = set()
    for name in RUN_COLUMNS:
        hint = hints[name]
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
            members = [arg for arg in typing.get_args(hint) if arg is not type(None)]
            nullable.add(name)
            hint = members[0]
        column_types[name] = hint
    return column_types, frozenset(nullable)


RUN_TYPES, NULLABLE_RUN_COLUMNS = _run_column_types()
SAMPLE_TYPES: dict[str, type] = {"run_id": str, "t_s": float, "rss_bytes": int}
RUNS_ARROW_SCHEMA = pa.schema([(name, _ARROW_TYPES[RUN_TYPES[name]]) for name in RUN_COLUMNS])
SAMPLES_ARROW_SCHEMA = pa.schema(
    [(name, _ARROW_TYPES[SAMPLE_TYPES[name]]) for name in SAMPLE_COLUMNS]
)

RUN_TABLES: tuple[str, ...] = ("meta", "sweeps", "runs", "samples")
RESULT_TABLES: tuple[str, ...] = ("evaluations", "scores", "predictions", "models")
TABLES: tuple[str, ...] = (*RUN_TABLES, *RESULT_TABLES)


def _runs_ddl() -> str:
    columns = []
    for name in RUN_COLUMNS:
        null = "" if name in NULLABLE_RUN_COLUMNS else " NOT NULL"
        key = " PRIMARY KEY" if name == "run_id" else ""
        columns.append(f"{name} {_SQL_TYPES[RUN_TYPES[name]]}{null}{key}")
    return "CREATE TABLE runs (" + ", ".join(columns) + ")"


# The current version's tables, by name, in TABLES order.
DDL: Mapping[str, str] = types.MappingProxyType(
    {
        "meta": "CREATE TABLE meta (key VARCHAR PRIMARY KEY, value VARCHAR)",
        "sweeps": "CREATE TABLE sweeps (sweep_id VARCHAR PRIMARY KEY, created_at VARCHAR,"
        " finished_at VARCHAR, status VARCHAR, command VARCHAR, grid_json VARCHAR,"
        " hostname VARCHAR, points_total INTEGER, points_done INTEGER)",
        "runs": _runs_ddl(),
        "samples": "CREATE TABLE samples (run_id VARCHAR NOT NULL, t_s DOUBLE NOT NULL,"
        " rss_bytes BIGINT NOT NULL)",
        "evaluations": "CREATE TABLE evaluations (evaluation_id VARCHAR PRIMARY KEY,"
        " workload VARCHAR NOT NULL, machine_profile VARCHAR, created_at VARCHAR NOT NULL,"
        " command VARCHAR, data_fingerprint VARCHAR NOT NULL, n_runs INTEGER NOT NULL,"
        " n_points INTEGER NOT NULL,"
        " seeds_json VARCHAR NOT NULL, hostname VARCHAR, python_version VARCHAR,"
        " steps BIGINT, other_steps_json VARCHAR)",
        "scores": "CREATE TABLE scores (evaluation_id VARCHAR NOT NULL, model VARCHAR NOT NULL,"
        " split VARCHAR NOT NULL, seed INTEGER NOT NULL, mape_pct DOUBLE, r2 DOUBLE,"
        " max_ape_pct DOUBLE, n_train INTEGER, n_test INTEGER, fit_seconds DOUBLE,"
        " params_json VARCHAR, validation_mape_pct DOUBLE, formula VARCHAR)",
        "predictions": "CREATE TABLE predictions (evaluation_id VARCHAR NOT NULL,"
        " model VARCHAR NOT NULL, split VARCHAR NOT NULL, seed INTEGER NOT NULL,"
        " run_id VARCHAR NOT NULL, measured_bytes DOUBLE, predicted_bytes DOUBLE)",
        "models": "CREATE TABLE models (model_id VARCHAR PRIMARY KEY,"
        " evaluation_id VARCHAR NOT NULL, name VARCHAR NOT NULL, title VARCHAR, kind VARCHAR,"
        " formula VARCHAR, formula_length INTEGER, params_json VARCHAR, columns_json VARCHAR,"
        " estimator BLOB NOT NULL, fitted_at VARCHAR NOT NULL, fit_seconds DOUBLE,"
        " data_fingerprint VARCHAR, n_runs INTEGER, training_range_json VARCHAR,"
        " bound_json VARCHAR NOT NULL, extrapolation_bound_json VARCHAR, versions_json VARCHAR)",
    }
)

# The columns each version added to a table, with the value a row from before gets
# (None: NULL). `upgrade_export` fills them into older exports.
ADDED_COLUMNS: Mapping[int, Mapping[str, Mapping[str, Any]]] = types.MappingProxyType(
    {
        2: {"runs": {"workload": LEGACY_WORKLOAD}, "evaluations": {"workload": LEGACY_WORKLOAD}},
        3: {
            "runs": {name: None for name in NEW_MACHINE_COLUMNS},
            "evaluations": {"machine_profile": None},
        },
        4: {"runs": {name: None for name in SLURM_COLUMNS}},
        5: {"runs": {name: None for name in CACHE_COLUMNS}},
        6: {"evaluations": {name: None for name in STEPS_COLUMNS}},
        7: {"runs": {name: None for name in GENERATION_COLUMNS}},
        8: {
            "runs": {
                "framework": LEGACY_FRAMEWORK,
                "framework_version": SameAs("tensorflow_version"),
                "torch_intra_op_threads": None,
            }
        },
        9: {
            "runs": {
                name: targets.HOST_RAM if name == targets.TARGET_COLUMN else None
                for name in TARGET_COLUMNS
            }
        },
    }
)


def create(con: duckdb.DuckDBPyConnection) -> None:
    """Create every table of the current version in an empty database and record the version."""
    for table in TABLES:
        con.execute(DDL[table])
    con.execute("INSERT INTO meta (key, value) VALUES (?, ?)", [VERSION_KEY, str(SCHEMA_VERSION)])


def stored_version(con: duckdb.DuckDBPyConnection) -> int | None:
    """The schema version the database records; None when it is not a memplan database."""
    try:
        found = con.execute("SELECT value FROM meta WHERE key = ?", [VERSION_KEY]).fetchone()
    except duckdb.CatalogException:
        return None
    if found is None:
        return None
    try:
        return int(found[0])
    except (TypeError, ValueError):
        raise StoreError(
            f"the database records schema version {found[0]!r}, which is not a whole number; "
            "it was not written by memplan"
        ) from None


def columns_of(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    """The columns of ``table`` in order (empty if there is no such table)."""
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ?"
        " ORDER BY ordinal_position",
        [table],
    ).fetchall()
    return [row[0] for row in rows]


@functools.cache
def declared_columns() -> dict[str, frozenset[str]]:
    """Each table's columns at SCHEMA_VERSION, read from its DDL run in memory once."""
    with contextlib.closing(duckdb.connect(":memory:")) as con:
        create(con)
        return {table: frozenset(columns_of(con, table)) for table in TABLES}


def check_columns(con: duckdb.DuckDBPyConnection, path: Path | str) -> None:
    """A `StoreError` naming what is missing when a table of a current-version database lacks
    a column (or the table) the version declares: a hand-edited or half-copied file, which
    every query would otherwise meet as DuckDB's BinderException."""
    rows = con.execute(
        # duckdb_columns(), not information_schema: half the time (~8 ms on the 2-core VM).
        "SELECT table_name, column_name FROM duckdb_columns()"
        " WHERE schema_name = 'main' AND database_name = current_database()"
    ).fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    missing = [
        f"{table}.{column}"
        for table, columns in declared_columns().items()
        for column in sorted(columns - found.get(table, set()))
    ]
    if missing:
        shown = ", ".join(missing[:5]) + (
            f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        )
        raise StoreError(
            f"database {path} says schema version {SCHEMA_VERSION} but lacks {shown}: it was "
            "changed outside memplan and nothing reads or writes it; restore it from a backup, "
            f"or point {DB_FLAG} or {DB_ENV_VAR} at another database"
        )


def insert_table(con: duckdb.DuckDBPyConnection, table: str, rows: pa.Table) -> None:
    """Append an Arrow table to ``table``, matching columns by name (in any order)."""
    view = f"_incoming_{table}"
    con.register(view, rows)
    try:
        columns = ", ".join(rows.column_names)
        con.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {view}")
    finally:
        con.unregister(view)


# --- exports ----------------------------------------------------------------------------


def added_since(table: str, version: int) -> dict[str, Any]:
    """The columns of ``table`` that versions after ``version`` added, with their fill values."""
    added: dict[str, Any] = {}
    for later in range(version + 1, SCHEMA_VERSION + 1):
        added.update(ADDED_COLUMNS.get(later, {}).get(table, {}))
    return added


def columns_as_of(table: str, columns: tuple[str, ...], version: int) -> tuple[str, ...]:
    """``columns`` (the current ones of ``table``) as a version-``version`` export has them."""
    newer = added_since(table, version)
    return tuple(name for name in columns if name not in newer)


def infer_version(table: str, columns: list[str]) -> int:
    """The version of an export that does not say: the newest whose added columns it has all of.

    An export of ``runs`` without ``workload`` is schema 1; one with it but without
    ``cpu_isa``, schema 2. Tables no version changed are always the current version.
    """
    version = 1
    while version < SCHEMA_VERSION and all(
        name in columns for name in ADDED_COLUMNS.get(version + 1, {}).get(table, {})
    ):
        version += 1
    return version


def upgrade_export(table: str, rows: pa.Table, version: int) -> pa.Table:
    """Rows of a version-``version`` export of ``table`` with the columns newer versions added."""
    for name, value in added_since(table, version).items():
        if name in rows.column_names:
            continue
        if isinstance(value, SameAs):
            rows = rows.append_column(name, rows.column(value.column))
        else:
            rows = rows.append_column(name, pa.array([value] * rows.num_rows))
    return rows
