"""A measured point is never lost: on disk first, in the database second.

`store_record` writes the record to ``<stem>.pending/<run_id>.json`` beside the
database (``runs.pending/`` for ``runs.duckdb``), then inserts it, then deletes
the file. Whatever stops the insert — the database locked for longer than the
sweep may wait, Ctrl-C, SIGTERM, a crash — the file stays, and `ingest`, which
every sweep runs first (holding the database's sweep lock), stores it then. A
record whose insert had committed before the file could go is recognised by
its run id and not stored twice.

A full disk (or any file system that refuses the pending file) does not lose the
point either: its half-written file is removed at once, and the record goes
straight into the database; if that fails too, it is kept in a folder of this
user's cache (`fallback_dir`, another disk as a rule), which `ingest` reads as
well, and the sweep stops with one line saying where it waits (`UnsavedError`).
`ingest` also removes any ``.tmp`` file a killed write left behind.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from core.errors import DataFileError, StoreError
from core.records import RunRecord, Sample

# core.datafiles, core.store and DuckDB (pandas and pyarrow with them) are imported where they
# are used: a Slurm job (`profiling.slurm_job`) only writes files with this module, and
# importing them cost each job ~0.6 CPU s before it measured anything.

PENDING_SUFFIX = ".pending"
# Where a record waits when the database's own disk refuses it: $XDG_CACHE_HOME or ~/.cache.
CACHE_ENV_VAR = "XDG_CACHE_HOME"
# What `core.store.insert_run` says of a run id the database already has.
_ALREADY_STORED = "is already stored in"


def pending_dir(db_path: Path) -> Path:
    """``runs.pending`` for ``runs.duckdb``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + PENDING_SUFFIX)


class UnsavedError(StoreError):
    """A measured record neither the pending folder nor the database could take."""


def fallback_dir(db_path: Path) -> Path:
    """This user's cache folder for ``db_path``'s records when its own disk is full.

    Named by a hash of the database's resolved path, so only that database's
    `ingest` stores them; in the user's home, so no other user can plant one.
    """
    cache = os.environ.get(CACHE_ENV_VAR, "").strip() or str(Path.home() / ".cache")
    digest = hashlib.sha256(str(Path(db_path).resolve()).encode()).hexdigest()[:16]
    return Path(cache) / "memplan" / "pending" / digest


def _why(error: BaseException) -> str:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return "the disk is full"
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM for the few milliseconds a file takes to write."""
    held = {signal.SIGINT, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, held)


def to_json(record: RunRecord) -> str:
    return json.dumps(
        {"run": record.row(), "samples": [[s.t_s, s.rss_bytes] for s in record.samples]}
    )


def from_json(text: str, source: Path | str = "a pending record") -> RunRecord:
    """The record ``text`` holds, checked as an import checks a row (`core.datafiles.check_record`).

    `DataFileError` (a ValueError) naming ``source`` when it is not JSON, not a
    record, or not one that could have been measured.
    """
    try:
        values = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise DataFileError(f"{source}: not JSON ({error})") from None
    if not isinstance(values, dict) or "run" not in values:
        raise DataFileError(f"{source}: not a memplan record ({{'run': ..., 'samples': ...}})")
    from core import datafiles

    row, pairs = datafiles.check_record(Path(source), values["run"], values.get("samples", []))
    samples = tuple(Sample(t_s=t, rss_bytes=rss) for t, rss in pairs)
    return RunRecord(**row, samples=samples)


def quarantine(path: Path, reason: str) -> Path:
    """Move ``path`` aside as ``<name>.bad`` (never deleted), say so on stderr; the new path."""
    bad = path.with_name(path.name + ".bad")
    number = 1
    while bad.exists():
        number += 1
        bad = path.with_name(f"{path.name}.{number}.bad")
    os.replace(path, bad)
    print(f"warning: {path} was refused and moved to {bad}: {reason}", file=sys.stderr)
    return bad


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` whole or not at all, and durably.

    A reader, on a shared filesystem too, never sees half a file, and Ctrl-C or
    SIGTERM waits the few milliseconds it takes.
    """
    temp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with signals_deferred():
        try:
            with open(temp, "w") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException:
            # A full disk leaves an empty or partial file: never left to look like a record.
            with contextlib.suppress(OSError):
                temp.unlink(missing_ok=True)
            raise


