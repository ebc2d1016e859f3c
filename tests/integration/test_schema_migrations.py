"""What the previous release left on disk still opens: schema-1 databases and exports.

The fixtures in tests/fixtures/schema1/ were written by memplan 256831b (schema 1)
with its own code (see the README there). Every test copies what it changes to
tmp_path first, so the fixtures themselves are never written to.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from core import database, schema, store
from core.errors import DataFileError, StoreError
from modeling.errors import ModelingError
from modeling.stored import bundle
from modeling.stored import tables as results
from profiling import cli, exchange

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "schema1"
SCHEMA1_DB = FIXTURES / "memplan.duckdb"
# What the fixture database holds (tests/fixtures/schema1/README.md).
FIXTURE_ROWS = {
    "meta": 1,
    "sweeps": 2,
    "runs": 6,
    "samples": 23,
    "evaluations": 1,
    "scores": 6,
    "predictions": 9,
    "models": 3,
}
# The columns schema 2 added, and the value every migrated row gets.
ADDED = {"runs": "workload", "evaluations": "workload"}


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    """A private copy of the schema-1 database."""
    return Path(shutil.copy(SCHEMA1_DB, tmp_path / "memplan.duckdb"))


def _tables(db: Path) -> dict[str, pd.DataFrame]:
    """Every table, rows in stored order, read without memplan (and without writing)."""
    with duckdb.connect(str(db), read_only=True) as con:
        names = {row[0] for row in con.execute("SHOW TABLES").fetchall()}
        return {
            name: con.execute(f"SELECT * FROM {name} ORDER BY rowid").df()
            for name in schema.TABLES
            if name in names
        }


def _columns(db: Path) -> dict[str, list[tuple]]:
    """Each table's DESCRIBE: names, types, NULL-ability and keys, in order."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {name: con.execute(f"DESCRIBE {name}").fetchall() for name in schema.TABLES}


def _version(db: Path) -> str:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0]


def _file_state(db: Path) -> tuple[bytes, int, list[str]]:
    return db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())


# --- databases --------------------------------------------------------------------------


def test_there_is_one_migration_per_version_step_up_to_the_current_one() -> None:
    assert [m.from_version for m in schema.MIGRATIONS] == list(range(1, schema.SCHEMA_VERSION))
    assert [m.to_version for m in schema.migrations_from(1)] == [2]
    assert schema.migrations_from(schema.SCHEMA_VERSION) == ()


def test_the_fixture_is_a_small_schema_1_database() -> None:
    assert _version(SCHEMA1_DB) == "1"
    assert {name: len(rows) for name, rows in _tables(SCHEMA1_DB).items()} == FIXTURE_ROWS


def test_a_schema_1_database_is_migrated_keeping_every_row_and_value(old_db: Path) -> None:
    before = _tables(old_db)

    database.ensure_database(old_db)

    after = _tables(old_db)
    assert _version(old_db) == str(schema.SCHEMA_VERSION) == "2"
    for name in schema.TABLES:
        migrated = after[name]
        if name in ADDED:
            assert set(migrated[ADDED[name]]) == {"unet3d"}
            migrated = migrated.drop(columns=[ADDED[name]])
        if name == "meta":
            continue  # only the version changed (checked above)
        pd.testing.assert_frame_equal(migrated, before[name], check_dtype=False)
    # The stored models are byte for byte the same pickles.
    assert list(after["models"]["estimator"]) == list(before["models"]["estimator"])


def test_a_migrated_database_has_exactly_the_schema_of_a_new_one(old_db: Path, tmp_path) -> None:
    database.ensure_database(old_db)
    new = database.ensure_database(tmp_path / "new.duckdb")

    assert _columns(old_db) == _columns(new)
    described = dict((row[0], row) for row in _columns(old_db)["runs"])
    assert list(described).index("workload") == list(described).index("message") + 1


def test_migrated_runs_read_back_as_unet_runs(old_db: Path) -> None:
    database.ensure_database(old_db)

    runs = store.load_runs(old_db)
    assert len(runs) == 6 and set(runs["workload"]) == {"unet3d"}
    assert list(store.load_runs(old_db, status="ok", workload="unet3d")["run_id"]) == [
        "v1-ok-32-b1",
        "v1-ok-32-b2",
        "v1-ok-48-b1",
        "v1-ok-64-b1",
    ]
    run = store.get_run(old_db, "v1-ok-48")
    assert run["message"] == 'warm, "quoted"\nsecond line: ünïcode'
    assert store.point_key(run) == ("unet3d", 48, 48, 48, 1, 16, 5, 1, 1, "float32", "transpose", 3)
    assert len(store.load_samples(old_db, ["v1-ok-48-b1"])) == 5
    assert list(store.load_sweeps(old_db)["status"]) == ["done", "interrupted"]


