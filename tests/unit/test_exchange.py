"""Export and import: exact round trips, and bad files refused whole with the problem named."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import datafiles, schema, store
from core.errors import DataFileError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS
from core.schema import SCHEMA_VERSION, added_since
from profiling import exchange

SAMPLES_PER_RUN = 4

# A schema version no memplan has written yet.
NEWER = SCHEMA_VERSION + 1


@pytest.fixture(scope="module")
def source(tmp_path_factory, make_record) -> Path:
    """A database with runs that exercise every awkward value a file must carry exactly.

    Shared by the tests of this module, which only read it.
    """
    path = tmp_path_factory.mktemp("source") / "source.duckdb"
    records = [
        make_record(run_id="r1", sweep_id="s1", message="", timeline=SAMPLES_PER_RUN),
        make_record(
            run_id="r2",
            sweep_id="s1",
            status="oom",
            message='killed, "OOM"\nsecond line — ünïcode',
            # Odd and near the largest plausible peak (64 TiB): stored exactly, never as a float.
            peak_sampled_bytes=64 * 2**40 - 1,
            wall_s=0.1 + 0.2,
            onednn_enabled=False,
            timeline=SAMPLES_PER_RUN,
        ),
        make_record(
            run_id="r3",
            sweep_id=None,
            status="error",
            message="import failed",
            estimate_bytes=None,
            peak_sampled_bytes=None,
            peak_hwm_bytes=None,
            baseline_bytes=None,
            wall_s=None,
            step_times_s="[]",
            step_hwm_bytes="[]",
        ),
        # Another workload: its rows leave the U-Net-only columns NULL.
        make_record(
            run_id="r4",
            sweep_id="s2",
            workload="alexnet",
            depth=None,
            height=224,
            width=200,
            batch_size=8,
            base_filters=None,
            levels=None,
            in_channels=3,
            classes=1000,
            upsampling=None,
            timeline=SAMPLES_PER_RUN,
        ),
    ]
    store.insert_runs(path, records)
    return path


@pytest.fixture
def db(tmp_path, make_record) -> Path:
    """The database imported into; it already holds one run that no bad file may disturb."""
    path = tmp_path / "memplan.duckdb"
    store.insert_run(path, make_record(run_id="stored", timeline=2))
    return path


def _assert_unchanged(db: Path) -> None:
    assert list(store.load_runs(db)["run_id"]) == ["stored"]
    assert len(store.load_samples(db)) == 2


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("with_timelines", [True, False])
def test_export_then_import_into_a_new_database_is_exact(tmp_path, source, suffix, with_timelines):
    runs_file = tmp_path / f"runs{suffix}"
    samples_file = tmp_path / f"samples{suffix}" if with_timelines else None
    target = tmp_path / "target.duckdb"

    assert exchange.export_runs(source, runs_file, samples_file) == 4
    assert exchange.import_runs(target, runs_file, samples_file) == 4

    pd.testing.assert_frame_equal(store.load_runs(target), store.load_runs(source))
    if with_timelines:
        pd.testing.assert_frame_equal(store.load_samples(target), store.load_samples(source))
    else:
        assert store.load_samples(target).empty


def test_exported_files_have_the_table_columns_in_order_and_their_schema_version(tmp_path, source):
    exchange.export_runs(source, tmp_path / "runs.csv", tmp_path / "samples.parquet")
    exchange.export_runs(source, tmp_path / "runs.parquet", tmp_path / "samples.csv")

    # CSV has no metadata: the version is a last column, the same on every row.
    runs_csv = pd.read_csv(tmp_path / "runs.csv", keep_default_na=False, dtype=str)
    assert tuple(runs_csv.columns) == (*RUN_COLUMNS, "schema_version")
    assert set(runs_csv["schema_version"]) == {str(schema.SCHEMA_VERSION)}
    samples_csv = pd.read_csv(tmp_path / "samples.csv", dtype=str)
    assert tuple(samples_csv.columns) == (*SAMPLE_COLUMNS, "schema_version")
    # Parquet carries it in the file's metadata.
    for name, columns in (("runs", RUN_COLUMNS), ("samples", SAMPLE_COLUMNS)):
        parquet = pq.read_table(tmp_path / f"{name}.parquet")
        assert tuple(parquet.column_names) == columns
        assert (
            parquet.schema.metadata[b"memplan_schema_version"]
            == str(schema.SCHEMA_VERSION).encode()
        )


def test_export_of_one_sweep_holds_only_its_runs_and_timelines(tmp_path, source):
    runs_file, samples_file = tmp_path / "runs.parquet", tmp_path / "samples.parquet"
    assert exchange.export_runs(source, runs_file, samples_file, sweep_id="s1") == 2
    assert pq.read_table(runs_file).column("run_id").to_pylist() == ["r1", "r2"]
    assert set(pq.read_table(samples_file).column("run_id").to_pylist()) == {"r1", "r2"}


def test_export_leaves_only_the_finished_files(tmp_path, source):
    out = tmp_path / "out"
    exchange.export_runs(source, out / "runs.csv", out / "samples.csv")
    assert sorted(path.name for path in out.iterdir()) == ["runs.csv", "samples.csv"]


def test_export_refuses_an_unknown_format_and_writes_nothing(tmp_path, source):
    with pytest.raises(DataFileError, match=r"unsupported file type '\.xlsx'; use one of .csv"):
        exchange.export_runs(source, tmp_path / "runs.csv", tmp_path / "samples.xlsx")
    assert not (tmp_path / "runs.csv").exists()


def test_import_accepts_a_csv_written_by_pandas(tmp_path, db, make_record):
    records = [make_record(run_id="p1"), make_record(run_id="p2", estimate_bytes=None)]
    # pandas writes True/False and, for a whole-number column with a gap, "5.0".
    pd.DataFrame([record.row() for record in records]).to_csv(tmp_path / "p.csv", index=False)

    assert exchange.import_runs(db, tmp_path / "p.csv") == 2
    stored = store.get_run(db, "p2")
    assert stored["estimate_bytes"] is None and stored["onednn_enabled"] is True
    assert store.get_run(db, "p1")["estimate_bytes"] == records[0].estimate_bytes


def _as_schema_1(row: dict) -> dict:
    """A runs row as memplan before schema 2 wrote it: without the columns added since."""
    return {name: value for name, value in row.items() if name not in added_since("runs", 1)}


def test_a_file_without_workload_or_version_is_read_as_schema_1_unet_runs(
    tmp_path, db, make_record
):
    # What pandas (or memplan before schema 2) writes for U-Net runs: no workload column.
    row = _as_schema_1(make_record(run_id="old").row())
    pd.DataFrame([row]).to_csv(tmp_path / "old.csv", index=False)

    assert exchange.import_runs(db, tmp_path / "old.csv") == 1
    assert store.get_run(db, "old")["workload"] == "unet3d"


def test_a_schema_1_file_must_have_the_schema_1_columns(tmp_path, db, make_record):
    row = _as_schema_1(make_record(run_id="old").row())
    del row["wall_s"]
    pd.DataFrame([row]).to_csv(tmp_path / "old.csv", index=False)

    expected = (
        r"missing columns: wall_s\. The file \(of schema version 1\) needs exactly these "
        r"columns: run_id, .*, message, depth,"
    )
    with pytest.raises(DataFileError, match=expected):
        exchange.import_runs(db, tmp_path / "old.csv")
    _assert_unchanged(db)


@pytest.fixture(scope="module")
def good_csv(tmp_path_factory, source) -> dict[str, pd.DataFrame]:
    """The source exported to CSV and read back as text, ready to be spoiled one way."""
    folder = tmp_path_factory.mktemp("good")
    exchange.export_runs(source, folder / "runs.csv", folder / "samples.csv")
    read = {"dtype": str, "keep_default_na": False}
    return {name: pd.read_csv(folder / f"{name}.csv", **read) for name in ("runs", "samples")}


def _set(row: int, column: str, value: str) -> Callable[[pd.DataFrame], pd.DataFrame]:
    def change(frame: pd.DataFrame) -> pd.DataFrame:
        frame.loc[row, column] = value
        return frame

    return change


# (which file, change to the exported CSV, the exact problem the error must name)
BAD_CSV_CASES = {
    "missing_column": ("runs", lambda f: f.drop(columns=["wall_s"]), "missing columns: wall_s"),
    "extra_column": ("runs", lambda f: f.assign(gpu="A100"), "extra columns: gpu"),
    "text_for_a_number": (
        "runs",
        _set(1, "depth", "deep"),
        "column depth, row 2: 'deep' is not a whole number",
    ),
    "fraction_for_a_whole_number": (
        "runs",
        _set(0, "steps", "2.5"),
        "column steps, row 1: '2.5' is not a whole number",
    ),
    "bad_boolean": (
        "runs",
        _set(2, "onednn_enabled", "yes"),
        "column onednn_enabled, row 3: 'yes' is not true or false",
    ),
    "empty_where_a_value_is_required": (
        "runs",
        _set(0, "cpu_cores", ""),
        "row 1: cpu_cores is empty; it needs a whole number",
    ),
    "unknown_status": (
        "runs",
        _set(0, "status", "crashed"),
        "column status, row 1: 'crashed' is not one of ok, oom, timeout, error, skipped, "
        "interrupted, killed",
    ),
    "unknown_framework": (
        "runs",
        _set(0, "framework", "jax"),
        "column framework, row 1: 'jax' is not one of tensorflow, torch",
    ),
    "negative_memory": (
        "runs",
        _set(1, "peak_hwm_bytes", "-5"),
        "column peak_hwm_bytes, row 2: -5 is negative",
    ),
    "negative_time": ("runs", _set(0, "wall_s", "-1.5"), "column wall_s, row 1: -1.5 is negative"),
    "invalid_workload": (
        "runs",
        _set(0, "depth", "200"),
        "row 1 (run r1) is not a valid workload: image side 200 cannot be trained by a "
        "5-level U-Net",
    ),
    "duplicate_run_id": (
        "runs",
        _set(1, "run_id", "r1"),
        "run_id 'r1' appears twice (rows 1 and 2)",
    ),
    "step_times_not_a_json_list": (
        "runs",
        _set(0, "step_times_s", "0.5, 0.4"),
        "column step_times_s, row 1: '0.5, 0.4' is not a JSON list of seconds (finite numbers, "
        "0 or more), e.g. [0.5, 0.42] or []",
    ),
    "step_hwm_not_a_json_list": (
        "runs",
        _set(0, "step_hwm_bytes", '{"step": 1}'),
        "column step_hwm_bytes, row 1: '{\"step\": 1}' is not a JSON list of bytes (whole numbers "
        "from 0 to 70368744177664, i.e. 64.00 TiB)",
    ),
    "samples_of_a_run_not_imported": (
        "samples",
        _set(0, "run_id", "ghost"),
        "row 1: run_id 'ghost' is not among the runs being imported",
    ),
    "negative_sample_time": (
        "samples",
        _set(3, "t_s", "-0.1"),
        "column t_s, row 4: -0.1 is negative",
    ),
    "negative_resident_memory": (
        "samples",
        _set(0, "rss_bytes", "-1"),
        "column rss_bytes, row 1: -1 is negative",
    ),
    "samples_missing_a_column": (
        "samples",
        lambda f: f.drop(columns=["t_s"]),
        "missing columns: t_s",
    ),
    "unknown_workload": (
        "runs",
        _set(0, "workload", "resnet"),
        "column workload, row 1: unknown workload 'resnet'; known: unet3d, alexnet",
    ),
    "unet_without_a_depth": (
        "runs",
        _set(1, "depth", ""),
        "row 2 (run r2): depth is empty; workload unet3d needs depth, height, width, batch_size, "
        "base_filters, levels, in_channels, classes, precision, upsampling",
    ),
    "unet_columns_filled_for_another_workload": (
        "runs",
        _set(0, "workload", "alexnet"),
        "row 1 (run r1): depth, base_filters, levels, upsampling must be empty for workload "
        "alexnet, which has no such setting",
    ),
    "invalid_alexnet": (
        "runs",
        _set(3, "height", "32"),
        "row 4 (run r4) is not a valid workload: image side 32 is too small for AlexNet",
    ),
    "export_of_a_newer_memplan": (
        "runs",
        lambda f: f.assign(schema_version=str(NEWER)),
        f"runs.csv was exported with schema version {NEWER}, newer than this memplan's "
        f"{SCHEMA_VERSION}; upgrade "
        "memplan to import it",
    ),
    "timelines_of_a_newer_memplan": (
        "samples",
        lambda f: f.assign(schema_version=str(NEWER)),
        f"samples.csv was exported with schema version {NEWER}, newer than this memplan's "
        f"{SCHEMA_VERSION}",
    ),
    "two_versions_in_one_file": (
        "runs",
        _set(1, "schema_version", "1"),
        f"column schema_version holds several versions (1, {SCHEMA_VERSION}); an export has one",
    ),
    "a_version_that_is_not_a_number": (
        "runs",
        lambda f: f.assign(schema_version="two"),
        "column schema_version: 'two' is not a schema version",
    ),
}


@pytest.mark.parametrize("case", list(BAD_CSV_CASES))
def test_import_refuses_a_bad_csv_naming_the_problem_and_stores_nothing(
    tmp_path, good_csv, db, case
):
    which, change, problem = BAD_CSV_CASES[case]
    frames = {name: frame.copy() for name, frame in good_csv.items()}
    frames[which] = change(frames[which])
    for name, frame in frames.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)

    with pytest.raises(DataFileError, match=re.escape(problem)):
        exchange.import_runs(db, tmp_path / "runs.csv", tmp_path / "samples.csv")
    _assert_unchanged(db)


def test_import_refuses_a_parquet_export_of_a_newer_memplan(tmp_path, source, db):
    runs = _exported_parquet(tmp_path, source)
    newer = runs.replace_schema_metadata({"memplan_schema_version": str(NEWER)})
    pq.write_table(newer, tmp_path / "runs.parquet")

    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, tmp_path / "runs.parquet")
    assert str(refused.value) == (
        f"{tmp_path / 'runs.parquet'} was exported with schema version {NEWER}, newer than "
        f"this memplan's {SCHEMA_VERSION}; upgrade memplan to import it"
    )
    _assert_unchanged(db)


def test_reading_an_export_gives_rows_of_the_current_schema(tmp_path, source):
    exchange.export_runs(source, tmp_path / "runs.csv", tmp_path / "samples.csv")

    runs = datafiles.read_runs(tmp_path / "runs.csv")
    assert runs.schema == schema.RUNS_ARROW_SCHEMA
    samples = datafiles.read_samples(tmp_path / "samples.csv", set(runs["run_id"].to_pylist()))
    assert samples.schema == schema.SAMPLES_ARROW_SCHEMA


def _exported_parquet(tmp_path: Path, source: Path) -> pa.Table:
    exchange.export_runs(source, tmp_path / "good.parquet")
    return pq.read_table(tmp_path / "good.parquet")


def test_import_refuses_a_parquet_column_of_the_wrong_type(tmp_path, source, db):
    runs = _exported_parquet(tmp_path, source)
    index = runs.column_names.index("levels")
    runs = runs.set_column(index, "levels", pa.array(["5", "five", "5", None], pa.string()))
    pq.write_table(runs, tmp_path / "runs.parquet")

    with pytest.raises(DataFileError, match="column levels, row 2: 'five' is not a whole number"):
        exchange.import_runs(db, tmp_path / "runs.parquet")
    _assert_unchanged(db)


def test_import_refuses_null_where_a_run_record_needs_a_value(tmp_path, source, db):
    runs = _exported_parquet(tmp_path, source)
    index = runs.column_names.index("hostname")
    runs = runs.set_column(index, "hostname", pa.array(["h", None, "h", "h"], pa.string()))
    pq.write_table(runs, tmp_path / "runs.parquet")

    with pytest.raises(DataFileError, match="row 2: hostname is empty; it needs text"):
        exchange.import_runs(db, tmp_path / "runs.parquet")
    _assert_unchanged(db)


def test_import_refuses_runs_already_stored_and_imports_none_of_the_file(tmp_path, db, make_record):
    other = tmp_path / "other.duckdb"
    store.insert_run(other, make_record(run_id="new"))
    store.insert_run(other, make_record(run_id="stored"))
    exchange.export_runs(other, tmp_path / "runs.parquet")

    with pytest.raises(
        DataFileError, match=r"1 run\(s\) already stored in .* \(stored\); nothing was imported"
    ):
        exchange.import_runs(db, tmp_path / "runs.parquet")
    _assert_unchanged(db)


def test_import_refuses_a_file_it_cannot_read(tmp_path, db):
    (tmp_path / "runs.parquet").write_bytes(b"not a parquet file")
    with pytest.raises(DataFileError, match=r"cannot read .*runs\.parquet as PARQUET"):
        exchange.import_runs(db, tmp_path / "runs.parquet")
    _assert_unchanged(db)


def test_import_refuses_a_missing_file(tmp_path, db):
    with pytest.raises(DataFileError, match="does not exist or is not a file"):
        exchange.import_runs(db, tmp_path / "nowhere.csv")


def test_import_refuses_an_unknown_format(tmp_path, db):
    (tmp_path / "runs.json").write_text("[]")
    with pytest.raises(DataFileError, match=r"unsupported file type '\.json'; use one of .csv"):
        exchange.import_runs(db, tmp_path / "runs.json")
    _assert_unchanged(db)
