"""Import refuses what could not have been measured, and files too large to check in memory.

Probe 5 of the hardening issue: `profiling import` used to accept NaN and
infinite times, a 9e18-byte peak (which `summary` then showed as 4,190,951,586
GiB), negative steps, repeats and cores, an ``ok`` run with no peak or a 1-byte
peak, duplicated and NaN timeline rows; ``10**30`` ended in an OverflowError
traceback, also through the sidebar upload; and a 1 GB file was read whole with
no size check. Each case here spoils one value of a real export and asserts
the exact message: the file, the row, the value and what would be right.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import datafiles, exportfile, schema, store
from core.errors import DataFileError
from profiling import exchange
from profiling.uploads import Upload, import_uploads

SAMPLES_PER_RUN = 4
MEASURED = "bytes from 1.00 MiB to 64.00 TiB (1048576 to 70368744177664 bytes)"


@pytest.fixture(scope="module")
def exported(tmp_path_factory, make_record) -> dict[str, pd.DataFrame]:
    """A real export of three runs (two ok, one error without measurements) as CSV text."""
    folder = tmp_path_factory.mktemp("exported")
    source = folder / "source.duckdb"
    store.insert_run(source, make_record(run_id="r1", timeline=SAMPLES_PER_RUN))
    store.insert_run(source, make_record(run_id="r2", timeline=SAMPLES_PER_RUN))
    store.insert_run(
        source,
        make_record(
            run_id="r3",
            status="error",
            peak_sampled_bytes=None,
            peak_hwm_bytes=None,
            baseline_bytes=None,
            wall_s=None,
        ),
    )
    exchange.export_runs(source, folder / "runs.csv", folder / "samples.csv")
    read = {"dtype": str, "keep_default_na": False}
    return {name: pd.read_csv(folder / f"{name}.csv", **read) for name in ("runs", "samples")}


@pytest.fixture
def db(tmp_path, make_record) -> Path:
    path = tmp_path / "memplan.duckdb"
    store.insert_run(path, make_record(run_id="stored", timeline=2))
    return path


def _set(row: int, column: str, value: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row, column] = value
        return frame

    return change


def _append_copy_of(row: int) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        return pd.concat([frame, frame.iloc[[row]]], ignore_index=True)

    return change


# (file, change, the message after "<file>: ")
IMPLAUSIBLE = {
    "nan_wall_time": (
        "runs",
        _set(0, "wall_s", "nan"),
        "column wall_s, row 1: nan is not a finite number; wall_s must be seconds, 0 or more",
    ),
    "infinite_wall_time": (
        "runs",
        _set(1, "wall_s", "inf"),
        "column wall_s, row 2: inf is not a finite number; wall_s must be seconds, 0 or more",
    ),
    "infinite_timeout": (
        "runs",
        _set(0, "timeout_s", "-inf"),
        "column timeout_s, row 1: -inf is not a finite number; timeout_s must be seconds, "
        "more than 0",
    ),
    "zero_sample_interval": (
        "runs",
        _set(0, "sample_interval_s", "0"),
        "column sample_interval_s, row 1: 0.0 is too small; sample_interval_s must be "
        "seconds, more than 0",
    ),
    "a_9e18_byte_peak": (
        "runs",
        _set(0, "peak_hwm_bytes", "9000000000000000000"),
        f"column peak_hwm_bytes, row 1: 9000000000000000000 is too large; peak_hwm_bytes "
        f"must be {MEASURED}",
    ),
    "a_1_byte_peak_of_an_ok_run": (
        "runs",
        _set(1, "peak_sampled_bytes", "1"),
        f"column peak_sampled_bytes, row 2: 1 is too small; peak_sampled_bytes must be {MEASURED}",
    ),
    "more_ram_than_any_machine": (
        "runs",
        _set(0, "total_ram_bytes", str(65 * 2**40)),
        f"column total_ram_bytes, row 1: {65 * 2**40} is too large; total_ram_bytes must be "
        f"{MEASURED}",
    ),
    "negative_steps": (
        "runs",
        _set(0, "steps", "-3"),
        "column steps, row 1: -3 is negative; steps must be a whole number of at least 1",
    ),
    "zero_steps": (
        "runs",
        _set(0, "steps", "0"),
        "column steps, row 1: 0 is too small; steps must be a whole number of at least 1",
    ),
    "negative_repeat": (
        "runs",
        _set(1, "repeat", "-1"),
        "column repeat, row 2: -1 is negative; repeat must be a whole number, 0 or more",
    ),
    "negative_cores": (
        "runs",
        _set(2, "cpu_cores", "-4"),
        "column cpu_cores, row 3: -4 is negative; cpu_cores must be a whole number from 1 to 65536",
    ),
    "l3_cache_beyond_any_cpu": (
        "runs",
        _set(1, "l3_cache_bytes", str(2**40)),
        "column l3_cache_bytes, row 2: 1099511627776 is too large; l3_cache_bytes must be "
        "bytes from 1 B to 16.00 GiB (1 to 17179869184 bytes)",
    ),
    "negative_seed": (
        "runs",
        _set(0, "seed", "-1"),
        "column seed, row 1: -1 is negative; seed must be a seed from 0 to 4294967295, as "
        "NumPy and Keras take",
    ),
    "seed_beyond_numpy": (
        "runs",
        _set(0, "seed", str(2**32)),
        "column seed, row 1: 4294967296 is too large; seed must be a seed from 0 to "
        "4294967295, as NumPy and Keras take",
    ),
    "ok_without_a_peak": (
        "runs",
        _set(1, "peak_hwm_bytes", ""),
        "row 2 (run r2): status is ok but peak_hwm_bytes is empty; an ok run has "
        "peak_sampled_bytes, peak_hwm_bytes, baseline_bytes (give a run that did not measure "
        "them another status, e.g. error)",
    ),
    "ok_without_any_measurement": (
        "runs",
        _set(2, "status", "ok"),
        "row 3 (run r3): status is ok but peak_sampled_bytes, peak_hwm_bytes, baseline_bytes "
        "is empty; an ok run has peak_sampled_bytes, peak_hwm_bytes, baseline_bytes (give a "
        "run that did not measure them another status, e.g. error)",
    ),
    "nan_in_the_step_times": (
        "runs",
        _set(0, "step_times_s", "[0.5, NaN]"),
        "column step_times_s, row 1: '[0.5, NaN]' is not a JSON list of seconds (finite "
        "numbers, 0 or more), e.g. [0.5, 0.42] or []",
    ),
    "an_integer_overflow": (
        "runs",
        _set(0, "peak_hwm_bytes", str(10**30)),
        f"column peak_hwm_bytes, row 1: '{10**30}' is out of range; peak_hwm_bytes takes "
        "whole numbers from -2^63 to 2^63 - 1",
    ),
    "an_integer_overflow_in_a_count": (
        "runs",
        _set(1, "steps", str(10**30)),
        f"column steps, row 2: '{10**30}' is out of range; steps takes whole numbers from "
        "-2^63 to 2^63 - 1",
    ),
    "a_nan_sample_time": (
        "samples",
        _set(2, "t_s", "nan"),
        "column t_s, row 3: nan is not a finite number; t_s must be seconds since the run "
        "started, 0 or more",
    ),
    "an_infinite_sample_time": (
        "samples",
        _set(5, "t_s", "inf"),
        "column t_s, row 6: inf is not a finite number; t_s must be seconds since the run "
        "started, 0 or more",
    ),
    "a_9e18_byte_sample": (
        "samples",
        _set(1, "rss_bytes", "9000000000000000000"),
        "column rss_bytes, row 2: 9000000000000000000 is too large; rss_bytes must be bytes "
        "from 0 to 64.00 TiB (0 to 70368744177664 bytes)",
    ),
    "an_integer_overflow_in_a_sample": (
        "samples",
        _set(0, "rss_bytes", str(10**30)),
        f"column rss_bytes, row 1: '{10**30}' is out of range; rss_bytes takes whole numbers "
        "from -2^63 to 2^63 - 1",
    ),
    "a_duplicated_sample": (
        "samples",
        _append_copy_of(5),
        "rows 6 and 9 are both a sample at t_s 0.1 of the same run; a timeline has one "
        "sample per run and time",
    ),
    "two_samples_at_one_time": (
        "samples",
        _set(3, "t_s", "0.1"),
        "rows 2 and 4 are both a sample at t_s 0.1 of the same run; a timeline has one "
        "sample per run and time",
    ),
}


def _write(tmp_path: Path, exported, which: str, change) -> tuple[Path, Path]:
    frames = {name: frame.copy() for name, frame in exported.items()}
    frames[which] = change(frames[which])
    for name, frame in frames.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    return tmp_path / "runs.csv", tmp_path / "samples.csv"


def _assert_unchanged(db: Path) -> None:
    assert list(store.load_runs(db)["run_id"]) == ["stored"]
    assert len(store.load_samples(db)) == 2


def test_the_unspoiled_export_imports(tmp_path, exported, db):
    runs, samples = _write(tmp_path, exported, "runs", lambda frame: frame)
    assert exchange.import_runs(db, runs, samples) == 3


@pytest.mark.parametrize("case", list(IMPLAUSIBLE))
def test_import_refuses_an_implausible_value_naming_row_value_and_range(
    tmp_path, exported, db, case
):
    which, change, problem = IMPLAUSIBLE[case]
    runs, samples = _write(tmp_path, exported, which, change)

    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, runs, samples)
    assert str(refused.value) == f"{tmp_path / f'{which}.csv'}: {problem}"
    _assert_unchanged(db)


def test_a_parquet_with_an_unsigned_overflow_is_refused_cleanly(tmp_path, exported, db):
    runs_csv, _ = _write(tmp_path, exported, "runs", lambda frame: frame)
    runs = datafiles.read_runs(runs_csv)
    index = runs.column_names.index("peak_hwm_bytes")
    overflowing = pa.array([2**64 - 1, 2**30, None], pa.uint64())
    pq.write_table(runs.set_column(index, "peak_hwm_bytes", overflowing), tmp_path / "runs.parquet")
    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, tmp_path / "runs.parquet")
    assert str(refused.value) == (
        f"{tmp_path / 'runs.parquet'}: column peak_hwm_bytes, row 1: {2**64 - 1} is out of "
        "range; peak_hwm_bytes takes whole numbers from -2^63 to 2^63 - 1"
    )
    _assert_unchanged(db)


def test_a_parquet_timeline_with_nan_and_repeats_is_refused(tmp_path, exported, db):
    runs, _ = _write(tmp_path, exported, "runs", lambda frame: frame)
    samples = pa.table(
        {
            "run_id": ["r1", "r1", "r2", "r1"],
            "t_s": [0.0, 0.1, 0.0, 0.1],
            "rss_bytes": [2**20, 2**21, 2**20, 2**21],
        }
    )
    pq.write_table(samples, tmp_path / "samples.parquet")
    with pytest.raises(DataFileError, match="rows 2 and 4 are both a sample at t_s 0.1"):
        exchange.import_runs(db, runs, tmp_path / "samples.parquet")

    pq.write_table(
        samples.set_column(1, "t_s", pa.array([0.0, float("nan"), 0.0, 0.2])),
        tmp_path / "samples.parquet",
    )
    with pytest.raises(DataFileError, match="column t_s, row 2: nan is not a finite number"):
        exchange.import_runs(db, runs, tmp_path / "samples.parquet")
    _assert_unchanged(db)


# --- sizes ---------------------------------------------------------------------------------


def _sparse(path: Path, size: int) -> Path:
    """A file of ``size`` bytes that takes no disk space: a header and a hole."""
    with path.open("wb") as file:
        file.write(b"run_id,t_s,rss_bytes\n")
        file.truncate(size)
    return path


@pytest.mark.parametrize(("table", "limit"), [("runs", "64.00 MiB"), ("samples", "1.00 GiB")])
def test_a_file_above_the_size_limit_is_refused_before_it_is_read(tmp_path, db, table, limit):
    size = exportfile.MAX_FILE_BYTES[table] + 1
    big = _sparse(tmp_path / f"{table}.csv", size)
    runs, samples = (big, None) if table == "runs" else (tmp_path / "runs.csv", big)
    started = time.monotonic()
    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, runs, samples) if table == "runs" else datafiles.read_samples(
            big, {"r1"}
        )
    assert time.monotonic() - started < 1.0
    assert str(refused.value) == (
        f"{big} is {limit} ({size:,} bytes), more than the {limit} a {table} file may have; "
        "export and import "
        "it in parts, e.g. one sweep at a time (`memplan export --sweep ID`)"
    )


def test_a_file_with_more_rows_than_the_limit_is_refused(tmp_path, exported, monkeypatch):
    monkeypatch.setitem(exportfile.MAX_ROWS, "samples", 5)
    monkeypatch.setattr(exportfile, "BATCH_ROWS", 2)
    _, samples = _write(tmp_path, exported, "runs", lambda frame: frame)
    for path in (samples, tmp_path / "samples.parquet"):
        exported["samples"].astype({"t_s": float, "rss_bytes": int}).to_parquet(
            tmp_path / "samples.parquet", index=False
        )
        with pytest.raises(DataFileError) as refused:
            datafiles.read_samples(path, {"r1", "r2"})
        assert str(refused.value) == (
            f"{path} holds more than 5 rows, the most a samples file may have; export and "
            "import it in parts, e.g. one sweep at a time (`memplan export "
            "--sweep ID`)"
        )


def test_a_large_timeline_is_read_in_batches_and_typed(tmp_path, make_record, monkeypatch):
    # Many batches, an unordered file: the same checks hold across batch boundaries.
    monkeypatch.setattr(exportfile, "BATCH_ROWS", 1000)
    rows = 10_000
    samples = pd.DataFrame(
        {
            "run_id": ["a", "b"] * (rows // 2),
            "t_s": [index // 2 * 0.05 for index in range(rows)],
            "rss_bytes": [2**20 + index for index in range(rows)],
        }
    )
    samples.to_csv(tmp_path / "samples.csv", index=False)
    table = datafiles.read_samples(tmp_path / "samples.csv", {"a", "b"})
    assert table.num_rows == rows and table.schema == schema.SAMPLES_ARROW_SCHEMA

    samples.loc[rows - 1, "t_s"] = samples.loc[1, "t_s"]  # run b again at its first time
    samples.to_csv(tmp_path / "samples.csv", index=False)
    with pytest.raises(DataFileError, match=f"rows 2 and {rows} are both a sample at t_s 0.0 "):
        datafiles.read_samples(tmp_path / "samples.csv", {"a", "b"})


# --- the sidebar's upload: the same checks and limits --------------------------------------


def test_an_upload_with_an_integer_overflow_is_refused_naming_the_upload(tmp_path, exported, db):
    runs, _ = _write(tmp_path, exported, "runs", _set(0, "peak_hwm_bytes", str(10**30)))
    with pytest.raises(DataFileError) as refused:
        import_uploads(db, Upload("my runs.csv", runs.read_bytes()))
    assert str(refused.value) == (
        f"my runs.csv: column peak_hwm_bytes, row 1: '{10**30}' is out of range; "
        "peak_hwm_bytes takes whole numbers from -2^63 to 2^63 - 1"
    )
    _assert_unchanged(db)


def test_an_implausible_upload_is_refused_like_an_import(tmp_path, exported, db):
    runs, samples = _write(tmp_path, exported, "samples", _set(2, "t_s", "nan"))
    with pytest.raises(DataFileError) as refused:
        import_uploads(
            db,
            Upload("runs.csv", runs.read_bytes()),
            Upload("timelines.csv", samples.read_bytes()),
        )
    assert str(refused.value).startswith("timelines.csv: column t_s, row 3: nan is not a finite")
    _assert_unchanged(db)


def test_an_upload_above_the_size_limit_is_refused_before_it_is_written(tmp_path, db, monkeypatch):
    monkeypatch.setitem(exportfile.MAX_FILE_BYTES, "samples", 1000)
    with pytest.raises(DataFileError) as refused:
        import_uploads(db, Upload("runs.csv", b"x"), Upload("timelines.csv", b"x" * 1001))
    assert str(refused.value).startswith(
        "timelines.csv is 1001 B (1,001 bytes), more than the 1000 B a samples file may have"
    )
    _assert_unchanged(db)