def test_a_schema_1_databases_results_load_but_its_pickled_models_are_refused(
    old_db: Path,
) -> None:
    database.ensure_database(old_db)

    evaluation = results.load_evaluations(old_db).iloc[0]
    assert (evaluation["workload"], evaluation["n_runs"]) == ("unet3d", 4)
    assert len(results.load_scores(old_db)) == 6
    assert len(results.load_predictions(old_db)) == 9
    # 256831b stored its models as pickles; loading one can run any code, so none is
    # loaded: the message names the model and the command that refits them as data.
    with pytest.raises(ModelingError) as refused:
        results.load_predictors(old_db)
    assert str(refused.value).startswith(
        f"stored model 'paper' in {old_db} is refused, nothing of it was run: it is a pickle"
    )
    assert f"Re-run `python -m modeling evaluate --db {old_db}` to refit" in str(refused.value)
    with pytest.raises(ModelingError, match="stored model 'paper' .* is refused"):
        results.load_predictor(old_db, "refined")


def test_a_read_only_open_of_a_schema_1_database_writes_nothing(old_db: Path) -> None:
    before = _file_state(old_db)

    with pytest.raises(StoreError) as refused:
        store.load_runs(old_db)
    with pytest.raises(StoreError):
        results.load_predictors(old_db)

    assert str(refused.value) == (
        f"database {old_db} has schema version 1, older than this memplan's 2, and a read-only "
        "open never migrates it; open it once read-write to migrate it in place, e.g. "
        f"`python -m profiling list --db {old_db}`"
    )
    assert _file_state(old_db) == before
    assert _version(old_db) == "1"


def test_the_command_the_read_only_refusal_names_migrates_the_database(old_db, capsys) -> None:
    assert cli.main(["list", "--db", str(old_db)]) == 0

    assert _version(old_db) == "2"
    assert "v1-ok-32-b1" in capsys.readouterr().out
    assert len(store.load_runs(old_db)) == 6  # read-only opens work from now on


def test_any_write_migrates_first(old_db: Path, make_record) -> None:
    store.insert_run(old_db, make_record(run_id="new", timeline=2))

    assert _version(old_db) == "2"
    assert len(store.load_runs(old_db)) == 7


def test_opening_a_migrated_database_again_changes_nothing(old_db: Path) -> None:
    database.ensure_database(old_db)
    migrated = _file_state(old_db)

    database.ensure_database(old_db)
    store.load_runs(old_db)

    assert _file_state(old_db) == migrated


def test_a_failed_migration_leaves_the_database_as_it_was(old_db, monkeypatch) -> None:
    rebuild = schema._rebuild
    before = _tables(old_db)

    def failing(con, table, ddl, added):
        rebuild(con, table, ddl, added)
        if table == "evaluations":  # runs was rebuilt already
            con.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(schema, "_rebuild", failing)

    with pytest.raises(
        StoreError,
        match=r"could not migrate database .* from schema version 1 to "
        r"2: Catalog Error.*; nothing was changed",
    ):
        database.ensure_database(old_db)

    assert _version(old_db) == "1"
    after = _tables(old_db)
    assert "workload" not in after["runs"].columns
    for name in schema.TABLES:
        pd.testing.assert_frame_equal(after[name], before[name])


def test_processes_opening_an_old_database_at_once_migrate_it_once(old_db: Path) -> None:
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            database.ensure_database(old_db)
            assert len(store.load_runs(old_db)) == 6
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert _version(old_db) == "2"
    assert {name: len(rows) for name, rows in _tables(old_db).items()} == FIXTURE_ROWS


def test_a_database_of_a_newer_memplan_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = database.ensure_database(tmp_path / "future.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        con.execute("CHECKPOINT")
    before = _file_state(db)
    expected = (
        f"database {db} has schema version 99, newer than this memplan's 2; upgrade memplan "
        "to open it, or point MEMPLAN_DB at another database"
    )

    for attempt in (
        lambda: database.ensure_database(db),
        lambda: store.load_runs(db),
        lambda: store.create_sweep(db, "s1", "python -m profiling sweep", {}, points_total=1),
    ):
        with pytest.raises(StoreError) as refused:
            attempt()
        assert str(refused.value) == expected

    assert _file_state(db) == before


# --- exports ----------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_schema_1_export_imports_as_the_migrated_database_holds_it(
    tmp_path: Path, old_db: Path, suffix: str
) -> None:
    database.ensure_database(old_db)
    target = tmp_path / "target.duckdb"

    stored = exchange.import_runs(target, FIXTURES / f"runs{suffix}", FIXTURES / f"samples{suffix}")

    assert stored == 6
    pd.testing.assert_frame_equal(store.load_runs(target), store.load_runs(old_db))
    pd.testing.assert_frame_equal(store.load_samples(target), store.load_samples(old_db))


