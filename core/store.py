"""The DuckDB system of record: sweeps, runs and their memory timelines.

Memory is stored in bytes and time in seconds; the UI converts. DuckDB lets one
process open a file read-write *or* many open it read-only, never both, so every
operation here opens its own short-lived connection (`connect`) and retries while
another process holds the lock. Nothing keeps a connection between calls: a cached
one in the dashboard would lock the sweep that writes out for as long as it lived.

Schema versions (`core.schema` has the tables and the migrations):

* A database written by an older memplan is migrated in place the first time it
  is opened read-write (`ensure_database`, which every CLI command and the
  dashboard call first, or any write), in one transaction: every row is kept
  with its values, and a failure leaves the file exactly as it was. A migrated
  file no longer opens in the older memplan.
* Opened read-only (``connect(path, read_only=True)``, which every read here
  uses), an older database is never written to: the open fails with a
  StoreError saying to open it once read-write, e.g.
  ``python -m profiling list --db PATH``, which migrates it.
* A database from a newer memplan is refused, read-only or not, naming both
  versions; nothing is written to it.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa

from core import datafiles, schema
from core.errors import StoreError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, RunRecord

# The schema's, here too because callers look for them with the store.
SCHEMA_VERSION = schema.SCHEMA_VERSION
RUN_TYPES = schema.RUN_TYPES
NULLABLE_RUN_COLUMNS = schema.NULLABLE_RUN_COLUMNS
SAMPLE_TYPES = schema.SAMPLE_TYPES
RUNS_ARROW_SCHEMA = schema.RUNS_ARROW_SCHEMA
SAMPLES_ARROW_SCHEMA = schema.SAMPLES_ARROW_SCHEMA
insert_table = schema.insert_table

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
DEFAULT_DB_NAME = "memplan.duckdb"
BUNDLED_RUNS = DATA_DIR / "reference_runs.parquet"
BUNDLED_SAMPLES = DATA_DIR / "reference_samples.parquet"
# Every bundled export (runs, timelines) a fresh default database starts with:
# the U-Net reference sweep and the AlexNet sweep (data/REFERENCE.md).
BUNDLED_EXPORTS: tuple[tuple[Path, Path], ...] = (
    (BUNDLED_RUNS, BUNDLED_SAMPLES),
    (DATA_DIR / "alexnet_runs.parquet", DATA_DIR / "alexnet_samples.parquet"),
)

DB_ENV_VAR = "MEMPLAN_DB"
LOCK_TIMEOUT_ENV_VAR = "MEMPLAN_LOCK_TIMEOUT_S"
# A sweep holds the write lock only for one insert (milliseconds), so a minute of
# waiting means something else is wrong, e.g. a stray process holding the file open.
LOCK_TIMEOUT_S = 60.0
LOCK_RETRY_FIRST_S = 0.02
LOCK_RETRY_MAX_S = 0.5
# Randomising each wait keeps two waiting processes from retrying in lockstep.
LOCK_RETRY_JITTER = 0.5

SWEEP_RUNNING = "running"
# How many candidates an ambiguous run id prefix lists before "...".
AMBIGUOUS_SHOWN = 5

SOFTWARE_COLUMNS: tuple[str, ...] = (
    "python_version",
    "tensorflow_version",
    "keras_version",
    "numpy_version",
)
# What identifies a sweep point: the workload, every column a workload's configuration
# is stored in (NULL where it has no such setting), and the step count; not seed or repeat.
POINT_COLUMNS: tuple[str, ...] = RUN_COLUMNS[
    RUN_COLUMNS.index("workload") : RUN_COLUMNS.index("steps") + 1
]
DONE_STATUSES: tuple[str, ...] = ("ok", "oom")
SWEEP_COLUMNS: tuple[str, ...] = (
    "sweep_id", "created_at", "finished_at", "status", "command", "grid_json", "hostname",
    "points_total", "points_done",
)  # fmt: skip

_RUN_SELECT = ", ".join(RUN_COLUMNS)
_SAMPLE_SELECT = ", ".join(SAMPLE_COLUMNS)


def default_db_path() -> Path:
    """``$MEMPLAN_DB`` if set, else ``data/memplan.duckdb`` in the repository (never the cwd)."""
    configured = os.environ.get(DB_ENV_VAR, "").strip()
    if configured:
        return Path(configured).expanduser()
    return DATA_DIR / DEFAULT_DB_NAME


def now_iso() -> str:
    """Current UTC time as ISO 8601, the format of every ``*_at`` column."""
    return datetime.now(UTC).isoformat(timespec="seconds")


class _NeedsMigration(StoreError):
    """An older database opened read-only: `ensure_database` catches it and migrates."""


def ensure_database(path: Path) -> Path:
    """Make ``path`` a database of the current schema: create it, or migrate an older one.

    A new file gets every table; the default database of a fresh checkout is
    filled from the bundled reference export, so the dashboard has data on first
    use. An existing file of an older schema is migrated in place (see the
    module docstring); one of a newer schema, or not a memplan database at all,
    raises StoreError.
    """
    path = Path(path)
    if _create(path):
        return path
    try:
        with connect(path, read_only=True):
            pass
    except _NeedsMigration:
        with connect(path):  # read-write: migrates
            pass
    return path


def _create(path: Path) -> bool:
    """Create the database if ``path`` does not exist; False if it does.

    The file is built under a private temporary name and then linked into place,
    so two processes doing this at once never see a half-built database and the
    loser's copy is discarded.
    """
    if path.exists():
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # The name ends in .duckdb.tmp so .gitignore covers it; the token keeps it private.
    temp = path.with_name(f"{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}{path.suffix}.tmp")
    try:
        with contextlib.closing(duckdb.connect(str(temp))) as con:
            con.begin()
            schema.create(con)
            bundled = BUNDLED_EXPORTS if _is_default(path) else ()
            for runs_file, samples_file in bundled:
                if not runs_file.exists():
                    continue
                runs = datafiles.read_runs(runs_file)
                samples = None
                if samples_file.exists():
                    run_ids = set(runs.column("run_id").to_pylist())
                    samples = datafiles.read_samples(samples_file, run_ids)
                datafiles.insert_runs(con, runs, samples, source=runs_file, target=path)
            con.commit()
            # Fold the WAL into the file so the file alone is the whole database.
            con.execute("CHECKPOINT")
        _publish(temp, path)
    finally:
        for leftover in (temp, temp.with_name(temp.name + ".wal")):
            leftover.unlink(missing_ok=True)
    return True


def _is_default(path: Path) -> bool:
    return path.resolve() == default_db_path().resolve()


def _publish(temp: Path, path: Path) -> None:
    """Move ``temp`` to ``path`` unless another process got there first."""
    try:
        # A hard link fails if the name exists, so a database someone else already
        # published (and maybe wrote to) is never overwritten.
        os.link(temp, path)
    except FileExistsError:
        pass
    except OSError:
        # No hard links on this file system: fall back to a rename, which can only
        # lose a race that started within the same few milliseconds.
        if not path.exists():
            os.replace(temp, path)


def _lock_timeout_s() -> float:
    text = os.environ.get(LOCK_TIMEOUT_ENV_VAR, "").strip()
    if not text:
        return LOCK_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise StoreError(
            f"{LOCK_TIMEOUT_ENV_VAR}={text!r} is not a number of seconds; "
            f"give a non-negative number such as {LOCK_TIMEOUT_S:g}"
        )
    return value


def _first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def _is_lock_error(error: duckdb.Error) -> bool:
    message = str(error).lower()
    # Inside one process DuckDB refuses a read-only and a read-write connection to
    # the same file at once (e.g. two dashboard threads), and a connection opened
    # while another thread's last one to the file is closing ("already attached");
    # both clear like a lock.
    return any(sign in message for sign in ("lock", "different configuration", "already attached"))


def _open(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open ``path``, retrying with backoff while another process holds the lock."""
    timeout_s = _lock_timeout_s()
    deadline = time.monotonic() + timeout_s
    delay = LOCK_RETRY_FIRST_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as error:
            if not _is_lock_error(error):
                raise StoreError(
                    f"cannot open database {path}: {_first_line(error)}; "
                    f"point {DB_ENV_VAR} at a memplan database or at a new file"
                ) from error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreError(
                    f"database {path} is locked by another process ({_first_line(error)}); "
                    f"waited {timeout_s:g} s. Try again when the sweep finishes, or raise "
                    f"{LOCK_TIMEOUT_ENV_VAR}"
                ) from error
            wait = delay * (1 + LOCK_RETRY_JITTER * random.random())
            time.sleep(min(wait, remaining))
            delay = min(delay * 2, LOCK_RETRY_MAX_S)


