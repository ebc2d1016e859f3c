"""A measured point is never lost: on disk first, in the database second.

`store_record` writes the record to ``<stem>.pending/<run_id>.json`` beside the
database (``runs.pending/`` for ``runs.duckdb``), then inserts it, then deletes
the file. Whatever stops the insert — the database locked for longer than the
sweep may wait, Ctrl-C, SIGTERM, a crash — the file stays, and `ingest`, which
every sweep runs first (holding the database's sweep lock), stores it then. A
record whose insert had committed before the file could go is recognised by
its run id and not stored twice.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

from core import datafiles, store
from core.errors import DataFileError, StoreError
from core.records import RunRecord, Sample

PENDING_SUFFIX = ".pending"
# What `core.store.insert_run` says of a run id the database already has.
_ALREADY_STORED = "is already stored in"


def pending_dir(db_path: Path) -> Path:
    """``runs.pending`` for ``runs.duckdb``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + PENDING_SUFFIX)


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
        with open(temp, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)


def save(db_path: Path, record: RunRecord) -> Path:
    """Write ``record`` to the pending folder, atomically and durably; its file."""
    directory = pending_dir(db_path)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{record.run_id}.json"
    write_atomically(path, to_json(record))
    return path


def _insert(db_path: Path, record: RunRecord) -> None:
    """Store ``record``; one already stored (same run id) counts as stored."""
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
    path = save(db_path, record)
    try:
        _insert(db_path, record)
    except StoreError as error:
        raise StoreError(
            f"{error}. The measured point is kept in {path} and stored by the next sweep"
        ) from error
    path.unlink(missing_ok=True)


def ingest(db_path: Path) -> int:
    """Store every record left pending for ``db_path``; how many it stored.

    Call it only while holding the database's sweep lock. Each file passes the
    checks an import makes (`from_json`); one that does not is moved aside
    (`quarantine`: ``*.bad``, named on stderr, never deleted), so it never stops
    this sweep or a later one.
    """
    directory = pending_dir(db_path)
    if not directory.is_dir():
        return 0
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
