"""Issue 27, finding 7: a half-truncated database is refused by `list` and `summary` too.

Before, `list` and `summary` answered from the blocks a truncated file still
had (exit 0, 223 runs of a file cut to half) while `size` and `sweep`, which
reach the missing blocks, refused it. Now every open compares the file's
length with the blocks DuckDB's header counts (`core.dbopen.check_length`).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core import database, dbopen, store
from memplan import cli
from profiling import exchange

DATA = Path(__file__).resolve().parents[2] / "data"


@pytest.fixture(scope="module")
def full_db(tmp_path_factory) -> Path:
    db = database.ensure_database(tmp_path_factory.mktemp("full") / "runs.duckdb")
    exchange.import_runs(db, DATA / "reference_runs.parquet", DATA / "reference_samples.parquet")
    return db


@pytest.mark.parametrize("share", [0.5, 0.9, 0.99])
@pytest.mark.parametrize("command", ["list", "summary"])
def test_a_truncated_database_is_refused_by_list_and_summary(
    full_db: Path, tmp_path: Path, capsys, share: float, command: str
) -> None:
    cut = tmp_path / "cut.duckdb"
    data = full_db.read_bytes()
    cut.write_bytes(data[: int(len(data) * share)])

    code = cli.main([command, "--db", str(cut)])

    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert f"{cut} is not a readable DuckDB database (the file has " in err
    assert "it was truncated); restore it from a backup" in err
    assert cut.stat().st_size == int(len(data) * share)  # nothing written to it


def test_a_whole_database_still_opens(full_db: Path, capsys) -> None:
    assert cli.main(["list", "--db", str(full_db)]) == 0
    assert f"{len(store.load_runs(full_db))} run(s)" in capsys.readouterr().out
    assert os.path.getsize(full_db) >= dbopen.HEADER_BYTES
