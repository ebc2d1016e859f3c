"""Opening a DuckDB file: waiting while another process holds its lock, refusing it when damaged.

DuckDB lets one process open a file read-write *or* many open it read-only, so
an open that meets another process's lock retries with backoff for up to
LOCK_TIMEOUT_S (`MEMPLAN_LOCK_TIMEOUT_S`). A damaged file (truncated, or a block
that fails DuckDB's checksum) is refused at once with one StoreError naming it
and what to do (`damaged`), never waited on as if it were locked: only DuckDB's
own lock messages (LOCK_SIGNS) are. `core.database` decides what to open, when
to create and migrate.

A command that reads one file many times and writes nothing meanwhile (``memplan
size`` opened it 16 times for one answer, ~40 ms each under cProfile on the 2-core
VM) shares one read-only connection (`sharing`): every read-only open of that file
inside gets a cursor of it (`shared_cursor`). Only the thread (or task) that shares it
sees it, and only until the block ends, so the lock a sweep needs is held no
longer than the command's reads.
"""

from __future__ import annotations

import contextlib
import os
import random
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

import duckdb

from core.dbnames import DB_ENV_VAR, DB_FLAG
from core.errors import StoreError

LOCK_TIMEOUT_ENV_VAR = "MEMPLAN_LOCK_TIMEOUT_S"
# A sweep holds the write lock only for one insert (milliseconds), so a minute of
# waiting means something else is wrong, e.g. a stray process holding the file open.
LOCK_TIMEOUT_S = 60.0
LOCK_RETRY_FIRST_S = 0.02
LOCK_RETRY_MAX_S = 0.5
# Randomising each wait keeps two waiting processes from retrying in lockstep.
LOCK_RETRY_JITTER = 0.5


def lock_timeout_s() -> float:
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