def test_an_export_claiming_a_newer_version_is_refused(tmp_path: Path) -> None:
    newer = pq.read_table(FIXTURES / "runs.parquet").replace_schema_metadata(
        {"memplan_schema_version": "3"}
    )
    pq.write_table(newer, tmp_path / "runs.parquet")
    target = tmp_path / "target.duckdb"

    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(target, tmp_path / "runs.parquet")

    assert str(refused.value) == (
        f"{tmp_path / 'runs.parquet'} was exported with schema version 3, newer than this "
        "memplan's 2; upgrade memplan to import it"
    )
    assert store.load_runs(target).empty


def test_an_older_export_gets_the_columns_newer_versions_added(monkeypatch) -> None:
    runs = pa.table({"run_id": ["a", "b"]})
    assert schema.upgrade_export("runs", runs, 1).column("workload").to_pylist() == [
        "unet3d",
        "unet3d",
    ]
    assert schema.upgrade_export("runs", runs, 2).column_names == ["run_id"]
    # A nullable column a later version adds is NULL in the rows of an older export.
    monkeypatch.setitem(schema.ADDED_COLUMNS[2], "runs", {"workload": "unet3d", "gpu": None})
    assert schema.upgrade_export("runs", runs, 1).column("gpu").to_pylist() == [None, None]
    assert schema.infer_version("runs", ["run_id", "workload"]) == 1  # no gpu column: older


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_new_export_carries_version_2_and_round_trips(
    tmp_path: Path, old_db: Path, suffix: str
) -> None:
    runs_file, samples_file = tmp_path / f"runs{suffix}", tmp_path / f"samples{suffix}"
    database.ensure_database(old_db)  # as `python -m profiling export` does first
    exchange.export_runs(old_db, runs_file, samples_file)

    if suffix == ".parquet":
        assert pq.read_metadata(runs_file).metadata[b"memplan_schema_version"] == b"2"
    else:
        assert set(pd.read_csv(runs_file)["schema_version"]) == {2}
    copy = tmp_path / "copy.duckdb"
    assert exchange.import_runs(copy, runs_file, samples_file) == 6
    pd.testing.assert_frame_equal(store.load_runs(copy), store.load_runs(old_db))
    pd.testing.assert_frame_equal(store.load_samples(copy), store.load_samples(old_db))


def test_a_schema_1_results_export_installs_as_a_unet_evaluation(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    exchange.import_runs(db, FIXTURES / "runs.parquet", FIXTURES / "samples.parquet")

    assert bundle.install_bundled_results(db, FIXTURES / "results")

    assert results.load_evaluations(db)["workload"].tolist() == ["unet3d"]
    assert results.load_evaluations(db, workload="alexnet").empty
    # Its models are 256831b's pickles: copied, but refused when loaded (never unpickled).
    with pytest.raises(ModelingError, match="stored model 'paper' .* it is a pickle"):
        results.load_predictors(db)


def test_a_results_export_carries_its_version_and_a_newer_one_is_refused(
    tmp_path: Path, old_db: Path
) -> None:
    database.ensure_database(old_db)
    exported = bundle.export_results(old_db, tmp_path / "export")
    for table in schema.RESULT_TABLES:
        assert (
            pq.read_metadata(exported / f"{table}.parquet").metadata[b"memplan_schema_version"]
            == b"2"
        )
    evaluations = pq.read_table(exported / "evaluations.parquet")
    pq.write_table(
        evaluations.replace_schema_metadata({"memplan_schema_version": "3"}),
        exported / "evaluations.parquet",
    )
    db = tmp_path / "target.duckdb"
    exchange.import_runs(db, FIXTURES / "runs.parquet", FIXTURES / "samples.parquet")

    with pytest.raises(DataFileError, match="schema version 3, newer than this memplan's 2"):
        bundle.install_bundled_results(db, exported)
    assert results.load_evaluations(db, workload=None).empty
