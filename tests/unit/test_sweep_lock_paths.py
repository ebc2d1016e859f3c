"""Issue 27, finding 5: one lock per database file, never through a link, never a folder.

Before, ``--db a.duckdb`` and ``--db link-to-a.duckdb`` swept at once (two rows
per point), a ``<db>.sweep.lock`` that was a symbolic link had its target
truncated (the victim was left empty), and a lock that was a directory gave a
traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import database
from memplan import cli
from profiling import sweeplock
from tests.unit.test_sweep_safety import hold_in_another_process

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "a.duckdb")


def test_two_names_of_one_database_share_one_lock(db: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-a.duckdb"
    link.symlink_to(db)
    (tmp_path / "folder-link").symlink_to(tmp_path, target_is_directory=True)
    other = hold_in_another_process(db)
    try:
        for name in (link, tmp_path / "folder-link" / "a.duckdb", tmp_path / "." / "a.duckdb"):
            assert sweeplock.lock_path(name) == sweeplock.lock_path(db)
            assert sweeplock.holder(name).pid == other.pid
            busy = pytest.raises(sweeplock.SweepBusyError, match=f"pid {other.pid}")
            with busy, sweeplock.hold(name, "mine"):
                pass
    finally:
        other.kill()
        other.wait()


def test_the_cli_refuses_a_sweep_through_a_link_while_one_runs(db: Path, tmp_path: Path) -> None:
    link = tmp_path / "link-to-a.duckdb"
    link.symlink_to(db)
    other = hold_in_another_process(db)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "memplan", "sweep", "--image-sizes", "16",
             "--batch-sizes", "1", "--quiet", "--db", str(link)],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    finally:
        other.kill()
        other.wait()
    assert done.returncode == 2, done.stderr
    assert f"another sweep is already writing to link-to-a.duckdb (pid {other.pid}" in done.stderr


def test_a_lock_that_is_a_symbolic_link_is_never_followed(db: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    sweeplock.lock_path(db).symlink_to(victim)
    refused = pytest.raises(sweeplock.LockFileError, match="is a symbolic link, which memplan")
    with refused, sweeplock.hold(db, "mine"):
        pass
    assert victim.read_text() == "precious"  # before: empty
    assert sweeplock.holder(db) is None


def test_a_lock_that_is_a_directory_is_one_line_exit_2(db: Path, capsys) -> None:
    sweeplock.lock_path(db).mkdir()
    code = cli.main(
        ["sweep", "--image-sizes", "16", "--batch-sizes", "1", "--quiet", "--db", str(db)]
    )
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert "\n" not in err and "Traceback" not in err
    assert f"the sweep lock {sweeplock.lock_path(db)} is a directory, not a file" in err
    assert "rm -ri" in err


@pytest.mark.parametrize("kind", ["fifo", "hard link"])
def test_a_lock_that_is_not_a_plain_file_of_its_own_is_refused(db: Path, tmp_path, kind) -> None:
    path = sweeplock.lock_path(db)
    if kind == "fifo":
        os.mkfifo(path)
        reason = "is not a file"
    else:
        victim = tmp_path / "victim.txt"
        victim.write_text("precious")
        os.link(victim, path)
        reason = "has other names"
    with pytest.raises(sweeplock.LockFileError, match=reason), sweeplock.hold(db, "mine"):
        pass
    assert sweeplock.holder(db) is None  # and a reader never blocks on a FIFO
    if kind != "fifo":
        assert victim.read_text() == "precious"
