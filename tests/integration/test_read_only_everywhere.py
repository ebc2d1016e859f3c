"""Issue 27, finding 6: MEMPLAN_READ_ONLY holds for every `memplan` command, and
a MEMPLAN_DB that cannot be written gives one line and exit 2.

Before, ``list`` created a database file and ``import`` wrote a row with
MEMPLAN_READ_ONLY=1; ``MEMPLAN_DB=/sys/x.duckdb`` gave ``_duckdb.IOException`` and
``/proc/nope/x.duckdb`` a FileNotFoundError traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import database, store
from memplan import cli
from profiling import exchange
from tests.conftest import build_record

REPO = Path(__file__).resolve().parents[2]


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
        for path in sorted(folder.rglob("*"))
    }


@pytest.fixture
def stocked(tmp_path: Path) -> tuple[Path, Path]:
    """A database with one run, and an export of another run to import."""
    folder = tmp_path / "data"
    folder.mkdir()
    db = database.ensure_database(folder / "runs.duckdb")
    store.insert_run(db, build_record(timeline=2))
    other = database.ensure_database(tmp_path / "other.duckdb")
    store.insert_run(other, build_record(timeline=2))
    export = tmp_path / "export.csv"
    exchange.export_runs(other, export, None)
    return db, export


def _commands(export: Path, out: Path) -> list[list[str]]:
    tiny = ["--image-size", "16", "--batch-size", "1", "--base-filters", "4", "--steps", "2"]
    sweep = ["--image-sizes", "16", "--batch-sizes", "1", "--base-filters", "4", "--steps", "2"]
    return [
        ["list"],
        ["summary"],
        ["machines"],
        ["machines", "--compare"],
        ["show", "nope"],
        ["export", str(out)],
        ["import", str(export)],
        ["run", *tiny],
        ["sweep", *sweep, "--quiet"],
        ["calibrate", "--quiet", "--no-fit"],
    ]


def test_every_command_writes_nothing_under_read_only(stocked, tmp_path, monkeypatch, capsys):
    db, export = stocked
    monkeypatch.setenv("MEMPLAN_READ_ONLY", "1")
    before = _snapshot(db.parent)
    results = {}
    for command in _commands(export, tmp_path / "out.csv"):
        code = cli.main([*command, "--db", str(db)])
        err = capsys.readouterr().err.strip()
        results[command[0] + (" --compare" if "--compare" in command else "")] = (code, err)
        assert _snapshot(db.parent) == before, command  # no byte, no mtime, no new file
    for name in ("import", "run", "sweep", "calibrate"):
        code, err = results[name]
        assert code == 2 and "\n" not in err, (name, err)
        assert "MEMPLAN_READ_ONLY is set, so nothing is written to" in err, (name, err)
    for name in ("list", "summary", "machines", "machines --compare", "export"):
        assert results[name][0] == 0, (name, results[name])
    assert (tmp_path / "out.csv").exists()  # the file asked for, and nothing else
    assert len(store.load_runs(db)) == 1


def test_a_missing_database_is_not_created_under_read_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MEMPLAN_READ_ONLY", "1")
    for command in (["list"], ["summary"], ["machines"]):
        missing = tmp_path / "missing.duckdb"
        assert cli.main([*command, "--db", str(missing)]) == 2
        err = capsys.readouterr().err.strip()
        assert "does not exist, and MEMPLAN_READ_ONLY is set, so none is created" in err
        assert list(tmp_path.iterdir()) == []  # before: `list` created the file


@pytest.mark.parametrize("where", ["/sys/x.duckdb", "/proc/nope/x.duckdb"])
def test_an_unwritable_memplan_db_is_one_line_and_exit_2(where: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "memplan", "list"],
        cwd=REPO,
        env={**os.environ, "MEMPLAN_DB": where},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"error: cannot create database {where}: ")
    assert "point MEMPLAN_DB or --db at a file in a folder you can write" in line