def save(db_path: Path, record: RunRecord, directory: Path | None = None) -> Path:
    """Write ``record`` to the pending folder (or ``directory``), atomically, durably; its file."""
    directory = directory or pending_dir(db_path)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record.run_id}.json"
    write_atomically(path, to_json(record))
    return path


def _insert(db_path: Path, record: RunRecord) -> None:
    """Store ``record``; one already stored (same run id) counts as stored."""
    from core import store

    try:
        store.insert_run(db_path, record)
    except StoreError as error:
        if _ALREADY_STORED not in str(error):
            raise


def store_record(db_path: Path, record: RunRecord) -> None:
    """Save ``record`` on disk, insert it, then forget the file.

    The insert waits out another process's lock as `core.database` does, and an
    interrupt (Ctrl-C, SIGTERM) stops the wait at once: the record then stays
    pending for the next sweep. A `StoreError` says where the record waits.
    """
    try:
        path = save(db_path, record)
    except OSError as error:
        _store_unsaved(db_path, record, error)
        return
    try:
        _insert(db_path, record)
    except StoreError as error:
        raise StoreError(
            f"{error}. The measured point is kept in {path} and stored by the next sweep"
        ) from error
    path.unlink(missing_ok=True)


def _store_unsaved(db_path: Path, record: RunRecord, error: OSError) -> None:
    """Store ``record``, whose pending file ``error`` refused, in the database directly.

    Failing that, keep it in `fallback_dir` and raise `UnsavedError` saying where.
    """
    import duckdb

    why, folder = _why(error), pending_dir(db_path)
    try:
        _insert(db_path, record)
    except (OSError, StoreError, duckdb.Error) as insert_error:
        point = f"the measured point {record.run_id} ({record.status})"
        try:
            kept = f"is kept in {save(db_path, record, fallback_dir(db_path))}"
            kept += " and stored by the next sweep of this database"
        except OSError as last:
            kept = f"could not be kept anywhere ({_why(last)} there too) and is lost"
        raise UnsavedError(
            f"{why}: {folder} and {db_path} refused {point}, which {kept}; free some space "
            "and run the same command to resume"
        ) from insert_error
    print(
        f"warning: {why}: {folder} refused a pending copy, so {record.run_id} was stored "
        f"in {db_path} directly",
        file=sys.stderr,
    )


def _clean_leftovers(directory: Path) -> None:
    """Remove the ``.tmp`` files of writes that never finished (a full disk, a kill -9)."""
    for leftover in directory.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            leftover.unlink()


def ingest(db_path: Path) -> int:
    """Store every record left pending for ``db_path``; how many it stored.

    Call it only while holding the database's sweep lock. Each file passes the
    checks an import makes (`from_json`); one that does not is moved aside
    (`quarantine`: ``*.bad``, named on stderr, never deleted), so it never stops
    this sweep or a later one.
    """
    stored = 0
    for directory in (pending_dir(db_path), fallback_dir(db_path)):
        if directory.is_dir():
            _clean_leftovers(directory)
            stored += _ingest_folder(db_path, directory)
    return stored


def _ingest_folder(db_path: Path, directory: Path) -> int:
    stored = 0
    for path in sorted(directory.glob("*.json")):
        try:
            record = from_json(path.read_text(), path)
        except (OSError, DataFileError) as error:
            quarantine(path, str(error))
            continue
        _insert(db_path, record)
        path.unlink(missing_ok=True)
        stored += 1
    return stored
