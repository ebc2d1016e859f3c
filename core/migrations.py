"""The migrations that bring a database written by an older memplan to `core.schema`'s version.

Each `Migration` goes one version up, inside the caller's transaction (`core.database`
opens it and rolls back on failure), and spells out every table it creates as that
version had it: never the current DDL, which will change again. What each version
added is listed in `core.schema`'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import duckdb

from core import profiles, schema, targets
from core.errors import StoreError
from core.schema import SCHEMA_VERSION


@dataclass(frozen=True)
class Migration:
    """What changes from ``from_version`` to ``from_version + 1``, and the function doing it."""

    from_version: int
    summary: str
    apply: Callable[[duckdb.DuckDBPyConnection], None]

    @property
    def to_version(self) -> int:
        return self.from_version + 1


def _rebuild(con: duckdb.DuckDBPyConnection, table: str, ddl: str, added: dict[str, Any]) -> None:
    """Recreate ``table`` as ``ddl`` says, keeping every row, its values and their order.

    A column only the new table has gets its value from ``added``; DuckDB can
    neither add a column in the middle of a table nor change a primary-key table in
    every way, so the table is rebuilt under its own name.
    """
    old = f"_migrating_{table}"
    con.execute(f"ALTER TABLE {table} RENAME TO {old}")
    con.execute(ddl)
    old_columns, new_columns = schema.columns_of(con, old), schema.columns_of(con, table)
    dropped = [name for name in old_columns if name not in new_columns]
    unfilled = [name for name in new_columns if name not in old_columns and name not in added]
    if dropped or unfilled:  # a mistake in a migration, never in the data
        raise StoreError(
            f"migration of table {table} would drop {dropped} and leave {unfilled} without a value"
        )
    values = [added[name] for name in new_columns if name not in old_columns]
    select = ", ".join(name if name in old_columns else "?" for name in new_columns)
    con.execute(
        f"INSERT INTO {table} ({', '.join(new_columns)}) SELECT {select} FROM {old} ORDER BY rowid",
        values,
    )
    con.execute(f"DROP TABLE {old}")


# Schema 1 made the results tables only when the first results were stored.
_V1_RESULT_TABLES = (
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
_V2_RUNS = (
    "CREATE TABLE runs (run_id VARCHAR NOT NULL PRIMARY KEY, sweep_id VARCHAR,"
    " created_at VARCHAR NOT NULL, status VARCHAR NOT NULL, message VARCHAR NOT NULL,"
    " workload VARCHAR NOT NULL, depth BIGINT, height BIGINT NOT NULL, width BIGINT NOT NULL,"
    " batch_size BIGINT NOT NULL, base_filters BIGINT, levels BIGINT,"
    " in_channels BIGINT NOT NULL, classes BIGINT NOT NULL, precision VARCHAR NOT NULL,"
    " upsampling VARCHAR, steps BIGINT NOT NULL, seed BIGINT NOT NULL, repeat BIGINT NOT NULL,"
    " sample_interval_s DOUBLE NOT NULL, timeout_s DOUBLE NOT NULL,"
    " memory_limit_bytes BIGINT NOT NULL, estimate_bytes BIGINT, peak_sampled_bytes BIGINT,"
    " peak_hwm_bytes BIGINT, baseline_bytes BIGINT, wall_s DOUBLE,"
    " step_times_s VARCHAR NOT NULL, step_hwm_bytes VARCHAR NOT NULL, hostname VARCHAR NOT NULL,"
    " cpu_model VARCHAR NOT NULL, cpu_cores BIGINT NOT NULL, total_ram_bytes BIGINT NOT NULL,"
    " os VARCHAR NOT NULL, python_version VARCHAR NOT NULL, tensorflow_version VARCHAR NOT NULL,"
    " keras_version VARCHAR NOT NULL, numpy_version VARCHAR NOT NULL,"
    " onednn_enabled BOOLEAN NOT NULL)"
)
_V2_EVALUATIONS = (
    "CREATE TABLE evaluations (evaluation_id VARCHAR PRIMARY KEY, workload VARCHAR NOT NULL,"
    " created_at VARCHAR NOT NULL, command VARCHAR, data_fingerprint VARCHAR NOT NULL,"
    " n_runs INTEGER NOT NULL, n_points INTEGER NOT NULL, seeds_json VARCHAR NOT NULL,"
    " hostname VARCHAR, python_version VARCHAR)"
)


def _v1_to_v2(con: duckdb.DuckDBPyConnection) -> None:
    for statement in _V1_RESULT_TABLES:
        con.execute(statement)
    _rebuild(con, "runs", _V2_RUNS, {"workload": schema.LEGACY_WORKLOAD})
    _rebuild(con, "evaluations", _V2_EVALUATIONS, {"workload": schema.LEGACY_WORKLOAD})


_V3_RUNS = (
    "CREATE TABLE runs (run_id VARCHAR NOT NULL PRIMARY KEY, sweep_id VARCHAR,"
    " created_at VARCHAR NOT NULL, status VARCHAR NOT NULL, message VARCHAR NOT NULL,"
    " workload VARCHAR NOT NULL, depth BIGINT, height BIGINT NOT NULL, width BIGINT NOT NULL,"
    " batch_size BIGINT NOT NULL, base_filters BIGINT, levels BIGINT,"
    " in_channels BIGINT NOT NULL, classes BIGINT NOT NULL, precision VARCHAR NOT NULL,"
    " upsampling VARCHAR, steps BIGINT NOT NULL, seed BIGINT NOT NULL, repeat BIGINT NOT NULL,"
    " sample_interval_s DOUBLE NOT NULL, timeout_s DOUBLE NOT NULL,"
    " memory_limit_bytes BIGINT NOT NULL, estimate_bytes BIGINT, peak_sampled_bytes BIGINT,"
    " peak_hwm_bytes BIGINT, baseline_bytes BIGINT, wall_s DOUBLE,"
    " step_times_s VARCHAR NOT NULL, step_hwm_bytes VARCHAR NOT NULL, hostname VARCHAR NOT NULL,"
    " cpu_vendor VARCHAR, cpu_model VARCHAR NOT NULL, cpu_isa VARCHAR,"
    " cpu_cores BIGINT NOT NULL, usable_cores BIGINT, intra_op_threads BIGINT,"
    " total_ram_bytes BIGINT NOT NULL,"
    " os VARCHAR NOT NULL, python_version VARCHAR NOT NULL, tensorflow_version VARCHAR NOT NULL,"
    " keras_version VARCHAR NOT NULL, numpy_version VARCHAR NOT NULL,"
    " onednn_enabled BOOLEAN NOT NULL)"
)
_V3_EVALUATIONS = (
    "CREATE TABLE evaluations (evaluation_id VARCHAR PRIMARY KEY, workload VARCHAR NOT NULL,"
    " machine_profile VARCHAR, created_at VARCHAR NOT NULL, command VARCHAR,"
    " data_fingerprint VARCHAR NOT NULL, n_runs INTEGER NOT NULL, n_points INTEGER NOT NULL,"
    " seeds_json VARCHAR NOT NULL, hostname VARCHAR, python_version VARCHAR)"
)


def fill_evaluation_profiles(con: duckdb.DuckDBPyConnection) -> int:
    """Name the machine profile of every evaluation that has none but fit one profile's runs.

    The profile is read from the runs its held-out predictions name; an evaluation
    whose runs span several profiles, or are not in this database, keeps NULL.
    Returns how many evaluations were named.
    """
    missing = con.execute(
        "SELECT evaluation_id FROM evaluations WHERE machine_profile IS NULL"
    ).fetchall()
    named = 0
    # The profile facts this version's runs table has: a later version's are unknown.
    present = schema.columns_of(con, "runs")
    columns = ", ".join(f"r.{name}" for name in profiles.PROFILE_COLUMNS if name in present)
    for (evaluation_id,) in missing:
        cursor = con.execute(
            f"SELECT DISTINCT {columns} FROM runs r WHERE r.run_id IN"
            " (SELECT run_id FROM predictions WHERE evaluation_id = ?)",
            [evaluation_id],
        )
        names = [d[0] for d in cursor.description]
        keys = {
            profiles.profile_of(dict(zip(names, row, strict=True))).key for row in cursor.fetchall()
        }
        if len(keys) == 1:
            con.execute(
                "UPDATE evaluations SET machine_profile = ? WHERE evaluation_id = ?",
                [keys.pop(), evaluation_id],
            )
            named += 1
    return named


def _v2_to_v3(con: duckdb.DuckDBPyConnection) -> None:
    _rebuild(con, "runs", _V3_RUNS, dict.fromkeys(schema.NEW_MACHINE_COLUMNS))
    _rebuild(con, "evaluations", _V3_EVALUATIONS, {"machine_profile": None})
    fill_evaluation_profiles(con)


_V4_RUNS = (
    "CREATE TABLE runs (run_id VARCHAR NOT NULL PRIMARY KEY, sweep_id VARCHAR,"
    " created_at VARCHAR NOT NULL, status VARCHAR NOT NULL, message VARCHAR NOT NULL,"
    " workload VARCHAR NOT NULL, depth BIGINT, height BIGINT NOT NULL, width BIGINT NOT NULL,"
    " batch_size BIGINT NOT NULL, base_filters BIGINT, levels BIGINT,"
    " in_channels BIGINT NOT NULL, classes BIGINT NOT NULL, precision VARCHAR NOT NULL,"
    " upsampling VARCHAR, steps BIGINT NOT NULL, seed BIGINT NOT NULL, repeat BIGINT NOT NULL,"
    " sample_interval_s DOUBLE NOT NULL, timeout_s DOUBLE NOT NULL,"
    " memory_limit_bytes BIGINT NOT NULL, estimate_bytes BIGINT, peak_sampled_bytes BIGINT,"
    " peak_hwm_bytes BIGINT, baseline_bytes BIGINT, wall_s DOUBLE,"
    " step_times_s VARCHAR NOT NULL, step_hwm_bytes VARCHAR NOT NULL, hostname VARCHAR NOT NULL,"
    " cpu_vendor VARCHAR, cpu_model VARCHAR NOT NULL, cpu_isa VARCHAR,"
    " cpu_cores BIGINT NOT NULL, usable_cores BIGINT, intra_op_threads BIGINT,"
    " total_ram_bytes BIGINT NOT NULL,"
    " os VARCHAR NOT NULL, python_version VARCHAR NOT NULL, tensorflow_version VARCHAR NOT NULL,"
    " keras_version VARCHAR NOT NULL, numpy_version VARCHAR NOT NULL,"
    " onednn_enabled BOOLEAN NOT NULL, slurm_job_id VARCHAR, slurm_cpus_per_task BIGINT)"
)


def _v3_to_v4(con: duckdb.DuckDBPyConnection) -> None:
    _rebuild(con, "runs", _V4_RUNS, dict.fromkeys(schema.SLURM_COLUMNS))


# Schema 4's runs table with the cache column appended.
_V5_RUNS = _V4_RUNS.removesuffix(")") + ", l3_cache_bytes BIGINT)"


def _v4_to_v5(con: duckdb.DuckDBPyConnection) -> None:
    _rebuild(con, "runs", _V5_RUNS, dict.fromkeys(schema.CACHE_COLUMNS))


def fill_evaluation_steps(con: duckdb.DuckDBPyConnection) -> int:
    """Record the step count of every evaluation that has none but fit runs of one.

    The step count is read from the runs its held-out predictions name (as
    `fill_evaluation_profiles` reads the profile); an evaluation whose runs have
    several step counts, or are not in this database, keeps NULL: nothing guesses it.
    Returns how many evaluations got their step count.
    """
    missing = con.execute("SELECT evaluation_id FROM evaluations WHERE steps IS NULL").fetchall()
    named = 0
    for (evaluation_id,) in missing:
        found = con.execute(
            "SELECT DISTINCT steps FROM runs WHERE run_id IN"
            " (SELECT run_id FROM predictions WHERE evaluation_id = ?)",
            [evaluation_id],
        ).fetchall()
        if len(found) == 1:
            con.execute(
                "UPDATE evaluations SET steps = ? WHERE evaluation_id = ?",
                [int(found[0][0]), evaluation_id],
            )
            named += 1
    return named


# Schema 3's evaluations table (unchanged by 4 and 5) with the steps columns appended.
_V6_EVALUATIONS = _V3_EVALUATIONS.removesuffix(")") + ", steps BIGINT, other_steps_json VARCHAR)"


def _v5_to_v6(con: duckdb.DuckDBPyConnection) -> None:
    _rebuild(con, "evaluations", _V6_EVALUATIONS, dict.fromkeys(schema.STEPS_COLUMNS))
    fill_evaluation_steps(con)


def _v6_to_v7(con: duckdb.DuckDBPyConnection) -> None:
    # Appended at the end of the table, where a new memplan's DDL has them: no rebuild.
    for name in schema.GENERATION_COLUMNS:
        con.execute(f"ALTER TABLE runs ADD COLUMN {name} BIGINT")


def _v7_to_v8(con: duckdb.DuckDBPyConnection) -> None:
    # Appended at the end of the table, where a new memplan's DDL has them: no rebuild. A
    # NOT NULL column is added with a default that fills the older rows, which is then
    # dropped (a new table has none); DuckDB refuses SET NOT NULL after an UPDATE in one
    # transaction, so the version is copied in last, into the column already NOT NULL.
    for name, filled in (("framework", schema.LEGACY_FRAMEWORK), ("framework_version", "")):
        con.execute(f"ALTER TABLE runs ADD COLUMN {name} VARCHAR DEFAULT '{filled}'")
        con.execute(f"ALTER TABLE runs ALTER COLUMN {name} SET NOT NULL")
        con.execute(f"ALTER TABLE runs ALTER COLUMN {name} DROP DEFAULT")
    con.execute("UPDATE runs SET framework_version = tensorflow_version")
    con.execute("ALTER TABLE runs ADD COLUMN torch_intra_op_threads BIGINT")


_V9_TYPES = {
    "gpu_total_bytes": "BIGINT",
    **dict.fromkeys(targets.DEVICE_FIGURE_COLUMNS, "BIGINT"),
}


def _v8_to_v9(con: duckdb.DuckDBPyConnection) -> None:
    # Appended at the end of the table, as `_v7_to_v8`'s framework: the target NOT NULL with
    # a default that fills the older rows, then dropped (a new table has none).
    column = targets.TARGET_COLUMN
    con.execute(f"ALTER TABLE runs ADD COLUMN {column} VARCHAR DEFAULT '{targets.HOST_RAM}'")
    con.execute(f"ALTER TABLE runs ALTER COLUMN {column} SET NOT NULL")
    con.execute(f"ALTER TABLE runs ALTER COLUMN {column} DROP DEFAULT")
    for name in schema.TARGET_COLUMNS[1:]:
        con.execute(f"ALTER TABLE runs ADD COLUMN {name} {_V9_TYPES.get(name, 'VARCHAR')}")
    # What a GPU run measured outside memplan did not record (`core.targets`).
    for name in targets.HOST_FACT_COLUMNS:
        con.execute(f"ALTER TABLE runs ALTER COLUMN {name} DROP NOT NULL")


# In order: MIGRATIONS[i] goes from version i + 1 to i + 2.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "runs and evaluations name their workload ('unet3d' for every older row); the "
        "U-Net-only runs columns may be NULL; the results tables are part of the schema",
        _v1_to_v2,
    ),
    Migration(
        2,
        "runs record CPU vendor, instruction-set level, usable cores and intra-op threads "
        "(unknown for older runs); evaluations name the machine profile they fit",
        _v2_to_v3,
    ),
    Migration(
        3,
        "runs record the Slurm job that measured them and its CPUs per task "
        "(unknown for older runs and for runs measured locally)",
        _v3_to_v4,
    ),
    Migration(
        4,
        "runs record the L3 cache size TensorFlow's CPU kernels read (unknown for older runs)",
        _v4_to_v5,
    ),
    Migration(
        5,
        "evaluations record the step count of the runs they fit (read from the runs their "
        "predictions name; unknown where those differ) and the runs at other step counts "
        "they left out (unknown for older evaluations)",
        _v5_to_v6,
    ),
    Migration(
        6,
        "runs record the CPU family, model and stepping (/proc/cpuinfo), which tell two "
        "generations of one CPU name apart (unknown for older runs)",
        _v6_to_v7,
    ),
    Migration(
        7,
        "runs record the framework that trained them and its version ('tensorflow' and its "
        "tensorflow_version for every older run) and torch's intra-op threads (NULL: "
        "TensorFlow runs)",
        _v7_to_v8,
    ),
    Migration(
        8,
        "runs say which memory they measured ('host_ram' for every older run) and, for a GPU "
        "run, the device's facts and its allocator and NVML peaks (NULL for older runs); the "
        "host facts may be NULL for a GPU run measured outside memplan",
        _v8_to_v9,
    ),
)


def migrations_from(version: int) -> tuple[Migration, ...]:
    """The migrations that take a version-``version`` database to SCHEMA_VERSION, in order."""
    chosen = tuple(m for m in MIGRATIONS if version <= m.from_version < SCHEMA_VERSION)
    steps = [m.from_version for m in chosen]
    if steps != list(range(version, SCHEMA_VERSION)):
        raise StoreError(
            f"this memplan cannot migrate schema version {version} to {SCHEMA_VERSION}: "
            f"it has migrations from versions {[m.from_version for m in MIGRATIONS]}"
        )
    return chosen


def migrate(con: duckdb.DuckDBPyConnection, version: int) -> tuple[Migration, ...]:
    """Bring a version-``version`` database to SCHEMA_VERSION; returns the steps taken.

    Runs inside the caller's transaction (see `core.store`): if any step fails,
    the caller's rollback leaves the database exactly as it was.
    """
    steps = migrations_from(version)
    for step in steps:
        step.apply(con)
        con.execute(
            "UPDATE meta SET value = ? WHERE key = ?", [str(step.to_version), schema.VERSION_KEY]
        )
    return steps