def _stored_version(con: duckdb.DuckDBPyConnection, path: Path) -> int:
    try:
        found = schema.stored_version(con)
    except StoreError as error:
        raise StoreError(f"database {path}: {error}") from None
    if found is None:
        raise StoreError(
            f"{path} is not a memplan database (it has no schema_version); "
            f"point {DB_ENV_VAR} at a memplan database or at a new file"
        )
    return found


def _check_schema(con: duckdb.DuckDBPyConnection, path: Path, read_only: bool) -> None:
    """Let through a database of this schema; migrate an older one if writable; refuse the rest."""
    found = _stored_version(con, path)
    if found > SCHEMA_VERSION:
        raise StoreError(
            f"database {path} has schema version {found}, newer than this memplan's "
            f"{SCHEMA_VERSION}; upgrade memplan to open it, or point {DB_ENV_VAR} at another "
            "database"
        )
    if found == SCHEMA_VERSION:
        return
    if read_only:
        raise _NeedsMigration(
            f"database {path} has schema version {found}, older than this memplan's "
            f"{SCHEMA_VERSION}, and a read-only open never migrates it; open it once read-write "
            f"to migrate it in place, e.g. `python -m profiling list --db {path}`"
        )
    _migrate(con, path, found)


def _migrate(con: duckdb.DuckDBPyConnection, path: Path, found: int) -> None:
    """Migrate from version ``found`` to SCHEMA_VERSION in one transaction."""
    deadline = time.monotonic() + _lock_timeout_s()
    delay = LOCK_RETRY_FIRST_S
    while True:
        con.begin()
        try:
            # Read again inside the transaction: another connection of this process may
            # have migrated the file meanwhile (another process cannot: we hold the lock).
            found = _stored_version(con, path)
            if found != SCHEMA_VERSION:
                schema.migrate(con, found)
            con.commit()
            break
        except duckdb.TransactionException as error:
            _rollback(con)
            # Another connection of this process is migrating it right now: once it has
            # committed, the next attempt finds the current version and does nothing.
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"could not migrate database {path}: another connection kept migrating it "
                    f"({_first_line(error)}); nothing was changed. Try again"
                ) from error
            time.sleep(delay * (1 + LOCK_RETRY_JITTER * random.random()))
            delay = min(delay * 2, LOCK_RETRY_MAX_S)
        except duckdb.Error as error:
            _rollback(con)
            raise StoreError(
                f"could not migrate database {path} from schema version {found} to "
                f"{SCHEMA_VERSION}: {_first_line(error)}; nothing was changed"
            ) from error
        except BaseException:
            _rollback(con)
            raise
    # Fold the migration into the file, as a new database is; only an optimisation, so
    # a checkpoint refused while another connection is busy is left to DuckDB.
    with contextlib.suppress(duckdb.Error):
        con.execute("CHECKPOINT")


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    # A failed COMMIT has rolled back already; there is nothing left to roll back then.
    with contextlib.suppress(duckdb.TransactionException):
        con.rollback()


