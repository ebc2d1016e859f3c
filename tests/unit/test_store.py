"""The DuckDB store: schema, short-lived connections, writes and the reads the UI needs."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from core import database, profiles, schema, store
from core.errors import StoreError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, RunRecord, Sample
from core.schema import RESULT_TABLES
from profiling import exchange

# Python code for a second process that holds the write lock until told to stop.
HOLD_LOCK = """
import sys, time, duckdb
con = duckdb.connect(sys.argv[1])
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
con.close()
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "memplan.duckdb"


def test_a_new_database_has_the_schema_version_and_empty_tables(db):
    database.ensure_database(db)
    with duckdb.connect(str(db), read_only=True) as con:
        version = con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        tables = {row[0] for row in con.execute("SHOW TABLES").fetchall()}
    assert version == (str(schema.SCHEMA_VERSION),)
    assert tables == {"meta", "sweeps", "runs", "samples", *RESULT_TABLES}
    assert store.load_runs(db).empty


def test_runs_columns_follow_run_record_order_and_types(db):
    database.ensure_database(db)
    with duckdb.connect(str(db), read_only=True) as con:
        described = con.execute("DESCRIBE runs").fetchall()
    names = tuple(row[0] for row in described)
    types = {row[0]: row[1] for row in described}
    nulls = {row[0]: row[2] for row in described}
    assert names == RUN_COLUMNS
    assert names.index("workload") == names.index("message") + 1
    assert types["run_id"] == "VARCHAR" and nulls["run_id"] == "NO"
    assert types["workload"] == "VARCHAR" and nulls["workload"] == "NO"
    assert types["depth"] == "BIGINT"
    # Columns only some workloads use may be NULL; those every workload uses may not.
    for name in ("depth", "base_filters", "levels", "upsampling"):
        assert nulls[name] == "YES"
    for name in ("height", "width", "batch_size", "in_channels", "classes", "precision"):
        assert nulls[name] == "NO"
    assert types["wall_s"] == "DOUBLE" and nulls["wall_s"] == "YES"
    assert types["onednn_enabled"] == "BOOLEAN"
    assert nulls["sweep_id"] == "YES" and nulls["memory_target"] == "NO"
    # The host facts a GPU run measured outside memplan did not record (`core.targets`);
    # an import requires them of every host-RAM run (`core.target_checks`).
    assert nulls["hostname"] == "YES" and nulls["total_ram_bytes"] == "YES"


def test_a_new_database_leaves_no_temporary_files_behind(db):
    database.ensure_database(db)
    assert [path.name for path in db.parent.iterdir()] == [db.name]


def test_opening_a_database_of_a_newer_schema_version_names_both_versions(db):
    database.ensure_database(db)
    with duckdb.connect(str(db)) as con:
        con.execute(
            "UPDATE meta SET value = ? WHERE key = 'schema_version'",
            [str(newer := schema.SCHEMA_VERSION + 1)],
        )
    expected = f"schema version {newer}, newer than this memplan's {schema.SCHEMA_VERSION}; upgrade"
    with pytest.raises(StoreError, match=expected):
        store.load_runs(db)
    with pytest.raises(StoreError, match=expected):
        database.ensure_database(db)


def test_opening_a_duckdb_file_that_is_not_memplans_is_refused(db):
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE other (x INTEGER)")
    with pytest.raises(StoreError, match="is not a memplan database"):
        store.load_runs(db)


