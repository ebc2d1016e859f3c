"""Text an import stores is bounded, and run ids are ones a person can tell apart.

Issue 38, items 2 and 8: a 24.5 KB zstd Parquet holding one 300 MB ``message``
was imported (peak 2.1 GiB, and every later reader paid for it); a 100,000-character
run id was accepted; ``Case1``/``case1`` and ``ws1``/``ws1 `` were stored as four
different runs. Every import path refuses them with one line naming the column,
the row and the limit, and stores nothing: a file import (CSV, Parquet), the
dashboard's upload (the same path) and a sweep's pending record
(`core.datafiles.check_record`).
"""

from __future__ import annotations

import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import datafiles, exportfile, store
from core.errors import DataFileError
from profiling import exchange
from profiling.uploads import Upload, import_uploads
from tests.conftest import build_record


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "memplan.duckdb"
    store.insert_run(path, build_record(run_id="stored"))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> pa.Table:
    """Two real runs, r1 and r2, as an export reads them."""
    folder = tmp_path_factory.mktemp("runs")
    for run_id in ("r1", "r2"):
        store.insert_run(folder / "source.duckdb", build_record(run_id=run_id))
    exchange.export_runs(folder / "source.duckdb", folder / "runs.parquet")
    return datafiles.read_runs(folder / "runs.parquet")


def _with(runs: pa.Table, column: str, row: int, value: str) -> pa.Table:
    values = runs.column(column).to_pylist()
    values[row - 1] = value
    return runs.set_column(runs.column_names.index(column), column, pa.array(values, pa.string()))


def _refusal(db: Path, runs_file: Path) -> str:
    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, runs_file)
    assert store.load_runs(db)["run_id"].tolist() == ["stored"]
    return str(refused.value)


LONG_TEXT = {
    "message": (65_537, "65,537 characters, more than the 65,536"),
    "run_id": (100_000, "100,000 characters, more than the 128"),
    "hostname": (1025, "1,025 characters, more than the 1,024"),
    "cpu_model": (5000, "5,000 characters, more than the 1,024"),
}


@pytest.mark.parametrize("column", list(LONG_TEXT))
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_text_longer_than_its_limit_is_refused_naming_column_row_and_limit(
    tmp_path, runs, db, column, suffix
):
    length, words = LONG_TEXT[column]
    spoiled = _with(runs, column, 2, "x" * length)
    path = tmp_path / f"runs{suffix}"
    if suffix == ".csv":
        spoiled.to_pandas().to_csv(path, index=False)
    else:
        pq.write_table(spoiled, path)
    assert _refusal(db, path) == f"{path}: column {column}, row 2: {words} a {column} may have"


def test_a_zstd_parquet_bomb_is_refused_from_its_metadata_before_a_page_is_read(
    tmp_path, runs, db, monkeypatch
):
    # 32 MiB of message in a file of a few KB: refused from the column sizes alone.
    bomb = tmp_path / "bomb.parquet"
    pq.write_table(_with(runs, "message", 1, "x" * 32 * 2**20), bomb, compression="zstd")
    assert bomb.stat().st_size < 100_000

    def read(*args, **kwargs):
        raise AssertionError("a page of the bomb was read")

    monkeypatch.setattr(exportfile.ExportFile, "batches", read)
    started = time.monotonic()
    refused = _refusal(db, bomb)
    assert time.monotonic() - started < 5.0
    assert refused == (
        f"{bomb}: column message decompresses to 32.00 MiB (33,554,4"
        + refused.split("(33,554,4")[1].split(" bytes")[0]
        + " bytes), more than 2 row(s) can hold; a message may have at most 65,536 characters"
    )


def test_a_parquet_that_decompresses_past_the_file_limit_is_refused(
    tmp_path, runs, db, monkeypatch
):
    monkeypatch.setitem(exportfile.MAX_DECOMPRESSED_BYTES, "runs", 100)
    path = tmp_path / "runs.parquet"
    pq.write_table(runs, path, compression="zstd")
    refused = _refusal(db, path)
    assert refused.startswith(f"{path} decompresses to ")
    assert "more than the 100 B a runs file may; export and import it in parts" in refused


def test_an_upload_with_a_long_message_is_refused_like_an_import(tmp_path, runs, db):
    path = tmp_path / "runs.csv"
    _with(runs, "message", 1, "x" * 70_000).to_pandas().to_csv(path, index=False)
    with pytest.raises(DataFileError) as refused:
        import_uploads(db, Upload("my runs.csv", path.read_bytes()))
    assert str(refused.value) == (
        "my runs.csv: column message, row 1: 70,000 characters, more than the 65,536 a "
        "message may have"
    )


# --- run ids --------------------------------------------------------------------------------

BAD_IDS = {
    "trailing_blank": (
        "r2 ",
        "row 2: run_id 'r2 ' has a control character or a blank at either end; a run id is "
        "printable text without leading or trailing blanks",
    ),
    "escape": (
        "r2\x1b[2J",
        "row 2: run_id 'r2\\x1b[2J' has a control character or a blank at either end; a run id "
        "is printable text without leading or trailing blanks",
    ),
    "right_to_left_override": ("r\u202e2", "row 2: run_id 'r\\u202e2' has a control character"),
    "case_of_another": (
        "R1",
        "run_id 'R1' and 'r1' differ only in case (rows 1 and 2); each run must appear once, "
        "and run ids are compared ignoring case",
    ),
}


@pytest.mark.parametrize("case", list(BAD_IDS))
def test_a_run_id_with_blanks_controls_or_another_ids_case_is_refused(tmp_path, runs, db, case):
    run_id, words = BAD_IDS[case]
    path = tmp_path / "runs.parquet"
    pq.write_table(_with(runs, "run_id", 2, run_id), path)
    assert _refusal(db, path).startswith(f"{path}: {words}")


def test_a_run_id_stored_in_another_case_is_refused(tmp_path, runs, db):
    path = tmp_path / "runs.parquet"
    pq.write_table(_with(runs, "run_id", 2, "STORED"), path)
    assert _refusal(db, path) == (
        f"{path}: 1 run(s) already stored in {db} (stored); nothing was imported. Remove those "
        "rows from the file to import the rest (run ids are compared ignoring case)"
    )


def test_a_pending_record_is_held_to_the_same_limits(tmp_path):
    row = build_record().row()
    with pytest.raises(DataFileError, match="column message, row 1: 70,000 characters"):
        datafiles.check_record(tmp_path / "p.json", {**row, "message": "m" * 70_000}, [])
    with pytest.raises(DataFileError, match="run_id 'ws1 ' has a control character or a blank"):
        datafiles.check_record(tmp_path / "p.json", {**row, "run_id": "ws1 "}, [])
