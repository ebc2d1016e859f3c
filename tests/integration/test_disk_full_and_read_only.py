"""A database on a full disk, on a read-only mount, or with a column dropped by hand.

The first two mount a small tmpfs (we need root, or a user namespace that allows
it): skipped, with mount's own words, where mounting is not permitted. The sweeps
run in this process with the stand-in child of tests/unit/test_sweep_disk_and_resume.py,
so no framework is imported.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from core import database, store
from core.schema import SCHEMA_VERSION
from memplan import cli
from profiling import local_sweep, pending
from tests.unit.test_sweep_disk_and_resume import SWEEP, fake_point

EXPORT = database.DATA_DIR / "reference_runs.parquet"


def mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount here: {done.stderr.strip() or done.returncode}")


@pytest.fixture
def stand_in_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_sweep, "run_point", fake_point)
    monkeypatch.setattr(local_sweep, "skip_reason", lambda *args, **kwargs: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs holding a new, empty database."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mount("-t", "tmpfs", "-o", "size=4M", "tmpfs", str(disk))
    try:
        database.ensure_database(disk / "runs.duckdb")
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as file:
        try:
            while True:
                file.write(b"\0" * 65536)
                file.flush()
        except OSError:
            pass


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- item 3: disk full --------------------------------------------------------------------


def test_a_disk_that_fills_during_a_point_keeps_it_and_the_next_sweep_stores_it(
    small_disk: Path,
    stand_in_child: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = small_disk / "runs.duckdb"

    def point_that_fills_the_disk(*args, **kwargs):
        fill(small_disk)  # the point ran; meanwhile something else took every byte
        return fake_point(*args, **kwargs)

    monkeypatch.setattr(local_sweep, "run_point", point_that_fills_the_disk)
    assert cli.main([*SWEEP, "--db", str(db)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: the disk is full: ")
    assert "and stored by the next sweep of this database" in lines[0]
    assert [p.name for p in pending.pending_dir(db).iterdir()] == []  # no 0-byte .tmp

    (small_disk / "filler").unlink()
    monkeypatch.setattr(local_sweep, "run_point", fake_point)
    assert cli.main([*SWEEP, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "marked 1 dead sweep(s) interrupted; stored 1 run(s) left pending" in out
    assert store.load_runs(db)["status"].tolist() == ["ok"]
    assert sorted(store.load_sweeps(db)["status"]) == ["finished", "interrupted"]


def test_an_import_onto_a_full_disk_is_one_line_and_stores_nothing(
    small_disk: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = small_disk / "runs.duckdb"
    fill(small_disk)
    assert cli.main(["import", str(EXPORT), "--db", str(db)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: the disk holding {db} is full (")
    (small_disk / "filler").unlink()
    assert store.load_runs(db).empty


# --- item 6: read-only mounts and damaged schemas -----------------------------------------


@pytest.fixture
def read_only_db(tmp_path: Path) -> Iterator[Path]:
    """A current, empty database seen through a read-only bind mount."""
    source, view = tmp_path / "source", tmp_path / "view"
    source.mkdir()
    view.mkdir()
    database.ensure_database(source / "runs.duckdb")
    mount("--bind", str(source), str(view))
    try:
        mount("-o", "remount,ro,bind", str(view))
        yield view / "runs.duckdb"
    finally:
        subprocess.run(["umount", "-l", str(view)], check=False)


@pytest.mark.parametrize(
    "command",
    [SWEEP, ["calibrate", "--grid", "--framework", "torch", "--quiet", "--no-fit"]],
    ids=["sweep", "calibrate"],
)
def test_a_database_on_a_read_only_mount_is_refused_in_one_line(
    read_only_db: Path, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    before = digest(read_only_db)
    assert cli.main([*command, "--db", str(read_only_db)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [
        f"error: database {read_only_db} is on a read-only file system, so a sweep cannot "
        "write to it (nothing was changed); copy it to a folder you can write and point "
        "--db or MEMPLAN_DB at the copy"
    ]
    assert digest(read_only_db) == before
    assert sorted(p.name for p in read_only_db.parent.iterdir()) == ["runs.duckdb"]


def test_a_database_this_user_cannot_write_is_refused_before_the_sweep_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Root writes through any mode, so unwritable is what os.access says (as a mount would).
    db = database.ensure_database(tmp_path / "runs.duckdb")
    monkeypatch.setattr("os.access", lambda path, mode: Path(path) != db)
    assert cli.main([*SWEEP, "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: database {db} or its folder is not writable, so a sweep")
    assert not (tmp_path / "runs.duckdb.sweep.lock").exists()


@pytest.mark.parametrize(
    "command",
    [["list"], ["machines"], ["export", "out.parquet"], ["import", str(EXPORT)], SWEEP],
    ids=["list", "machines", "export", "import", "sweep"],
)
def test_a_current_database_missing_a_column_is_named_not_a_binder_error(
    tmp_path: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    db = database.ensure_database(tmp_path / "runs.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute("ALTER TABLE runs DROP COLUMN hostname")
    before = digest(db)
    monkeypatch.chdir(tmp_path)
    assert cli.main([*command, "--db", str(db)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: database {db} says schema version {SCHEMA_VERSION} but lacks runs.hostname: "
        "it was changed outside memplan and nothing reads or writes it; restore it from a "
        "backup, or point "
        "--db or MEMPLAN_DB at another database"
    ]
    assert digest(db) == before
