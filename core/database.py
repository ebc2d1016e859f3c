"""The database file: where it is, creating and migrating it, opening it under DuckDB's lock.

DuckDB lets one process open a file read-write *or* many open it read-only, never
both, so every operation opens its own short-lived connection (`connect`) and retries
while another process holds the lock. Nothing keeps a connection between calls: a
cached one in the dashboard would lock the sweep that writes out for as long as it
lived. Only a command's reads of one question share one (`reading`), for the seconds
they take. `core.store` reads and writes the rows through these connections.

Schema versions (`core.schema` has the tables, `core.migrations` the migrations):

* A database written by an older memplan is migrated in place the first time it
  is opened read-write (`ensure_database`, which every CLI command and the
  dashboard call first, or any write), in one transaction: every row is kept
  with its values, and a failure leaves the file exactly as it was. A migrated
  file no longer opens in the older memplan.
* Opened read-only (``connect(path, read_only=True)``), an older database is never
  written to: the open fails with a StoreError saying to open it once read-write.
* A database from a newer memplan is refused, read-only or not, naming both
  versions; nothing is written to it.

A damaged file (truncated, or a block that fails DuckDB's checksum) is refused
at once with one StoreError naming it and what to do, never waited on as if it
were locked (`core.dbopen` opens the file and tells the two apart).
"""

from __future__ import annotations

import contextlib
import os
import random
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb

from core import bundled_gpu, datafiles, migrations, schema
from core.dbnames import DB_ENV_VAR as DB_ENV_VAR
from core.dbopen import (
    DB_FLAG,
    LOCK_RETRY_FIRST_S,
    LOCK_RETRY_JITTER,
    LOCK_RETRY_MAX_S,
    check_file_writable,
    check_length,
    damaged,
    explained,
    first_line,
    is_damage_error,
    lock_timeout_s,
    open_file,
    shared_cursor,
    sharing,
)
from core.dbopen import LOCK_TIMEOUT_ENV_VAR as LOCK_TIMEOUT_ENV_VAR
from core.dbopen import file_stamp as file_stamp
from core.errors import StoreError
from core.schema import SCHEMA_VERSION

REPO_ROOT = Path(__file__).resolve().parent.parent
DATA_DIR = REPO_ROOT / "data"
DEFAULT_DB_NAME = "memplan.duckdb"
BUNDLED_RUNS = DATA_DIR / "reference_runs.parquet"
BUNDLED_SAMPLES = DATA_DIR / "reference_samples.parquet"
# Every bundled export (runs, timelines) a fresh default database starts with, a sweep each
# (data/REFERENCE.md says which machine, framework and oneDNN state measured each one).
BUNDLED_EXPORTS: tuple[tuple[Path, Path], ...] = tuple(
    (DATA_DIR / f"{name}_runs.parquet", DATA_DIR / f"{name}_samples.parquet")
    for name in ("reference", "alexnet", "unet3d_amd", "unet3d_knobs", "unet3d_knobs_onednn")
    + ("unet3d_f26_tf", "unet3d_f26_torch", "alexnet_f26_tf", "alexnet_f26_torch")
    + ("unet3d_f26_tf_onednn_off",)
)

# Each workload's calibration grid for a new machine (`profiling.calibration`).
CALIBRATION_FILE = DATA_DIR / "calibration.json"

# The repository's own database: the only new file filled with the bundled runs.
REPOSITORY_DB = DATA_DIR / DEFAULT_DB_NAME

READ_ONLY_ENV_VAR = "MEMPLAN_READ_ONLY"
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def read_only_mode() -> bool:
    """Whether ``MEMPLAN_READ_ONLY`` asks that nothing be written: no file, no row, no lock."""
    return os.environ.get(READ_ONLY_ENV_VAR, "").strip().lower() in TRUE_VALUES


def check_writable(path: Path, what: str = "this command") -> Path:
    """``path``, or a `StoreError` saying why ``what`` cannot run: read-only mode, or the file
    unwritable (a read-only mount). Commands that store call it first: nothing is measured
    that could not be kept."""
    if read_only_mode():
        raise StoreError(
            f"{READ_ONLY_ENV_VAR} is set, so nothing is written to {path} and {what} cannot "
            f"run; unset {READ_ONLY_ENV_VAR} (or run it where the database may be written)"
        )
    check_file_writable(path, what)  # a read-only mount: one line, before any lock or file
    return Path(path)


