"""Sweeps whose disk fills up, and resumed sweeps under a higher memory limit, without a child.

Each test runs the real sweep lifecycle (lock, pending records, database) in this
process with `profiling.local_sweep.run_point` replaced by a stand-in that returns a
record at once: ``ok``, or ``oom`` when the sweep's limit is below what the point
"needs". A full disk is simulated by making the pending file's ``fsync`` (or the
database's insert) fail with ENOSPC, so these run wherever mounting is not allowed;
tests/integration/test_disk_full_and_read_only.py fills a real tmpfs.
"""

from __future__ import annotations

import dataclasses
import errno
import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from core import database, profiles, store
from core.errors import StoreError
from core.records import RunRecord
from core.units import GIB
from memplan import cli
from profiling import local_sweep, pending
from profiling.runner import RunSettings, skipped_record

# What the stand-in point needs: under a lower limit it ends ``oom``.
NEEDS_BYTES = 2 * GIB
SWEEP = ["sweep", "--framework", "torch", "--image-sizes", "16", "--batch-sizes", "1"]
SWEEP += ["--base-filters", "4", "--levels", "2", "--steps", "2", "--quiet"]


def fake_point(config, settings: RunSettings, *, sweep_id, repeat, estimate_bytes) -> RunRecord:
    """A measured point, at once: ok under a limit that fits NEEDS_BYTES, else oom."""
    record = skipped_record(
        config, settings, "", sweep_id=sweep_id, repeat=repeat, estimate_bytes=estimate_bytes
    )
    if settings.memory_limit_bytes < NEEDS_BYTES:
        return dataclasses.replace(record, status="oom", message="over the limit")
    return dataclasses.replace(
        record,
        status="ok",
        message="",
        peak_sampled_bytes=GIB,
        peak_hwm_bytes=GIB,
        baseline_bytes=GIB // 2,
        wall_s=1.0,
    )


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(local_sweep, "run_point", fake_point)
    # Every point runs: the bounds against the limit and the free memory are not tested here.
    monkeypatch.setattr(local_sweep, "skip_reason", lambda *args, **kwargs: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "runs.duckdb"
    database.ensure_database(path)
    return path


def sweep(db: Path, *extra: str) -> int:
    return cli.main([*SWEEP, "--db", str(db), *extra])


def no_room(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def statuses(db: Path) -> list[str]:
    return sorted(store.load_runs(db)["status"])


# --- item 3: a full disk never loses a measured point -----------------------------------


def test_a_pending_file_the_disk_refuses_is_stored_in_the_database_directly(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(pending.os, "fsync", no_room)
    assert sweep(db) == 0
    assert statuses(db) == ["ok"]
    err = capsys.readouterr().err
    assert "warning: the disk is full:" in err and "was stored in" in err
    assert "Traceback" not in err
    # The half-written file went with the failure: nothing is left to look like a record.
    assert list(pending.pending_dir(db).iterdir()) == []
    assert store.load_sweeps(db)["status"].tolist() == ["finished"]


def test_a_point_neither_the_disk_nor_the_database_takes_waits_in_the_cache_then_is_stored(
    db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real_save = pending.save

    def save_elsewhere_only(db_path: Path, record: RunRecord, directory: Path | None = None):
        if directory is None:  # the database's own disk is full; the home folder's is not
            no_room()
        return real_save(db_path, record, directory)

    def database_full(db_path: Path, record: RunRecord) -> None:
        raise StoreError(f"the disk holding {db_path} is full (...)")

    with monkeypatch.context() as full:
        full.setattr(pending, "save", save_elsewhere_only)
        full.setattr(pending, "_insert", database_full)
        assert sweep(db) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: the disk is full: ")
    kept = list(pending.fallback_dir(db).glob("*.json"))
    assert len(kept) == 1 and f"is kept in {kept[0]}" in lines[0]
    assert statuses(db) == []
    # The database could still be written, so the sweep was not left "running".
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]

    assert sweep(db) == 0  # room again: the next sweep stores the kept point first
    assert "stored 1 run(s) left pending" in capsys.readouterr().out
    assert statuses(db) == ["ok"]
    assert list(pending.fallback_dir(db).glob("*.json")) == []


def test_the_next_sweep_removes_what_an_unfinished_pending_write_left(db: Path) -> None:
    folder = pending.pending_dir(db)
    folder.mkdir()
    (folder / ".abc.json.1234abcd.tmp").write_bytes(b"")
    (folder / ".def.json.5678abcd.tmp").write_text('{"run": {"run_id": "de')
    assert sweep(db) == 0
    assert list(folder.iterdir()) == []


def test_a_write_duckdb_refuses_for_a_full_disk_becomes_one_line(tmp_path: Path) -> None:
    path = tmp_path / "runs.duckdb"
    refused = duckdb.IOException('Could not write file "runs.duckdb.wal": No space left on device')
    known = database.explained(path, refused)
    assert isinstance(known, StoreError)
    assert str(known).startswith(f"the disk holding {path} is full (")
    assert "the write that failed was not stored" in str(known)
    assert database.explained(path, duckdb.IOException("Permission denied")) is None
    # What every later query of the process meets after DuckDB's FatalException.
    invalidated = duckdb.FatalException(
        "FATAL Error: Failed: database has been invalidated because of a previous fatal error"
    )
    assert "an earlier write to" in str(database.explained(path, invalidated))


# --- item 4: an oom under a lower limit is measured again -------------------------------


def test_an_oom_under_a_lower_limit_is_measured_again_and_said_so(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sweep(db, "--memory-limit", "1GiB") == 0
    assert statuses(db) == ["oom"]
    capsys.readouterr()

    assert sweep(db, "--memory-limit", "3GiB") == 0
    out = capsys.readouterr().out
    assert "measured again 1 point(s) that had run out of memory under a lower memory limit" in out
    assert statuses(db) == ["ok", "oom"]


def test_an_oom_under_the_same_or_a_higher_limit_stays_measured(
    db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sweep(db, "--memory-limit", "1GiB") == 0
    assert sweep(db, "--memory-limit", "1GiB") == 0
    assert sweep(db, "--memory-limit", "512MiB") == 0
    out = capsys.readouterr().out
    assert "measured again" not in out
    assert out.count("nothing new, 1 already measured") == 2
    assert statuses(db) == ["oom"]


def test_resume_counts_an_oom_only_under_a_limit_no_lower_than_asked(
    db: Path, make_record: Callable[..., RunRecord]
) -> None:
    record = make_record(status="oom", memory_limit_bytes=GIB)
    store.insert_run(db, record)
    here = profiles.profile_of(record.row()).key
    assert sum(store.completed_points(db, here, oom_limit_at_least=GIB).values()) == 1
    assert sum(store.completed_points(db, here, oom_limit_at_least=2 * GIB).values()) == 0
    assert sum(store.completed_points(db, here).values()) == 1  # no limit asked: as before