@contextlib.contextmanager
def connect(path: Path, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection for one operation; always closed.

    Creates the database first if there is no file; migrates an older database
    when read-write and refuses it when read-only (see the module docstring).
    """
    path = Path(path)
    _create(path)
    con = _open(path, read_only)
    try:
        _check_schema(con, path, read_only)
        yield con
    finally:
        con.close()


@contextlib.contextmanager
def transaction(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection inside BEGIN/COMMIT; any exception rolls everything back."""
    with connect(path) as con:
        con.begin()
        try:
            yield con
        except BaseException:
            con.rollback()
            raise
        con.commit()


def samples_table(run_id: str, samples: Any) -> pa.Table:
    """The ``samples`` rows of one run as an Arrow table (fast to insert in bulk)."""
    return pa.table(
        {
            "run_id": pa.array([run_id] * len(samples), pa.string()),
            "t_s": pa.array([sample.t_s for sample in samples], pa.float64()),
            "rss_bytes": pa.array([sample.rss_bytes for sample in samples], pa.int64()),
        },
        schema=SAMPLES_ARROW_SCHEMA,
    )


def insert_run(path: Path, record: RunRecord) -> None:
    """Store one run and its timeline in one transaction."""
    row = record.row()
    placeholders = ", ".join("?" for _ in RUN_COLUMNS)
    try:
        with transaction(path) as con:
            con.execute(
                f"INSERT INTO runs ({_RUN_SELECT}) VALUES ({placeholders})",
                [row[name] for name in RUN_COLUMNS],
            )
            if record.samples:
                insert_table(con, "samples", samples_table(record.run_id, record.samples))
    except duckdb.ConstraintException as error:
        if "duplicate key" not in str(error).lower():
            raise StoreError(
                f"run {record.run_id!r} was not stored in {path}: {_first_line(error)}"
            ) from error
        raise StoreError(
            f"run {record.run_id!r} is already stored in {path}; every run needs a new run_id"
        ) from error


def create_sweep(
    path: Path, sweep_id: str, command: str, grid: dict[str, Any], points_total: int
) -> None:
    """Record a sweep as running, with the grid it will measure."""
    try:
        with transaction(path) as con:
            row = {
                "sweep_id": sweep_id,
                "created_at": now_iso(),
                "finished_at": None,
                "status": SWEEP_RUNNING,
                "command": command,
                "grid_json": json.dumps(grid, sort_keys=True),
                "hostname": socket.gethostname(),
                "points_total": points_total,
                "points_done": 0,
            }
            con.execute(
                f"INSERT INTO sweeps ({', '.join(SWEEP_COLUMNS)})"
                f" VALUES ({', '.join('?' for _ in SWEEP_COLUMNS)})",
                [row[name] for name in SWEEP_COLUMNS],
            )
    except duckdb.ConstraintException as error:
        raise StoreError(
            f"sweep {sweep_id!r} already exists in {path}; every sweep needs a new sweep_id"
        ) from error


def update_sweep(
    path: Path,
    sweep_id: str,
    *,
    status: str | None = None,
    points_done: int | None = None,
    finished: bool = False,
) -> None:
    """Change a sweep's status and/or progress; ``finished`` stamps ``finished_at`` now."""
    assignments: list[str] = []
    values: list[Any] = []
    if status is not None:
        assignments.append("status = ?")
        values.append(status)
    if points_done is not None:
        assignments.append("points_done = ?")
        values.append(points_done)
    if finished:
        assignments.append("finished_at = ?")
        values.append(now_iso())
    with transaction(path) as con:
        exists = con.execute("SELECT 1 FROM sweeps WHERE sweep_id = ?", [sweep_id]).fetchone()
        if exists is None:
            raise StoreError(f"no sweep {sweep_id!r} in {path}; create_sweep it first")
        if assignments:
            con.execute(
                f"UPDATE sweeps SET {', '.join(assignments)} WHERE sweep_id = ?",
                [*values, sweep_id],
            )


def load_runs(
    path: Path,
    *,
    sweep_id: str | None = None,
    status: str | None = None,
    hostname: str | None = None,
    workload: str | None = None,
) -> pd.DataFrame:
    """Runs (columns RUN_COLUMNS) ordered by created_at then run_id; filters combine with AND."""
    filters = {
        "sweep_id": sweep_id,
        "status": status,
        "hostname": hostname,
        "workload": workload,
    }
    chosen = {name: value for name, value in filters.items() if value is not None}
    where = " AND ".join(f"{name} = ?" for name in chosen)
    sql = f"SELECT {_RUN_SELECT} FROM runs"
    if where:
        sql += f" WHERE {where}"
    with connect(path, read_only=True) as con:
        return con.execute(sql + " ORDER BY created_at, run_id", list(chosen.values())).df()


def load_samples(path: Path, run_ids: list[str] | None = None) -> pd.DataFrame:
    """Timeline rows (run_id, t_s, rss_bytes) ordered by run and time; all runs if None."""
    sql = f"SELECT {_SAMPLE_SELECT} FROM samples"
    params: list[Any] = []
    if run_ids is not None:
        sql += " WHERE list_contains(?::VARCHAR[], run_id)"
        params.append(list(run_ids))
    with connect(path, read_only=True) as con:
        return con.execute(sql + " ORDER BY run_id, t_s", params).df()


def load_sweeps(path: Path) -> pd.DataFrame:
    """All sweeps, oldest first."""
    with connect(path, read_only=True) as con:
        return con.execute("SELECT * FROM sweeps ORDER BY created_at, sweep_id").df()


def get_run(path: Path, run_id_prefix: str) -> dict[str, Any]:
    """The one run whose run_id starts with the prefix, as a dict usable as ``RunRecord(**row)``."""
    if not run_id_prefix:
        raise StoreError("run id prefix is empty; give the first characters of a run_id")
    with connect(path, read_only=True) as con:
        result = con.execute(
            f"SELECT {_RUN_SELECT} FROM runs WHERE starts_with(run_id, ?) ORDER BY run_id"
            f" LIMIT {AMBIGUOUS_SHOWN + 1}",
            [run_id_prefix],
        )
        rows = result.fetchall()
    if not rows:
        raise StoreError(f"no run id starts with {run_id_prefix!r} in {path}")
    if len(rows) > 1:
        shown = [row[0] for row in rows[:AMBIGUOUS_SHOWN]]
        more = ", ..." if len(rows) > AMBIGUOUS_SHOWN else ""
        raise StoreError(
            f"run id prefix {run_id_prefix!r} is ambiguous: it matches {', '.join(shown)}{more}; "
            "give more characters"
        )
    return dict(zip(RUN_COLUMNS, rows[0], strict=True))


def point_key(row: RunRecord | Mapping[str, Any]) -> tuple[Any, ...]:
    """What identifies a sweep point (POINT_COLUMNS): workload, configuration, step count."""
    if isinstance(row, RunRecord):
        return tuple(getattr(row, name) for name in POINT_COLUMNS)
    return tuple(row[name] for name in POINT_COLUMNS)


def completed_points(
    path: Path,
    hostname: str,
    software: dict[str, str],
    statuses: tuple[str, ...] = DONE_STATUSES,
) -> Counter[tuple[Any, ...]]:
    """How many runs each point already has on this machine with this software.

    ``software`` maps each of SOFTWARE_COLUMNS to a version; a sweep resumes by
    skipping points whose count already reaches its repeats.
    """
    missing = [name for name in SOFTWARE_COLUMNS if name not in software]
    unknown = [name for name in software if name not in SOFTWARE_COLUMNS]
    if missing or unknown:
        raise StoreError(
            f"software versions must name exactly {', '.join(SOFTWARE_COLUMNS)}; "
            f"missing: {', '.join(missing) or 'none'}; unknown: {', '.join(unknown) or 'none'}"
        )
    if not statuses:
        return Counter()
    software_match = " AND ".join(f"{name} = ?" for name in SOFTWARE_COLUMNS)
    sql = (
        f"SELECT {', '.join(POINT_COLUMNS)} FROM runs WHERE hostname = ? AND {software_match}"
        " AND list_contains(?::VARCHAR[], status)"
    )
    params = [hostname, *(software[name] for name in SOFTWARE_COLUMNS), list(statuses)]
    with connect(path, read_only=True) as con:
        rows = con.execute(sql, params).fetchall()
    return Counter(tuple(row) for row in rows)