def test_default_path_is_the_repository_data_folder_not_the_working_directory(
    tmp_path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    assert database.default_db_path() == Path(store.__file__).resolve().parent.parent / (
        "data/memplan.duckdb"
    )


def test_default_path_follows_memplan_db(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMPLAN_DB", str(tmp_path / "elsewhere.duckdb"))
    assert database.default_db_path() == tmp_path / "elsewhere.duckdb"


ALEXNET_COLUMNS = {
    "workload": "alexnet",
    "depth": None,
    "height": 224,
    "width": 224,
    "base_filters": None,
    "levels": None,
    "upsampling": None,
    "in_channels": 3,
    "classes": 1000,
}


def test_the_default_database_starts_with_every_bundled_export(tmp_path, monkeypatch, make_record):
    source = tmp_path / "source.duckdb"
    store.insert_run(source, make_record(run_id="reference-1", timeline=5))
    store.insert_run(source, make_record(run_id="alexnet-1", timeline=2, **ALEXNET_COLUMNS))
    exports = []
    for workload in ("unet3d", "alexnet"):
        runs, samples = tmp_path / f"{workload}.parquet", tmp_path / f"{workload}-s.parquet"
        exchange.export_runs(source, runs, samples, workload=workload)
        exports.append((runs, samples))
    monkeypatch.setattr(database, "BUNDLED_EXPORTS", tuple(exports))
    repository_db = tmp_path / "data" / "memplan.duckdb"
    monkeypatch.setattr(database, "REPOSITORY_DB", repository_db)

    assert database.default_db_path() == repository_db
    assert sorted(store.load_runs(repository_db)["run_id"]) == ["alexnet-1", "reference-1"]
    assert len(store.load_samples(repository_db)) == 7
    # Any other new database starts empty.
    assert store.load_runs(tmp_path / "other.duckdb").empty


def test_a_new_file_named_by_memplan_db_starts_empty_like_one_named_by_db(
    tmp_path, monkeypatch, make_record
):
    # Probe 11: MEMPLAN_DB=new.duckdb used to be filled with the bundled runs, --db not.
    source = tmp_path / "source.duckdb"
    store.insert_run(source, make_record(run_id="reference-1", timeline=2))
    exchange.export_runs(source, tmp_path / "runs.parquet", tmp_path / "samples.parquet")
    bundled = ((tmp_path / "runs.parquet", tmp_path / "samples.parquet"),)
    monkeypatch.setattr(database, "BUNDLED_EXPORTS", bundled)
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "data" / "memplan.duckdb")
    by_env = tmp_path / "by-env.duckdb"
    monkeypatch.setenv("MEMPLAN_DB", str(by_env))

    assert store.load_runs(database.ensure_database(database.default_db_path())).empty
    assert store.load_runs(database.ensure_database(tmp_path / "by-flag.duckdb")).empty
    # Named either way, the repository's own database is the one that starts filled.
    monkeypatch.setenv("MEMPLAN_DB", str(tmp_path / "data" / "memplan.duckdb"))
    assert list(store.load_runs(database.default_db_path())["run_id"]) == ["reference-1"]


def test_insert_run_stores_the_row_and_its_timeline(db, make_record):
    record = make_record(timeline=3, sweep_id="s1", estimate_bytes=None, wall_s=None)
    store.insert_run(db, record)

    assert RunRecord(**store.get_run(db, record.run_id)) == record
    runs = store.load_runs(db)
    assert tuple(runs.columns) == RUN_COLUMNS
    samples = store.load_samples(db)
    assert tuple(samples.columns) == SAMPLE_COLUMNS
    assert list(samples["rss_bytes"]) == [sample.rss_bytes for sample in record.samples]
    assert list(samples["t_s"]) == [sample.t_s for sample in record.samples]


def test_insert_run_refuses_a_stored_run_id_and_keeps_the_first(db, make_record):
    first = make_record(run_id="same", message="first", timeline=2)
    store.insert_run(db, first)
    with pytest.raises(StoreError, match="run 'same' is already stored"):
        store.insert_run(db, make_record(run_id="same", message="second", timeline=4))
    assert list(store.load_runs(db)["message"]) == ["first"]
    assert len(store.load_samples(db)) == 2


def test_insert_run_stores_nothing_when_its_timeline_cannot_be_stored(db, make_record):
    # 2**70 bytes does not fit BIGINT, so the samples insert fails after the run row.
    record = make_record(samples=(Sample(t_s=0.0, rss_bytes=2**70),))
    with pytest.raises(OverflowError):
        store.insert_run(db, record)
    assert store.load_runs(db).empty
    assert store.load_samples(db).empty


def test_insert_runs_stores_every_run_in_one_connection(db, make_record, monkeypatch):
    records = [make_record(run_id=f"run-{n}", timeline=n) for n in (1, 2, 3)]
    opened = []
    real = store.transaction
    monkeypatch.setattr(store, "transaction", lambda path: opened.append(path) or real(path))

    store.insert_runs(db, records)

    assert opened == [db]
    assert [RunRecord(**store.get_run(db, r.run_id)) for r in records] == records
    assert len(store.load_samples(db)) == 1 + 2 + 3


def test_insert_runs_stores_none_when_one_is_refused(db, make_record):
    store.insert_run(db, make_record(run_id="same", message="first", timeline=2))
    batch = [make_record(run_id="new", timeline=3), make_record(run_id="same", timeline=4)]

    with pytest.raises(StoreError, match="run 'same' is already stored .* none of the 2 runs"):
        store.insert_runs(db, batch)

    assert list(store.load_runs(db)["run_id"]) == ["same"]
    assert len(store.load_samples(db)) == 2


def test_load_runs_filters_by_sweep_status_and_hostname(db, make_record):
    store.insert_run(db, make_record(run_id="a", sweep_id="s1", status="ok", hostname="h1"))
    store.insert_run(db, make_record(run_id="b", sweep_id="s1", status="oom", hostname="h1"))
    store.insert_run(db, make_record(run_id="c", sweep_id="s2", status="ok", hostname="h2"))

    assert list(store.load_runs(db, store.RunFilter(sweep_id="s1"))["run_id"]) == ["a", "b"]
    assert list(store.load_runs(db, store.RunFilter(status="ok"))["run_id"]) == ["a", "c"]
    assert list(
        store.load_runs(db, store.RunFilter(sweep_id="s1", status="ok", hostname="h1"))["run_id"]
    ) == ["a"]
    assert store.load_runs(db, store.RunFilter(hostname="nowhere")).empty


def test_load_samples_of_chosen_runs_in_time_order(db, make_record):
    store.insert_run(db, make_record(run_id="a", timeline=3))
    store.insert_run(db, make_record(run_id="b", timeline=2))

    samples = store.load_samples(db, ["b"])
    assert list(samples["run_id"]) == ["b", "b"]
    assert list(samples["t_s"]) == sorted(samples["t_s"])
    assert len(store.load_samples(db)) == 5
    assert store.load_samples(db, []).empty


def test_a_sweep_is_created_running_and_updated_until_finished(db):
    store.create_sweep(db, "s1", "memplan sweep --sizes 16", {"sizes": [16, 32]}, points_total=2)
    sweep = store.load_sweeps(db).iloc[0]
    assert (sweep["status"], sweep["points_done"], sweep["points_total"]) == ("running", 0, 2)
    assert sweep["grid_json"] == '{"sizes": [16, 32]}'
    assert pd.isna(sweep["finished_at"])

    store.update_sweep(db, "s1", points_done=1)
    store.update_sweep(db, "s1", status="done", points_done=2, finished=True)
    sweep = store.load_sweeps(db).iloc[0]
    assert (sweep["status"], sweep["points_done"]) == ("done", 2)
    assert isinstance(sweep["finished_at"], str)


def test_creating_a_sweep_twice_is_refused(db):
    store.create_sweep(db, "s1", "memplan sweep", {}, points_total=1)
    with pytest.raises(StoreError, match="sweep 's1' already exists"):
        store.create_sweep(db, "s1", "memplan sweep", {}, points_total=1)


def test_updating_an_unknown_sweep_is_refused(db):
    with pytest.raises(StoreError, match="no sweep 'missing'"):
        store.update_sweep(db, "missing", status="done")


def test_get_run_finds_a_run_by_a_unique_prefix(db, make_record):
    store.insert_run(db, make_record(run_id="abc123"))
    store.insert_run(db, make_record(run_id="abd456"))

    assert store.get_run(db, "abc")["run_id"] == "abc123"
    with pytest.raises(StoreError, match="'ab' is ambiguous: it matches abc123, abd456"):
        store.get_run(db, "ab")
    with pytest.raises(StoreError, match="no run id starts with 'zz'"):
        store.get_run(db, "zz")


def test_point_key_is_the_same_for_a_record_and_its_stored_row(db, make_record):
    record = make_record()
    store.insert_run(db, record)
    assert store.point_key(record) == store.point_key(store.get_run(db, record.run_id))
    assert store.point_key(record) == (
        "unet3d",
        16,
        16,
        16,
        1,
        16,
        5,
        1,
        1,
        "float32",
        "transpose",
        3,
    )


def test_a_run_of_a_workload_without_the_unet_columns_stores_them_as_null(db, make_record):
    # An AlexNet run: height, width, batch, channels, classes, precision; no depth or U-Net knobs.
    record = make_record(
        workload="alexnet",
        depth=None,
        height=224,
        width=224,
        batch_size=4,
        base_filters=None,
        levels=None,
        in_channels=3,
        classes=1000,
        upsampling=None,
        timeline=2,
    )
    store.insert_run(db, record)

    assert RunRecord(**store.get_run(db, record.run_id)) == record
    assert store.point_key(store.get_run(db, record.run_id)) == (
        "alexnet",
        None,
        224,
        224,
        4,
        None,
        None,
        3,
        1000,
        "float32",
        None,
        3,
    )
    assert list(store.load_runs(db, store.RunFilter(workload="alexnet"))["run_id"]) == [
        record.run_id
    ]
    assert store.load_runs(db, store.RunFilter(workload="unet3d")).empty


# Two different VMs that are both called "vm": what a hostname cannot tell apart.
INTEL_VM = {
    "hostname": "vm",
    "cpu_vendor": "Intel",
    "cpu_model": "Intel(R) Xeon(R) Processor @ 2.20GHz",
    "cpu_isa": "avx512",
    "cpu_cores": 2,
    "usable_cores": 2,
    "intra_op_threads": 2,
}
AMD_VM = INTEL_VM | {
    "cpu_vendor": "AMD",
    "cpu_model": "AMD EPYC 9B14 96-Core Processor",
    "cpu_isa": "avx2",
}


def _profile_key(record: RunRecord) -> str:
    return profiles.profile_of(record.row()).key


def test_the_same_shape_in_two_workloads_is_two_points(db, make_record):
    unet = make_record(**INTEL_VM)
    other = make_record(
        workload="alexnet", depth=None, base_filters=None, levels=None, upsampling=None, **INTEL_VM
    )
    store.insert_run(db, unet)
    store.insert_run(db, other)

    counts = store.completed_points(db, _profile_key(unet))
    assert counts == {store.point_key(unet): 1, store.point_key(other): 1}


def test_completed_points_count_only_this_profile_and_finished_statuses(db, make_record):
    done = make_record(**INTEL_VM)
    here = _profile_key(done)
    store.insert_run(db, done)
    store.insert_run(db, make_record(repeat=1, status="oom", **INTEL_VM))
    store.insert_run(db, make_record(repeat=2, status="timeout", **INTEL_VM))
    store.insert_run(db, make_record(**INTEL_VM | {"hostname": "elsewhere"}))  # same profile
    store.insert_run(db, make_record(tensorflow_version="2.15.0", **INTEL_VM))
    store.insert_run(db, make_record(depth=32, **INTEL_VM))

    counts = store.completed_points(db, here)
    assert counts[store.point_key(done)] == 3
    assert counts[store.point_key(make_record(depth=32))] == 1
    assert sum(counts.values()) == 4
    assert store.completed_points(db, here, statuses=("timeout",)) == {store.point_key(done): 1}
    assert store.completed_points(db, here, statuses=()) == {}


def test_a_point_measured_on_one_vm_is_not_done_on_another_vm_of_the_same_name(db, make_record):
    intel = make_record(**INTEL_VM)
    store.insert_run(db, intel)

    amd = _profile_key(make_record(**AMD_VM))
    assert store.completed_points(db, amd) == {}
    assert store.completed_points(db, _profile_key(intel)) == {store.point_key(intel): 1}
    # Any fact of the profile counts: the same VM with oneDNN off is another profile.
    assert (
        store.completed_points(db, _profile_key(make_record(**INTEL_VM, onednn_enabled=False)))
        == {}
    )


def test_runs_of_an_older_schema_never_count_for_a_machine_that_records_every_fact(db, make_record):
    # Measured before schema 3: no vendor, instruction set, usable cores or threads.
    older = make_record(
        **INTEL_VM
        | {"cpu_vendor": None, "cpu_isa": None, "usable_cores": None, "intra_op_threads": None}
    )
    store.insert_run(db, older)

    assert store.completed_points(db, _profile_key(make_record(**INTEL_VM))) == {}
    assert store.completed_points(db, _profile_key(older)) == {store.point_key(older): 1}


def test_load_runs_keeps_only_the_runs_of_a_machine_profile(db, make_record):
    store.insert_run(db, make_record(run_id="intel-1", status="ok", **INTEL_VM))
    store.insert_run(db, make_record(run_id="amd-1", status="ok", **AMD_VM))
    store.insert_run(db, make_record(run_id="intel-2", status="oom", **INTEL_VM))
    intel = _profile_key(make_record(**INTEL_VM))

    assert list(store.load_runs(db, store.RunFilter(machine=intel))["run_id"]) == [
        "intel-1",
        "intel-2",
    ]
    assert list(store.load_runs(db, store.RunFilter(machine=intel, status="oom"))["run_id"]) == [
        "intel-2"
    ]
    assert list(
        store.load_runs(db, store.RunFilter(machine=_profile_key(make_record(**AMD_VM))))["run_id"]
    ) == ["amd-1"]
    assert list(store.load_runs(db, store.RunFilter(hostname="vm"))["run_id"]) == [
        "amd-1",
        "intel-1",
        "intel-2",
    ]
    nowhere = store.load_runs(db, store.RunFilter(machine="0000000000"))
    assert nowhere.empty and tuple(nowhere.columns) == RUN_COLUMNS


def _hold_lock(db: Path, seconds: float) -> subprocess.Popen[str]:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(db), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
    return holder


def test_a_lock_held_past_the_timeout_is_reported_with_what_to_do(db, monkeypatch):
    database.ensure_database(db)
    monkeypatch.setenv("MEMPLAN_LOCK_TIMEOUT_S", "0.3")
    holder = _hold_lock(db, 30)
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match="is locked by another process .*when the sweep"):
            store.load_runs(db)
        assert time.monotonic() - started < 5
    finally:
        holder.terminate()
        holder.wait()


def test_a_reader_waits_for_a_lock_that_is_released(db, make_record):
    store.insert_run(db, make_record(run_id="a"))
    holder = _hold_lock(db, 0.5)
    try:
        assert list(store.load_runs(db)["run_id"]) == ["a"]
    finally:
        holder.wait()


def test_a_lock_timeout_that_is_not_a_number_is_refused(db, monkeypatch):
    monkeypatch.setenv("MEMPLAN_LOCK_TIMEOUT_S", "soon")
    with pytest.raises(StoreError, match="MEMPLAN_LOCK_TIMEOUT_S='soon' is not a number"):
        store.load_runs(db)
