"""`memplan` as a user runs it: a real subprocess, exit codes and exact messages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from core import database

REPO = Path(__file__).resolve().parents[2]


def modeling(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "memplan", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_help_lists_every_command_and_sizing_question() -> None:
    top = modeling("--help")
    size = modeling("size", "--help")

    assert top.returncode == 0 and size.returncode == 0
    assert "evaluate" in top.stdout and "size" in top.stdout
    for question in ("image", "batch", "buy"):
        assert question in size.stdout
    # Each start imports scikit-learn, xgboost and gplearn: check one question's own help.
    assert modeling("size", "buy", "--help").stdout.startswith("usage: memplan size buy")


def test_sizing_on_an_empty_database_is_one_error_line_with_the_next_step(tmp_path) -> None:
    # A missing one is created from the bundled runs, as the dashboard creates it (issue 42
    # point 2); one that exists and holds nothing names the command that loads them.
    db = tmp_path / "empty.duckdb"
    database.ensure_database(db)

    result = modeling("size", "buy", "--image-size", "144", "--batch-size", "2", "--db", str(db))

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"error: {db} holds no unet3d runs: `memplan import --bundled --db {db}` loads the "
        "bundled measurements (data/REFERENCE.md), or measure this machine with `memplan "
        "calibrate --workload unet3d`\n"
    )