def first_line(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


def file_stamp(path: Path) -> tuple[int, ...]:
    """Size and modification time of the database file and of its write-ahead log (0s if none).

    A cheap fingerprint of the contents, read with ``os.stat`` and no connection,
    so a cache keyed by it never waits on a lock a sweep holds; any write changes it.
    """
    stamp: list[int] = []
    for candidate in (path, path.with_name(path.name + ".wal")):
        try:
            info = candidate.stat()
        except FileNotFoundError:
            stamp += [0, 0]
        else:
            stamp += [info.st_size, info.st_mtime_ns]
    return tuple(stamp)


# DuckDB's words when another process holds the file ("IO Error: Could not set lock on
# file ...: Conflicting lock is held in ... (PID ...)"). Inside one process DuckDB
# refuses a read-only and a read-write connection to the same file at once (e.g. two
# dashboard threads), and a connection opened while another thread's last one to the
# file is closing ("already attached"); both clear like a lock.
LOCK_SIGNS = (
    "could not set lock on file",
    "conflicting lock is held",
    "different configuration",
    "already attached",
)
# DuckDB's words for a file that is damaged: a block whose checksum does not match, a
# file shorter than its own header says (truncated), a header that is not DuckDB's.
DAMAGE_SIGNS = (
    "corrupt database file",
    "does not match stored checksum",
    "could not read enough bytes",
    "not a valid duckdb database file",
)


# DuckDB's file starts with three 4 KiB headers, then its blocks; its own PRAGMA
# database_size says how many blocks of what size the file holds.
HEADER_BYTES = 3 * 4096


def check_length(con: duckdb.DuckDBPyConnection, path: Path) -> None:
    """A file too short for the blocks in use is truncated: `damaged`, at once.

    DuckDB itself only notices when a query reaches a missing block, so a
    half-truncated file would answer `list` from the blocks it still has. The
    blocks in use (not the free ones, which DuckDB may cut off the end of the
    file) must fit after the headers, wherever they lie: a lower bound that a
    whole file always meets.
    """
    cursor = con.execute("PRAGMA database_size")
    names = [column[0] for column in cursor.description]
    row = dict(zip(names, cursor.fetchone(), strict=True))
    used = int(row["used_blocks"])
    least = HEADER_BYTES + int(row["block_size"]) * used
    actual = path.stat().st_size
    if actual < least:
        raise damaged(
            path,
            ValueError(
                f"the file has {actual} bytes, too few for the {used} blocks of "
                f"{row['block_size']} bytes its header says are in use: it was truncated"
            ),
        )


def is_lock_error(error: duckdb.Error) -> bool:
    message = str(error).lower()
    return any(sign in message for sign in LOCK_SIGNS)


def is_damage_error(error: BaseException) -> bool:
    """Whether DuckDB raised ``error`` because the database file is damaged."""
    message = str(error).lower()
    return isinstance(error, duckdb.Error) and any(sign in message for sign in DAMAGE_SIGNS)


def damaged(path: Path, error: BaseException) -> StoreError:
    """The one-line error for a damaged database file: which file, why, and what to do."""
    return StoreError(
        f"{path} is not a readable DuckDB database ({first_line(error)}); restore it from a "
        f"backup or point {DB_ENV_VAR}/{DB_FLAG} at another file"
    )


# What DuckDB says when the file system under the database has no room left.
DISK_FULL_SIGNS = ("no space left on device", "disk quota exceeded")


def explained(path: Path, error: BaseException) -> StoreError | None:
    """The one-line error for DuckDB's ``error`` when the file is damaged or its disk full.

    A full disk makes DuckDB invalidate its instance (``FatalException``): the write
    that failed is rolled back, and the next connection opens the file afresh.
    """
    if is_damage_error(error):
        return damaged(path, error)
    message = str(error).lower()
    if isinstance(error, duckdb.Error) and any(sign in message for sign in DISK_FULL_SIGNS):
        return StoreError(
            f"the disk holding {path} is full ({first_line(error)}): the write that failed was "
            "not stored and the database keeps what it held before; free some space and run "
            "the command again"
        )
    if isinstance(error, duckdb.Error) and "database has been invalidated" in message:
        return StoreError(
            f"an earlier write to {path} failed and DuckDB closed the file for this process "
            f"({first_line(error)}); nothing more was written: run the command again (after "
            "freeing some space if the disk is full)"
        )
    return None


def check_file_writable(path: Path, what: str) -> None:
    """A `StoreError` when ``path`` exists but it or its folder cannot be written.

    A read-only mount stops root too (``os.access`` says so, where a mode would not),
    and DuckDB writes a ``.wal`` beside the file, a sweep its lock and pending records.
    """
    path = Path(path)
    if not path.exists() or (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        return
    try:
        read_only_mount = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        read_only_mount = False
    why = "is on a read-only file system" if read_only_mount else "or its folder is not writable"
    raise StoreError(
        f"database {path} {why}, so {what} cannot write to it (nothing was changed); copy it "
        f"to a folder you can write and point {DB_FLAG} or {DB_ENV_VAR} at the copy"
    )


# The read-only connections shared by the current thread or task, by resolved path.
_SHARED: ContextVar[dict[Path, duckdb.DuckDBPyConnection] | None] = ContextVar(
    "memplan_shared_connections", default=None
)


@contextlib.contextmanager
def sharing(path: Path, con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside the block, `shared_cursor` of ``path`` hands out cursors of ``con`` (read-only,
    opened and checked by the caller, which closes it after)."""
    shared = dict(_SHARED.get() or {})
    shared[Path(path).resolve()] = con
    token = _SHARED.set(shared)
    try:
        yield
    finally:
        _SHARED.reset(token)


def shared_cursor(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection | None:
    """A cursor of the connection `sharing` shares for ``path``; None outside such a block.

    A write there is refused: DuckDB opens a file read-write or read-only within one
    process, never both, so it would wait out the lock timeout on its own reader.
    """
    con = (_SHARED.get() or {}).get(Path(path).resolve())
    if con is None:
        return None
    if not read_only:
        raise StoreError(
            f"a write to {path} while its reads share one read-only connection; "
            "write after the reads"
        )
    return con.cursor()


def open_file(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Open ``path``, retrying with backoff while another process holds the lock."""
    timeout_s = lock_timeout_s()
    deadline = time.monotonic() + timeout_s
    delay = LOCK_RETRY_FIRST_S
    while True:
        try:
            return duckdb.connect(str(path), read_only=read_only)
        except duckdb.Error as error:
            if is_damage_error(error):
                raise damaged(path, error) from error
            if not is_lock_error(error):
                raise StoreError(
                    f"cannot open database {path}: {first_line(error)}; "
                    f"point {DB_ENV_VAR} at a memplan database or at a new file"
                ) from error
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise StoreError(
                    f"database {path} is locked by another process ({first_line(error)}); "
                    f"waited {timeout_s:g} s. Try again when the sweep finishes, or raise "
                    f"{LOCK_TIMEOUT_ENV_VAR}"
                ) from error
            wait = delay * (1 + LOCK_RETRY_JITTER * random.random())
            time.sleep(min(wait, remaining))
            delay = min(delay * 2, LOCK_RETRY_MAX_S)
