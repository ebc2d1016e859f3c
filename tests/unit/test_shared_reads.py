"""One question's reads share one connection (`core.database.reading`), and only its own.

`memplan size buy` opened the database file 16 times for one answer (~40 ms CPU
each on the 2-core VM); inside `reading` every read-only `connect` gets a cursor
of one connection instead, while a write is refused rather than left to wait out
the lock timeout on its own reader.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from core import database, store
from core.errors import StoreError


def test_reads_inside_reading_open_the_file_once(
    tmp_path: Path, database_opens: list[bool]
) -> None:
    db = database.ensure_database(tmp_path / "memplan.duckdb")
    database_opens.clear()

    with database.reading(db):
        runs = store.load_runs(db)
        sweeps = store.load_sweeps(db)
        again = store.load_runs(db, store.RunFilter(status="ok"))

    assert (runs.empty, sweeps.empty, again.empty) == (True, True, True)
    assert database_opens == [True]
    store.load_runs(db)  # after the block: a connection of its own again
    assert database_opens == [True, True]


def test_a_write_inside_reading_is_refused_and_works_after_it(tmp_path: Path, make_record) -> None:
    db = database.ensure_database(tmp_path / "memplan.duckdb")

    with database.reading(db), pytest.raises(StoreError, match="write after the reads"):
        store.insert_run(db, make_record())

    store.insert_run(db, make_record())
    assert len(store.load_runs(db)) == 1


def test_another_thread_does_not_share_the_connection(
    tmp_path: Path, database_opens: list[bool]
) -> None:
    # The dashboard serves each session in a thread of its own.
    db = database.ensure_database(tmp_path / "memplan.duckdb")
    database_opens.clear()

    with database.reading(db):
        reader = threading.Thread(target=store.load_runs, args=(db,))
        reader.start()
        reader.join()
        store.load_runs(db)

    assert database_opens == [True, True]