def existing(path: Path) -> Path:
    """``path`` if a file is there; a `StoreError` saying what to do if not (nothing is created)."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(
            f"database {path} does not exist, and {READ_ONLY_ENV_VAR} is set, so none is "
            f"created: point {DB_ENV_VAR} at an existing memplan database, or create this one "
            f"first without {READ_ONLY_ENV_VAR} (e.g. `memplan list {DB_FLAG} {path}`)"
        )
    return path


def default_db_path() -> Path:
    """``$MEMPLAN_DB`` if set, else ``data/memplan.duckdb`` in the repository (never the cwd)."""
    configured = os.environ.get(DB_ENV_VAR, "").strip()
    if configured:
        return Path(configured).expanduser()
    return REPOSITORY_DB


class _NeedsMigration(StoreError):
    """An older database opened read-only: `ensure_database` catches it and migrates."""


def ensure_database(path: Path, *, seed_new: bool = False) -> Path:
    """Make ``path`` a database of the current schema: create it, or migrate an older one.

    A new file gets every table and no runs, however it was named (the command line's
    option or ``$MEMPLAN_DB``), except the repository's own ``data/memplan.duckdb``
    (REPOSITORY_DB), which a fresh checkout fills from the bundled reference
    exports so the dashboard has data on first use, and any new file when
    ``seed_new`` asks for that (the dashboard's first start on a new
    ``$MEMPLAN_DB``, `created_seeded`). An existing file of an older
    schema is migrated in place (see the module docstring); one of a newer schema,
    not a memplan database at all, or damaged, raises StoreError.
    """
    path = Path(path)
    if read_only_mode():  # never created, never migrated: checked as it is
        with connect(existing(path), read_only=True):
            pass
        return path
    if _create(path, seed=seed_new):
        return path
    try:
        with connect(path, read_only=True):
            pass
    except _NeedsMigration:
        with connect(path):  # read-write: migrates
            pass
    return path


# What `created_seeded` created in this process (the server's warm-up, `dashboard.serve`).
_SEEDED_HERE: set[Path] = set()


def created_seeded(path: Path) -> bool:
    """Create ``path`` filled with the bundled runs if it does not exist; whether this call did.

    What the dashboard does with the database it is pointed at, so a new
    ``$MEMPLAN_DB`` starts as the default database does instead of empty. An
    existing file is left as it is (`ensure_database` migrates it).
    """
    if created := _create(Path(path), seed=True):
        _SEEDED_HERE.add(Path(path).resolve())
    return created


def seeded_by_this_process(path: Path) -> bool:
    """Whether `created_seeded` created ``path`` in this process (at any time before now)."""
    return Path(path).resolve() in _SEEDED_HERE


def seed_bundled(path: Path) -> int:
    """Insert every bundled export (`BUNDLED_EXPORTS`, `core.bundled_gpu`) into ``path``; runs.

    For a database that holds no runs yet, in one transaction: a bundled run
    already stored makes it refuse, naming the run, and nothing is added.
    """
    path = check_writable(Path(path), "loading the bundled runs")
    with connect(path) as con:
        con.begin()
        added = _insert_bundled(con, path)
        con.commit()
    return added


def _insert_bundled(con: duckdb.DuckDBPyConnection, target: Path) -> int:
    """Insert every bundled export present on disk, then the bundled GPU runs; how many runs."""
    added = 0
    for runs_file, samples_file in BUNDLED_EXPORTS:
        if not runs_file.exists():
            continue
        runs = datafiles.read_runs(runs_file)
        samples = None
        if samples_file.exists():
            run_ids = set(runs.column("run_id").to_pylist())
            samples = datafiles.read_samples(samples_file, run_ids)
        datafiles.insert_runs(con, runs, samples, source=runs_file, target=target)
        added += runs.num_rows
    return added + bundled_gpu.insert_bundled_gpu_runs(con, target)


def _create(path: Path, *, seed: bool = False) -> bool:
    """Create the database if ``path`` does not exist; False if it does.

    The file is built under a private temporary name and then linked into place,
    so two processes doing this at once never see a half-built database and the
    loser's copy is discarded.
    """
    if path.exists():
        return False
    check_writable(path, "a new database")
    # The name ends in .duckdb.tmp so .gitignore covers it; the token keeps it private.
    temp = path.with_name(f"{path.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}{path.suffix}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _build(path, temp, seed=seed)
    except (OSError, duckdb.Error) as error:
        # /sys, /proc/nope, a read-only mount, a folder of someone else's: one line, exit 2.
        raise StoreError(
            f"cannot create database {path}: {first_line(error)}; point {DB_ENV_VAR} or {DB_FLAG} "
            "at a file in a folder you can write"
        ) from None
    finally:
        for leftover in (temp, temp.with_name(temp.name + ".wal")):
            with contextlib.suppress(OSError):
                leftover.unlink(missing_ok=True)
    return True


def _build(path: Path, temp: Path, *, seed: bool = False) -> None:
    """A new database at ``temp``, filled if ``seed`` or REPOSITORY_DB, then published."""
    with contextlib.closing(duckdb.connect(str(temp))) as con:
        con.begin()
        schema.create(con)
        if seed or _is_repository_db(path):
            _insert_bundled(con, path)
        con.commit()
        # Fold the WAL into the file so the file alone is the whole database.
        con.execute("CHECKPOINT")
    _publish(temp, path)


def _is_repository_db(path: Path) -> bool:
    """Whether ``path`` is REPOSITORY_DB, named on the command line, by ``$MEMPLAN_DB`` or not."""
    return path.resolve() == REPOSITORY_DB.resolve()


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
        return schema.check_columns(con, path)  # a dropped column: one line, not a BinderError
    if read_only:
        raise _NeedsMigration(
            f"database {path} has schema version {found}, older than this memplan's "
            f"{SCHEMA_VERSION}, and a read-only open never migrates it; open it once read-write "
            f"to migrate it in place, e.g. `memplan list {DB_FLAG} {path}`"
        )
    _migrate(con, path, found)


def _migrate(con: duckdb.DuckDBPyConnection, path: Path, found: int) -> None:
    """Migrate from version ``found`` to SCHEMA_VERSION in one transaction."""
    deadline = time.monotonic() + lock_timeout_s()
    delay = LOCK_RETRY_FIRST_S
    while True:
        con.begin()
        try:
            # Read again inside the transaction: another connection of this process may
            # have migrated the file meanwhile (another process cannot: we hold the lock).
            found = _stored_version(con, path)
            if found != SCHEMA_VERSION:
                migrations.migrate(con, found)
            con.commit()
            break
        except duckdb.TransactionException as error:
            _rollback(con)
            # Another connection of this process is migrating it right now: once it has
            # committed, the next attempt finds the current version and does nothing.
            if time.monotonic() >= deadline:
                raise StoreError(
                    f"could not migrate database {path}: another connection kept migrating it "
                    f"({first_line(error)}); nothing was changed. Try again"
                ) from error
            time.sleep(delay * (1 + LOCK_RETRY_JITTER * random.random()))
            delay = min(delay * 2, LOCK_RETRY_MAX_S)
        except duckdb.Error as error:
            _rollback(con)
            if is_damage_error(error):
                raise damaged(path, error) from error
            raise StoreError(
                f"could not migrate database {path} from schema version {found} to "
                f"{SCHEMA_VERSION}: {first_line(error)}; nothing was changed"
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
    when read-write and refuses it when read-only (see the module docstring). A
    damaged file (a block that fails its checksum, a truncated file) raises
    StoreError (`damaged`) wherever DuckDB finds the damage: opening it or
    reading the block inside the ``with``.
    """
    path = Path(path)
    if not read_only:
        check_writable(path, "a write")  # MEMPLAN_READ_ONLY: no write reaches DuckDB at all
    if not read_only_mode():
        _create(path)
    con = shared_cursor(path, read_only)  # inside `reading`: the file is open already
    if con is None:
        con = open_file(existing(path) if read_only_mode() else path, read_only)
    try:
        check_length(con, path)
        _check_schema(con, path, read_only)
        yield con
    except duckdb.Error as error:
        if (known := explained(path, error)) is not None:  # damaged, or the disk full
            raise known from error
        raise
    finally:
        with contextlib.suppress(duckdb.Error):
            con.close()


@contextlib.contextmanager
def reading(path: Path) -> Iterator[None]:
    """Every read-only `connect` to ``path`` inside the block shares one connection, opened
    and checked once (`core.dbopen.sharing`); a read-write one raises StoreError."""
    with connect(path, read_only=True) as con, sharing(path, con):
        yield


@contextlib.contextmanager
def transaction(path: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-write connection inside BEGIN/COMMIT; any exception rolls everything back."""
    with connect(path) as con:
        con.begin()
        try:
            yield con
        except BaseException:
            # The exception is the news; a rollback DuckDB refuses (after damage) is not.
            with contextlib.suppress(duckdb.Error):
                con.rollback()
            raise
        con.commit()
