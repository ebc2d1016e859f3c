"""What earlier releases left on disk still opens: schema-1 to -8 databases and exports.

The fixtures in tests/fixtures/schema1/ were written by memplan 256831b (schema 1),
those in tests/fixtures/schema2/ by memplan 99b704d (schema 2), those in
tests/fixtures/schema3/ by memplan 82bb04d (schema 3) and those in
tests/fixtures/schema4/ by memplan fabaf94 (schema 4), those in
tests/fixtures/schema5/ by memplan 9c1906c (schema 5) and those in
tests/fixtures/schema6/ by memplan 8c5ac2b (schema 6) and those in
tests/fixtures/schema7/ by memplan 0bc34a1 (schema 7) and those in
tests/fixtures/schema8/ by memplan 87f3837 (schema 8), each with its own code
(see the README in each). Every test copies what it changes to tmp_path
first, so the fixtures themselves are never written to.
"""

from __future__ import annotations

import dataclasses
import shutil
import threading
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from application import bundles, stored
from core import database, migrations, profiles, schema, store
from core.errors import DataFileError, StoreError
from memplan import cli
from modeling.errors import ModelingError
from modeling.features import measured_frame
from modeling.stored import tables as results
from profiling import exchange
from tests.conftest import built_once

FIXTURES_DIR = Path(__file__).resolve().parents[1] / "fixtures"
# A fixture generation is kept small enough to live in the repository.
FIXTURE_MAX_BYTES = 500_000
# The facts schema 3 added to runs; no older run recorded them.
MACHINE_COLUMNS = ("cpu_vendor", "cpu_isa", "usable_cores", "intra_op_threads")
# The Slurm job schema 4 added to runs, at the end of the table; no older run recorded it.
SLURM_COLUMNS = ("slurm_job_id", "slurm_cpus_per_task")
# The L3 cache schema 5 added to runs, after them; no older run recorded it.
CACHE_COLUMNS = ("l3_cache_bytes",)
# What schema 6 added to evaluations: the step count of the runs it fit, the runs it left out.
STEPS_COLUMNS = ("steps", "other_steps_json")
# The CPU generation schema 7 added to runs, at the end of the table; no older run recorded it.
GENERATION_COLUMNS = ("cpu_family", "cpu_model_number", "cpu_stepping")
# The framework schema 8 added to runs, after them: every older run trained with TensorFlow.
FRAMEWORK_COLUMNS = ("framework", "framework_version", "torch_intra_op_threads")
# What schema 9 added to runs, after them: the memory measured, a GPU's facts and figures.
TARGET_COLUMNS = (
    "memory_target",
    "gpu_name",
    "gpu_total_bytes",
    "gpu_compute_capability",
    "gpu_driver",
    "cuda_version",
    "cudnn_version",
    "alloc_conf",
    "allocated_peak_bytes",
    "reserved_peak_bytes",
    "nvml_used_peak_bytes",
    "context_bytes",
)
# Every fixture's runs trained for 3 steps (the test helper's default at each release).
FIXTURE_STEPS = 3


@dataclass(frozen=True)
class Generation:
    """The fixtures one release wrote, and what they hold (see their README)."""

    version: int
    rows: dict[str, int]
    run_ids: tuple[str, ...]  # in load_runs order

    @property
    def directory(self) -> Path:
        return FIXTURES_DIR / f"schema{self.version}"

    @property
    def db(self) -> Path:
        return self.directory / "memplan.duckdb"


SCHEMA1 = Generation(
    version=1,
    rows={
        "meta": 1,
        "sweeps": 2,
        "runs": 6,
        "samples": 23,
        "evaluations": 1,
        "scores": 6,
        "predictions": 9,
        "models": 3,
    },
    run_ids=(
        "v1-ok-32-b1",
        "v1-ok-32-b2",
        "v1-ok-48-b1",
        "v1-ok-64-b1",
        "v1-oom-144-b16",
        "v1-skip-160-b16",
    ),
)
SCHEMA2 = Generation(
    version=2,
    rows={
        "meta": 1,
        "sweeps": 2,
        "runs": 8,
        "samples": 33,
        "evaluations": 1,
        "scores": 6,
        "predictions": 9,
        "models": 3,
    },
    run_ids=(
        "v2-unet-32-b1",
        "v2-unet-32-b2",
        "v2-unet-48-b1",
        "v2-unet-64-b1",
        "v2-unet-144-b16",
        "v2-alex-67-b1",
        "v2-alex-96-b2",
        "v2-alex-224-b512",
    ),
)
SCHEMA3 = Generation(
    version=3,
    rows={
        "meta": 1,
        "sweeps": 2,
        "runs": 8,
        "samples": 33,
        "evaluations": 1,
        "scores": 6,
        "predictions": 9,
        "models": 3,
    },
    run_ids=(
        "v3-unet-32-b1",
        "v3-unet-32-b2",
        "v3-unet-48-b1",
        "v3-unet-64-b1",
        "v3-unet-144-b16",
        "v3-alex-67-b1",
        "v3-alex-96-b2",
        "v3-alex-224-b512",
    ),
)
# fabaf94 wrote the schema-3 fixtures' runs again, renamed, two of them with Slurm jobs.
SCHEMA4 = Generation(
    version=4,
    rows=SCHEMA3.rows,
    run_ids=tuple(run_id.replace("v3-", "v4-") for run_id in SCHEMA3.run_ids),
)
# 9c1906c wrote the schema-4 fixtures' runs again, renamed, the Intel VM's with an L3 cache.
SCHEMA5 = Generation(
    version=5,
    rows=SCHEMA3.rows,
    run_ids=tuple(run_id.replace("v3-", "v5-") for run_id in SCHEMA3.run_ids),
)
# 8c5ac2b wrote the schema-5 fixtures' runs again, renamed, and an evaluation with its steps.
SCHEMA6 = Generation(
    version=6,
    rows=SCHEMA3.rows,
    run_ids=tuple(run_id.replace("v3-", "v6-") for run_id in SCHEMA3.run_ids),
)
# 0bc34a1 wrote the schema-6 fixtures' runs again, renamed, the Intel VM's with its CPU generation.
SCHEMA7 = Generation(
    version=7,
    rows=SCHEMA3.rows,
    run_ids=tuple(run_id.replace("v3-", "v7-") for run_id in SCHEMA3.run_ids),
)
# 87f3837 wrote the schema-7 fixtures' runs again, renamed, and one AlexNet run trained with torch.
SCHEMA8 = Generation(
    version=8,
    rows={**SCHEMA3.rows, "runs": 9, "samples": 38},
    run_ids=(
        *(run_id.replace("v3-", "v8-") for run_id in SCHEMA3.run_ids),
        "v8-torch-alex-96-b2",
    ),
)
# The profile key 0bc34a1 stored for the schema-7 evaluation (its README): the Intel VM with
# its CPU generation.
SCHEMA7_PROFILE = "a152bafe0b"
# The profile key 82bb04d stored for the schema-3 evaluation (its README); fabaf94
# stored the same for the same Intel VM's schema-4 evaluation.
SCHEMA3_PROFILE = "e347700dc4"
GENERATIONS = pytest.mark.parametrize(
    "generation",
    [SCHEMA1, SCHEMA2, SCHEMA3, SCHEMA4, SCHEMA5, SCHEMA6, SCHEMA7, SCHEMA8],
    ids=["schema1", "schema2", "schema3", "schema4", "schema5", "schema6", "schema7", "schema8"],
)
# The generations from before schema 7, whose runs recorded no CPU generation.
BEFORE_CPU_GENERATION = pytest.mark.parametrize(
    "generation",
    [SCHEMA1, SCHEMA2, SCHEMA3, SCHEMA4, SCHEMA5, SCHEMA6],
    ids=["schema1", "schema2", "schema3", "schema4", "schema5", "schema6"],
)
# The generations from before schema 5, whose runs recorded no L3 cache.
BEFORE_L3_CACHE = pytest.mark.parametrize(
    "generation",
    [SCHEMA1, SCHEMA2, SCHEMA3, SCHEMA4],
    ids=["schema1", "schema2", "schema3", "schema4"],
)
# The generations from before schema 4, whose runs recorded no Slurm job.
BEFORE_SLURM = pytest.mark.parametrize(
    "generation", [SCHEMA1, SCHEMA2, SCHEMA3], ids=["schema1", "schema2", "schema3"]
)
# The generations from before schema 3, whose runs recorded no machine facts.
BEFORE_MACHINE_FACTS = pytest.mark.parametrize(
    "generation", [SCHEMA1, SCHEMA2], ids=["schema1", "schema2"]
)
EXPORT_SUFFIXES = pytest.mark.parametrize("suffix", [".parquet", ".csv"])


def _copy(generation: Generation, tmp_path: Path) -> Path:
    """A private copy of a generation's database."""
    return Path(shutil.copy(generation.db, tmp_path / "memplan.duckdb"))


@pytest.fixture
def old_db(tmp_path: Path) -> Path:
    """A private copy of the schema-1 database."""
    return _copy(SCHEMA1, tmp_path)


@pytest.fixture
def v2_db(tmp_path: Path) -> Path:
    """A private copy of the schema-2 database."""
    return _copy(SCHEMA2, tmp_path)


@pytest.fixture
def v3_db(tmp_path: Path) -> Path:
    """A private copy of the schema-3 database."""
    return _copy(SCHEMA3, tmp_path)


def _migrated(
    generation: Generation, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> Path:
    """A private copy of a generation's database as `database.ensure_database` migrates it.

    Each generation is migrated once for the session (`built_once`) and copied: the tests
    of what a migrated database holds read a copy; the tests of migrating (in place, at
    once, failing, read-only) migrate their own."""

    def migrate(path: Path) -> None:
        shutil.copy(generation.db, path)
        database.ensure_database(path)

    template = built_once(tmp_path_factory, f"schema{generation.version}-migrated.duckdb", migrate)
    return Path(shutil.copy(template, tmp_path / "memplan.duckdb"))


@pytest.fixture
def migrated_v1_db(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the schema-1 database, migrated (`_migrated`)."""
    return _migrated(SCHEMA1, tmp_path_factory, tmp_path)


@pytest.fixture
def migrated_v2_db(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the schema-2 database, migrated (`_migrated`)."""
    return _migrated(SCHEMA2, tmp_path_factory, tmp_path)


@pytest.fixture
def migrated_v3_db(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A private copy of the schema-3 database, migrated (`_migrated`)."""
    return _migrated(SCHEMA3, tmp_path_factory, tmp_path)


def _migrated_runs(
    generation: Generation, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> tuple[Path, pd.DataFrame]:
    """A private copy of a generation's database, migrated, and its runs (checked in order)."""
    db = _migrated(generation, tmp_path_factory, tmp_path)
    runs = store.load_runs(db)
    assert tuple(runs["run_id"]) == generation.run_ids
    return db, runs


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


def _evaluation_profiles(db: Path) -> list[str | None]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT machine_profile FROM evaluations ORDER BY rowid").fetchall()
    return [row[0] for row in rows]


def _file_state(db: Path) -> tuple[bytes, int, list[str]]:
    return db.read_bytes(), db.stat().st_mtime_ns, sorted(p.name for p in db.parent.iterdir())


# --- databases --------------------------------------------------------------------------


def test_there_is_one_migration_per_version_step_up_to_the_current_one() -> None:
    assert [m.from_version for m in migrations.MIGRATIONS] == list(range(1, schema.SCHEMA_VERSION))
    assert [m.to_version for m in migrations.migrations_from(1)] == [2, 3, 4, 5, 6, 7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(2)] == [3, 4, 5, 6, 7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(3)] == [4, 5, 6, 7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(4)] == [5, 6, 7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(5)] == [6, 7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(6)] == [7, 8, 9]
    assert [m.to_version for m in migrations.migrations_from(7)] == [8, 9]
    assert [m.to_version for m in migrations.migrations_from(8)] == [9]
    assert migrations.migrations_from(schema.SCHEMA_VERSION) == ()


@GENERATIONS
def test_each_fixture_is_a_small_database_of_its_schema_version(generation: Generation) -> None:
    assert _version(generation.db) == str(generation.version)
    assert {name: len(rows) for name, rows in _tables(generation.db).items()} == generation.rows
    size = sum(path.stat().st_size for path in generation.directory.rglob("*") if path.is_file())
    assert size < FIXTURE_MAX_BYTES


@GENERATIONS
def test_an_older_database_is_migrated_keeping_every_row_and_value(
    generation: Generation, tmp_path: Path
) -> None:
    db = _copy(generation, tmp_path)
    before = _tables(db)

    database.ensure_database(db)

    after = _tables(db)
    assert _version(db) == str(schema.SCHEMA_VERSION) == "9"
    for name in schema.TABLES:
        if name == "meta":
            continue  # only the version changed (checked above)
        migrated = after[name]
        for column, value in schema.added_since(name, generation.version).items():
            if column in ("machine_profile", "steps"):
                continue  # read from the evaluation's runs (tests below), not a fixed value
            if value is None:  # unknown, not guessed
                assert migrated[column].isna().all(), column
            elif isinstance(value, schema.SameAs):  # the framework version: TensorFlow's
                assert migrated[column].equals(migrated[value.column].rename(column)), column
            else:
                assert set(migrated[column]) == {value}, column
        migrated = migrated.drop(columns=[c for c in migrated.columns if c not in before[name]])
        pd.testing.assert_frame_equal(migrated, before[name], check_dtype=False)
    # The stored models are byte for byte the same.
    assert list(after["models"]["estimator"]) == list(before["models"]["estimator"])


@GENERATIONS
def test_a_migrated_database_has_exactly_the_schema_of_a_new_one(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = _migrated(generation, tmp_path_factory, tmp_path)
    new = database.ensure_database(tmp_path / "new.duckdb")

    columns = _columns(db)
    assert columns == _columns(new)
    described = [row[0] for row in columns["runs"]]
    assert described.index("workload") == described.index("message") + 1
    assert described.index("cpu_vendor") == described.index("hostname") + 1
    assert described[described.index("onednn_enabled") + 1 :] == [
        *SLURM_COLUMNS,
        *CACHE_COLUMNS,
        *GENERATION_COLUMNS,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    # What a GPU run measured outside memplan did not record may be NULL (`core.targets`).
    nullable = {row[0]: row[2] == "YES" for row in columns["runs"]}
    assert nullable["hostname"] and nullable["total_ram_bytes"] and nullable["timeout_s"]
    assert not nullable["memory_target"] and not nullable["workload"]


@BEFORE_MACHINE_FACTS
def test_migrated_runs_have_no_machine_facts_they_did_not_record(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, runs = _migrated_runs(generation, tmp_path_factory, tmp_path)

    assert runs[list(MACHINE_COLUMNS)].isna().all().all()
    for profile in profiles.profiles_in(runs).values():
        assert profile.cpu_isa is None and profile.usable_cores is None
        assert "instruction set unknown" in profile.label


@BEFORE_SLURM
def test_migrated_runs_record_no_slurm_job(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db, runs = _migrated_runs(generation, tmp_path_factory, tmp_path)

    assert runs[list(SLURM_COLUMNS)].isna().all().all()
    assert all(store.get_run(db, run_id)["slurm_job_id"] is None for run_id in generation.run_ids)


@BEFORE_L3_CACHE
def test_migrated_runs_record_no_l3_cache(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, runs = _migrated_runs(generation, tmp_path_factory, tmp_path)

    assert runs["l3_cache_bytes"].isna().all()
    # Unknown, so the workspace feature keeps the one-image rule the runs were fit with.
    assert measured_frame(runs)["l3_cache_bytes"].isna().all()


def test_migrated_schema_4_runs_keep_the_slurm_jobs_that_measured_them(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = _migrated(SCHEMA4, tmp_path_factory, tmp_path)

    runs = store.load_runs(db).set_index("run_id")

    assert runs.loc["v4-unet-48-b1", "slurm_job_id"] == "4321_1"
    assert runs.loc["v4-unet-64-b1", "slurm_job_id"] == "4322"
    assert runs.loc[["v4-unet-48-b1", "v4-unet-64-b1"], "slurm_cpus_per_task"].tolist() == [2, 2]
    assert runs.drop(["v4-unet-48-b1", "v4-unet-64-b1"])["slurm_job_id"].isna().all()
    assert [p.name for p in results.load_predictors(stored.read(db), machine=SCHEMA3_PROFILE)] == [
        "paper",
        "refined",
        "least_squares",
    ]


def test_migrated_schema_5_runs_keep_the_l3_cache_they_recorded(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, runs = _migrated_runs(SCHEMA5, tmp_path_factory, tmp_path)
    cache = runs.set_index("run_id")["l3_cache_bytes"]

    assert set(cache[[r for r in SCHEMA5.run_ids if r.startswith("v5-unet")]]) == {33 * 2**20}
    assert cache[[r for r in SCHEMA5.run_ids if r.startswith("v5-alex")]].isna().all()


@BEFORE_CPU_GENERATION
def test_migrated_runs_record_no_cpu_generation_and_keep_their_profiles(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    before = profiles.profiles_in(_tables(generation.db)["runs"])
    db, runs = _migrated_runs(generation, tmp_path_factory, tmp_path)

    assert runs[list(GENERATION_COLUMNS)].isna().all().all()  # unknown, never guessed
    # A profile that does not know its CPU generation keeps its key (and its label).
    assert profiles.profiles_in(runs) == before
    for profile in before.values():
        assert profile.generation is None and "family" not in profile.label
    assert all(store.get_run(db, run_id)["cpu_family"] is None for run_id in generation.run_ids)


def test_migrated_schema_7_runs_trained_with_tensorflow_and_keep_their_profiles(
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    before = profiles.profiles_in(_tables(SCHEMA7.db)["runs"])  # as schema 7 stored them
    db, runs = _migrated_runs(SCHEMA7, tmp_path_factory, tmp_path)

    assert set(runs["framework"]) == {"tensorflow"}
    assert list(runs["framework_version"]) == list(runs["tensorflow_version"])
    assert runs["torch_intra_op_threads"].isna().all()
    # The framework is explicit now, and a TensorFlow profile keeps its key, so the stored
    # evaluation still answers for the runs it fit.
    assert profiles.profiles_in(runs) == before and SCHEMA7_PROFILE in before
    assert before[SCHEMA7_PROFILE].label.endswith("TensorFlow 2.21")
    assert [p.name for p in results.load_predictors(stored.read(db), machine=SCHEMA7_PROFILE)] == [
        "paper",
        "refined",
        "least_squares",
    ]


def test_migrated_schema_8_runs_measured_host_ram_and_keep_their_profiles(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    before = profiles.profiles_in(_tables(SCHEMA8.db)["runs"])  # as schema 8 stored them
    db, runs = _migrated_runs(SCHEMA8, tmp_path_factory, tmp_path)

    assert set(runs["memory_target"]) == {"host_ram"}
    assert runs[list(TARGET_COLUMNS[1:])].isna().all().all()  # no GPU: not guessed
    # Host RAM is every profile's target: a TensorFlow and a torch profile keep their keys,
    # and the stored evaluation still answers for the runs it fit.
    assert profiles.profiles_in(runs) == before and SCHEMA7_PROFILE in before
    assert {p.framework for p in before.values()} == {"tensorflow", "torch"}
    assert [p.name for p in results.load_predictors(stored.read(db), machine=SCHEMA7_PROFILE)] == [
        "paper",
        "refined",
        "least_squares",
    ]
    assert store.get_run(db, "v8-torch-alex-96-b2")["memory_target"] == "host_ram"


def test_a_migrated_schema_6_evaluation_still_answers_for_its_profile(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db, runs = _migrated_runs(SCHEMA6, tmp_path_factory, tmp_path)

    assert SCHEMA3_PROFILE in profiles.profiles_in(runs)
    assert [p.name for p in results.load_predictors(stored.read(db), machine=SCHEMA3_PROFILE)] == [
        "paper",
        "refined",
        "least_squares",
    ]


def test_a_run_measured_after_migration_with_its_cpu_generation_is_a_profile_of_its_own(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, make_record
) -> None:
    db, runs = _migrated_runs(SCHEMA6, tmp_path_factory, tmp_path)
    older = store.get_run(db, "v6-unet-32-b1")
    facts = {name: older[name] for name in profiles.PROFILE_COLUMNS if name in older}

    store.insert_run(db, make_record(**{**facts, "cpu_family": 6, "cpu_model_number": 85}))

    after = profiles.profiles_in(store.load_runs(db))
    assert len(after) == len(profiles.profiles_in(runs)) + 1
    [new] = [p for key, p in after.items() if p.generation is not None]
    assert new.label.startswith("Intel Xeon (family 6, model 85)")
    assert new.same_but_generation(after[SCHEMA3_PROFILE])


@GENERATIONS
def test_a_migrated_evaluation_records_the_step_count_of_the_runs_it_fit(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    db = _migrated(generation, tmp_path_factory, tmp_path)

    [evaluation] = stored.load_evaluations(db, workload=None).to_dict("records")
    assert evaluation["steps"] == FIXTURE_STEPS
    if generation.version < 6:
        assert evaluation["other_steps_json"] is None  # not recorded before schema 6


def test_a_migrated_evaluation_over_runs_of_two_step_counts_records_none(tmp_path: Path) -> None:
    db = _copy(SCHEMA5, tmp_path)
    with duckdb.connect(str(db)) as con:  # as a schema-5 memplan let it be: fitted together
        con.execute("UPDATE runs SET steps = 1 WHERE run_id = 'v5-unet-48-b1'")

    database.ensure_database(db)

    [evaluation] = stored.load_evaluations(db, workload=None).to_dict("records")
    assert pd.isna(evaluation["steps"])  # unknown, never guessed


def test_a_schema_5_results_export_installs_with_the_step_count_its_runs_match(
    tmp_path: Path,
) -> None:
    db = tmp_path / "memplan.duckdb"
    fixtures = SCHEMA5.directory
    exchange.import_runs(db, fixtures / "runs.parquet", fixtures / "samples.parquet")

    assert bundles.install_bundled_results(db, fixtures / "results")

    [evaluation] = stored.load_evaluations(db, workload=None).to_dict("records")
    assert (evaluation["machine_profile"], evaluation["steps"]) == (SCHEMA3_PROFILE, FIXTURE_STEPS)


def test_migrated_schema_1_runs_read_back_as_unet_runs(migrated_v1_db: Path) -> None:
    runs = store.load_runs(migrated_v1_db)
    assert len(runs) == 6 and set(runs["workload"]) == {"unet3d"}
    assert list(
        store.load_runs(migrated_v1_db, store.RunFilter(status="ok", workload="unet3d"))["run_id"]
    ) == [
        "v1-ok-32-b1",
        "v1-ok-32-b2",
        "v1-ok-48-b1",
        "v1-ok-64-b1",
    ]
    run = store.get_run(migrated_v1_db, "v1-ok-48")
    assert run["message"] == 'warm, "quoted"\nsecond line: ünïcode'
    assert store.point_key(run) == ("unet3d", 48, 48, 48, 1, 16, 5, 1, 1, "float32", "transpose", 3)
    assert len(store.load_samples(migrated_v1_db, ["v1-ok-48-b1"])) == 5
    assert list(store.load_sweeps(migrated_v1_db)["status"]) == ["done", "interrupted"]
    # Its runs stored the test helper's "Test CPU", which names no vendor: none is guessed.
    assert profiles.profile_of(run).cpu_vendor is None
    assert profiles.profile_of(run).label == (
        "Test, instruction set unknown, 8 cores, TensorFlow 2.16"
    )


def test_migrated_schema_2_runs_of_two_vms_called_vm_are_told_apart(migrated_v2_db: Path) -> None:
    unet = store.get_run(migrated_v2_db, "v2-unet-48")
    alexnet = store.get_run(migrated_v2_db, "v2-alex-67")
    assert unet["hostname"] == alexnet["hostname"] == "vm"
    assert unet["message"] == 'warm, "quoted"\nsecond line: ünïcode'
    assert store.point_key(alexnet) == (
        "alexnet",
        None,
        67,
        67,
        1,
        None,
        None,
        3,
        1000,
        "float32",
        None,
        3,
    )
    intel, amd = profiles.profile_of(unet), profiles.profile_of(alexnet)
    # The vendor is read from the model name each run stored; the ISA is not guessed.
    assert (intel.cpu_vendor, intel.cpu_model, intel.cpu_isa) == ("Intel", "Intel Xeon", None)
    assert (amd.cpu_vendor, amd.cpu_model, amd.cpu_isa) == ("AMD", "AMD EPYC 9B14", None)
    assert intel.label == "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21"
    assert intel.ram_gib == amd.ram_gib == 24  # 23.5 GiB a few MiB apart: one size
    # Intel, AMD, and AMD with oneDNN off (v2-alex-96-b2): three profiles, one hostname.
    runs = store.load_runs(migrated_v2_db)
    assert set(profiles.profiles_in(runs)) == {
        intel.key,
        amd.key,
        profiles.profile_of(store.get_run(migrated_v2_db, "v2-alex-96")).key,
    }
    assert (
        list(store.load_runs(migrated_v2_db, store.RunFilter(machine=intel.key))["workload"])
        == ["unet3d"] * 5
    )
    assert list(store.load_runs(migrated_v2_db, store.RunFilter(machine=amd.key))["run_id"]) == [
        "v2-alex-67-b1",
        "v2-alex-224-b512",
    ]
    assert (
        list(store.load_samples(migrated_v2_db, ["v2-alex-67-b1"])["run_id"])
        == ["v2-alex-67-b1"] * 5
    )
    sweeps = store.load_sweeps(migrated_v2_db)
    assert dict(zip(sweeps["sweep_id"], sweeps["status"], strict=True)) == {
        "sweep-unet": "done",
        "sweep-alex": "interrupted",
    }


def test_a_sweep_on_the_other_vm_does_not_count_the_older_runs_as_done(
    migrated_v2_db: Path,
) -> None:
    intel = profiles.profile_of(store.get_run(migrated_v2_db, "v2-unet-32-b1"))
    amd = profiles.profile_of(store.get_run(migrated_v2_db, "v2-alex-67"))

    on_intel = store.completed_points(migrated_v2_db, intel.key)
    assert sum(on_intel.values()) == 5  # 4 ok and 1 oom U-Net runs
    assert {key[0] for key in on_intel} == {"unet3d"}
    assert {key[0] for key in store.completed_points(migrated_v2_db, amd.key)} == {"alexnet"}
    assert store.completed_points(migrated_v2_db, amd.key, statuses=("skipped",)) == {
        store.point_key(store.get_run(migrated_v2_db, "v2-alex-224")): 1
    }


def test_a_migrated_evaluation_names_the_one_profile_its_runs_share(migrated_v2_db: Path) -> None:
    predicted = set(results.load_predictions(stored.read(migrated_v2_db, "unet3d"))["run_id"])
    keys = {profiles.profile_of(store.get_run(migrated_v2_db, run_id)).key for run_id in predicted}
    assert len(keys) == 1  # all three held-out runs are of the Intel VM
    assert _evaluation_profiles(migrated_v2_db) == list(keys)
    # 99b704d stored its models as data, so they load after the migration.
    assert [p.name for p in results.load_predictors(stored.read(migrated_v2_db, "unet3d"))] == [
        "paper",
        "refined",
        "least_squares",
    ]


def test_an_evaluation_whose_runs_span_two_profiles_names_none(v2_db: Path) -> None:
    # One held-out run edited to the other VM's CPU: the evaluation fit two machines.
    with duckdb.connect(str(v2_db)) as con:
        con.execute(
            "UPDATE runs SET cpu_model = 'AMD EPYC 9B14 96-Core Processor'"
            " WHERE run_id = 'v2-unet-64-b1'"
        )

    database.ensure_database(v2_db)

    assert _evaluation_profiles(v2_db) == [None]


def test_migrated_schema_3_runs_keep_the_machine_facts_they_recorded(migrated_v3_db: Path) -> None:
    runs = store.load_runs(migrated_v3_db).set_index("run_id")
    facts = runs[list(MACHINE_COLUMNS)]
    # The Intel VM's runs recorded them; the AMD VM's (carried over from schema 2) did not.
    unet = [run_id for run_id in SCHEMA3.run_ids if run_id.startswith("v3-unet")]
    alexnet = [run_id for run_id in SCHEMA3.run_ids if run_id.startswith("v3-alex")]
    assert facts.loc[unet].astype(object).drop_duplicates().values.tolist() == [
        ["Intel", "avx512", 2, 2]
    ]
    assert facts.loc[alexnet].isna().all().all()
    intel = profiles.profile_of(store.get_run(migrated_v3_db, "v3-unet-48"))
    amd = profiles.profile_of(store.get_run(migrated_v3_db, "v3-alex-67"))
    assert (intel.cpu_vendor, intel.cpu_isa, intel.usable_cores) == ("Intel", "avx512", 2)
    assert (amd.cpu_vendor, amd.cpu_isa, amd.usable_cores) == ("AMD", None, None)
    assert intel.key == SCHEMA3_PROFILE  # the same profile as the release computed
    assert (
        list(store.load_runs(migrated_v3_db, store.RunFilter(machine=intel.key))["run_id"]) == unet
    )
    assert (
        store.get_run(migrated_v3_db, "v3-unet-48")["message"]
        == 'warm, "quoted"\nsecond line: ünïcode'
    )
    assert sum(store.completed_points(migrated_v3_db, intel.key).values()) == 5  # 4 ok and 1 oom
    sweeps = store.load_sweeps(migrated_v3_db)
    assert dict(zip(sweeps["sweep_id"], sweeps["status"], strict=True)) == {
        "sweep-unet": "done",
        "sweep-alex": "interrupted",
    }


def test_a_migrated_schema_3_evaluation_keeps_its_profile_and_its_models_load(
    migrated_v3_db: Path,
) -> None:
    assert _evaluation_profiles(migrated_v3_db) == [SCHEMA3_PROFILE]
    evaluation = stored.load_evaluations(migrated_v3_db, machine=SCHEMA3_PROFILE).iloc[0]
    assert (evaluation["workload"], evaluation["n_runs"]) == ("unet3d", 4)
    assert len(results.load_scores(stored.read(migrated_v3_db))) == 6
    assert set(results.load_predictions(stored.read(migrated_v3_db))["run_id"]) == {
        "v3-unet-32-b2",
        "v3-unet-48-b1",
        "v3-unet-64-b1",
    }
    predictors = results.load_predictors(
        stored.read(migrated_v3_db, "unet3d"), machine=SCHEMA3_PROFILE
    )
    assert [p.name for p in predictors] == ["paper", "refined", "least_squares"]


def test_a_schema_1_evaluation_over_onednn_on_and_off_runs_names_no_profile(migrated_v1_db) -> None:
    # Its held-out v1-ok-64-b1 ran with oneDNN off, the other two with it on.
    assert _evaluation_profiles(migrated_v1_db) == [None]


def test_a_schema_1_databases_results_load_but_its_pickled_models_are_refused(
    migrated_v1_db: Path,
) -> None:
    evaluation = stored.load_evaluations(migrated_v1_db).iloc[0]
    assert (evaluation["workload"], evaluation["n_runs"]) == ("unet3d", 4)
    assert len(results.load_scores(stored.read(migrated_v1_db))) == 6
    assert len(results.load_predictions(stored.read(migrated_v1_db))) == 9
    # 256831b stored its models as pickles; loading one can run any code, so none is
    # loaded: the message names the model and the command that refits them as data.
    with pytest.raises(ModelingError) as refused:
        results.load_predictors(stored.read(migrated_v1_db))
    assert str(refused.value).startswith(
        f"stored model 'paper' in {migrated_v1_db} is refused, nothing of it was run: "
        "it is a pickle"
    )
    assert f"Re-run `memplan evaluate --db {migrated_v1_db}` to refit" in str(refused.value)
    with pytest.raises(ModelingError, match="stored model 'paper' .* is refused"):
        results.load_predictor(stored.read(migrated_v1_db), "refined")


@GENERATIONS
def test_a_read_only_open_of_an_older_database_writes_nothing(
    generation: Generation, tmp_path: Path
) -> None:
    db = _copy(generation, tmp_path)
    before = _file_state(db)

    with pytest.raises(StoreError) as refused:
        store.load_runs(db)
    with pytest.raises(StoreError):
        results.load_predictors(stored.read(db))
    with pytest.raises(StoreError):
        store.completed_points(db, "0123456789")

    assert str(refused.value) == (
        f"database {db} has schema version {generation.version}, older than this memplan's "
        f"{schema.SCHEMA_VERSION}, and a read-only open never migrates it; open it once "
        f"read-write to migrate it in place, e.g. `memplan list --db {db}`"
    )
    assert _file_state(db) == before
    assert _version(db) == str(generation.version)


@GENERATIONS
def test_the_command_the_read_only_refusal_names_migrates_the_database(
    generation: Generation, tmp_path: Path, capsys
) -> None:
    db = _copy(generation, tmp_path)

    assert cli.main(["list", "--db", str(db)]) == 0

    assert _version(db) == str(schema.SCHEMA_VERSION)
    assert f"{len(generation.run_ids)} run(s)" in capsys.readouterr().out
    assert len(store.load_runs(db)) == len(generation.run_ids)  # read-only opens work now


@GENERATIONS
def test_any_write_migrates_first(generation: Generation, tmp_path: Path, make_record) -> None:
    db = _copy(generation, tmp_path)

    store.insert_run(db, make_record(run_id="new", timeline=2))

    assert _version(db) == str(schema.SCHEMA_VERSION)
    assert len(store.load_runs(db)) == len(generation.run_ids) + 1


@GENERATIONS
def test_opening_a_migrated_database_again_changes_nothing(
    generation: Generation, tmp_path: Path
) -> None:
    db = _copy(generation, tmp_path)
    database.ensure_database(db)
    migrated = _file_state(db)

    database.ensure_database(db)
    store.load_runs(db)

    assert _file_state(db) == migrated


@GENERATIONS
def test_a_failed_migration_leaves_the_database_as_it_was(
    generation: Generation, tmp_path: Path, monkeypatch
) -> None:
    db = _copy(generation, tmp_path)
    before = _tables(db)
    last = migrations.MIGRATIONS[-1]

    def failing(con):
        last.apply(con)  # every earlier step, and this one, rebuilt their tables already
        con.execute("SELECT * FROM no_such_table")

    monkeypatch.setattr(
        migrations,
        "MIGRATIONS",
        (*migrations.MIGRATIONS[:-1], dataclasses.replace(last, apply=failing)),
    )

    with pytest.raises(
        StoreError,
        match=rf"could not migrate database .* from schema version {generation.version} to "
        rf"{schema.SCHEMA_VERSION}: Catalog Error.*; nothing was changed",
    ):
        database.ensure_database(db)

    assert _version(db) == str(generation.version)
    after = _tables(db)
    assert not set(TARGET_COLUMNS) & set(after["runs"].columns)
    assert _columns(db) == _columns(generation.db)
    for name in schema.TABLES:
        pd.testing.assert_frame_equal(after[name], before[name])


@GENERATIONS
def test_processes_opening_an_old_database_at_once_migrate_it_once(
    generation: Generation, tmp_path: Path
) -> None:
    db = _copy(generation, tmp_path)
    errors: list[BaseException] = []

    def open_it() -> None:
        try:
            database.ensure_database(db)
            assert len(store.load_runs(db)) == len(generation.run_ids)
        except BaseException as error:  # reported below
            errors.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert _version(db) == str(schema.SCHEMA_VERSION)
    assert {name: len(rows) for name, rows in _tables(db).items()} == generation.rows


def test_a_database_of_a_newer_memplan_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = database.ensure_database(tmp_path / "future.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        con.execute("CHECKPOINT")
    before = _file_state(db)
    expected = (
        f"database {db} has schema version 99, newer than this memplan's "
        f"{schema.SCHEMA_VERSION}; upgrade memplan to open it, or point MEMPLAN_DB at another "
        "database"
    )

    for attempt in (
        lambda: database.ensure_database(db),
        lambda: store.load_runs(db),
        lambda: store.create_sweep(db, "s1", "memplan sweep", {}, points_total=1),
    ):
        with pytest.raises(StoreError) as refused:
            attempt()
        assert str(refused.value) == expected

    assert _file_state(db) == before


# --- exports ----------------------------------------------------------------------------


@GENERATIONS
@EXPORT_SUFFIXES
def test_an_older_export_imports_as_the_migrated_database_holds_it(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, suffix: str
) -> None:
    db = _migrated(generation, tmp_path_factory, tmp_path)
    target = tmp_path / "target.duckdb"
    directory = generation.directory

    stored = exchange.import_runs(
        target, directory / f"runs{suffix}", directory / f"samples{suffix}"
    )

    assert stored == len(generation.run_ids)
    imported = store.load_runs(target)
    # Every older export measured host RAM; every one before schema 8 trained with
    # TensorFlow, at the version it recorded.
    assert set(imported["memory_target"]) == {"host_ram"}
    assert imported[list(TARGET_COLUMNS[1:])].isna().all().all()
    if generation.version < 8:
        assert set(imported["framework"]) == {"tensorflow"}
        assert list(imported["framework_version"]) == list(imported["tensorflow_version"])
    if generation.version < 7:
        assert imported[list(GENERATION_COLUMNS)].isna().all().all()
    if generation.version < 5:
        assert imported[list(CACHE_COLUMNS)].isna().all().all()
    if generation.version < 4:
        assert imported[list(SLURM_COLUMNS)].isna().all().all()
    if generation.version < 3:
        assert imported[list(MACHINE_COLUMNS)].isna().all().all()
    pd.testing.assert_frame_equal(imported, store.load_runs(db))
    pd.testing.assert_frame_equal(store.load_samples(target), store.load_samples(db))


@EXPORT_SUFFIXES
def test_an_export_claiming_a_newer_version_is_refused(tmp_path: Path, suffix: str) -> None:
    newer = schema.SCHEMA_VERSION + 1
    runs_file = tmp_path / f"runs{suffix}"
    if suffix == ".parquet":
        rows = pq.read_table(SCHEMA2.directory / "runs.parquet")
        pq.write_table(
            rows.replace_schema_metadata({"memplan_schema_version": str(newer)}), runs_file
        )
    else:
        rows = pd.read_csv(SCHEMA2.directory / "runs.csv")
        rows.assign(schema_version=newer).to_csv(runs_file, index=False)
    target = tmp_path / "target.duckdb"

    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(target, runs_file)

    assert str(refused.value) == (
        f"{runs_file} was exported with schema version {newer}, newer than this "
        f"memplan's {schema.SCHEMA_VERSION}; upgrade memplan to import it"
    )
    assert store.load_runs(target).empty


def test_an_older_export_gets_the_columns_newer_versions_added(monkeypatch) -> None:
    runs = pa.table({"run_id": ["a", "b"], "tensorflow_version": ["2.16.1", "2.21.0"]})
    from_1 = schema.upgrade_export("runs", runs, 1)
    assert from_1.column("workload").to_pylist() == ["unet3d", "unet3d"]
    for name in MACHINE_COLUMNS:
        assert from_1.column(name).to_pylist() == [None, None]
    for name in (*SLURM_COLUMNS, *CACHE_COLUMNS, *GENERATION_COLUMNS):
        assert from_1.column(name).to_pylist() == [None, None]
    # Every run before schema 8 trained with TensorFlow, the version it recorded.
    assert from_1.column("framework").to_pylist() == ["tensorflow", "tensorflow"]
    assert from_1.column("framework_version").to_pylist() == ["2.16.1", "2.21.0"]
    assert from_1.column("torch_intra_op_threads").to_pylist() == [None, None]
    # Every run before schema 9 measured host RAM; none has a GPU's facts or figures.
    assert from_1.column("memory_target").to_pylist() == ["host_ram", "host_ram"]
    for name in TARGET_COLUMNS[1:]:
        assert from_1.column(name).to_pylist() == [None, None]
    own = ["run_id", "tensorflow_version"]
    assert schema.upgrade_export("runs", runs, 2).column_names == [
        *own,
        *MACHINE_COLUMNS,
        *SLURM_COLUMNS,
        *CACHE_COLUMNS,
        *GENERATION_COLUMNS,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    assert schema.upgrade_export("runs", runs, 3).column_names == [
        *own,
        *SLURM_COLUMNS,
        *CACHE_COLUMNS,
        *GENERATION_COLUMNS,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    assert schema.upgrade_export("runs", runs, 4).column_names == [
        *own,
        *CACHE_COLUMNS,
        *GENERATION_COLUMNS,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    assert schema.upgrade_export("runs", runs, 6).column_names == [
        *own,
        *GENERATION_COLUMNS,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    assert schema.upgrade_export("runs", runs, 7).column_names == [
        *own,
        *FRAMEWORK_COLUMNS,
        *TARGET_COLUMNS,
    ]
    assert schema.upgrade_export("runs", runs, 8).column_names == [*own, *TARGET_COLUMNS]
    assert schema.upgrade_export("runs", runs, schema.SCHEMA_VERSION).column_names == own
    evaluations = schema.upgrade_export("evaluations", pa.table({"evaluation_id": ["e"]}), 2)
    assert evaluations.column("machine_profile").to_pylist() == [None]
    # An export says its version by the columns it has when it does not say it otherwise.
    assert schema.infer_version("runs", ["run_id"]) == 1
    assert schema.infer_version("runs", ["run_id", "workload"]) == 2
    assert schema.infer_version("runs", ["run_id", "workload", *MACHINE_COLUMNS]) == 3
    slurm = ["run_id", "workload", *MACHINE_COLUMNS, *SLURM_COLUMNS]
    assert schema.infer_version("runs", slurm) == 4
    # Schema 6 added nothing to runs: a schema-5 runs export reads as schema 6.
    assert schema.infer_version("runs", [*slurm, *CACHE_COLUMNS]) == 6
    assert schema.infer_version("runs", [*slurm, *CACHE_COLUMNS, *GENERATION_COLUMNS]) == 7
    framework = [*slurm, *CACHE_COLUMNS, *GENERATION_COLUMNS, *FRAMEWORK_COLUMNS]
    assert schema.infer_version("runs", framework) == 8
    assert schema.infer_version("runs", [*framework, *TARGET_COLUMNS]) == schema.SCHEMA_VERSION
    profiled = ["evaluation_id", "workload", "machine_profile"]
    assert schema.infer_version("evaluations", profiled) == 5
    # Schemas 7 to 9 added nothing to evaluations: a schema-6 one reads as the current one.
    assert schema.infer_version("evaluations", [*profiled, *STEPS_COLUMNS]) == 9
    assert schema.upgrade_export("evaluations", pa.table({"evaluation_id": ["e"]}), 5).column(
        "steps"
    ).to_pylist() == [None]
    # A nullable column a later version adds is NULL in the rows of an older export.
    latest = schema.SCHEMA_VERSION
    monkeypatch.setitem(schema.ADDED_COLUMNS[latest], "runs", {"gpu": None})
    assert schema.upgrade_export("runs", runs, latest - 1).column("gpu").to_pylist() == [
        None,
        None,
    ]
    no_gpu = ["run_id", "workload", *MACHINE_COLUMNS, *SLURM_COLUMNS, *CACHE_COLUMNS]
    no_gpu.extend([*GENERATION_COLUMNS, *FRAMEWORK_COLUMNS, *TARGET_COLUMNS])
    assert schema.infer_version("runs", no_gpu) == latest - 1  # no gpu: older


@GENERATIONS
@EXPORT_SUFFIXES
def test_a_new_export_carries_the_current_version_and_round_trips(
    generation: Generation, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory, suffix: str
) -> None:
    db = _migrated(generation, tmp_path_factory, tmp_path)
    runs_file, samples_file = tmp_path / f"runs{suffix}", tmp_path / f"samples{suffix}"
    database.ensure_database(db)  # as `memplan export` does first
    exchange.export_runs(db, runs_file, samples_file)

    if suffix == ".parquet":
        metadata = pq.read_metadata(runs_file).metadata
        assert metadata[b"memplan_schema_version"] == str(schema.SCHEMA_VERSION).encode()
    else:
        assert set(pd.read_csv(runs_file)["schema_version"]) == {schema.SCHEMA_VERSION}
    copy = tmp_path / "copy.duckdb"
    assert exchange.import_runs(copy, runs_file, samples_file) == len(generation.run_ids)
    pd.testing.assert_frame_equal(store.load_runs(copy), store.load_runs(db))
    pd.testing.assert_frame_equal(store.load_samples(copy), store.load_samples(db))


def test_a_schema_1_results_export_installs_as_a_unet_evaluation(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    fixtures = SCHEMA1.directory
    exchange.import_runs(db, fixtures / "runs.parquet", fixtures / "samples.parquet")

    assert bundles.install_bundled_results(db, fixtures / "results")

    assert stored.load_evaluations(db)["workload"].tolist() == ["unet3d"]
    assert stored.load_evaluations(db, workload="alexnet").empty
    # Its models are 256831b's pickles: copied, but refused when loaded (never unpickled).
    with pytest.raises(ModelingError, match="stored model 'paper' .* it is a pickle"):
        results.load_predictors(stored.read(db))


def test_a_schema_2_results_export_reads_with_no_machine_profile() -> None:
    # The export says schema 2 and names no profile; reading it never guesses one.
    evaluations = pq.read_table(SCHEMA2.directory / "results" / "evaluations.parquet")
    assert (
        pq.read_metadata(SCHEMA2.directory / "results" / "evaluations.parquet").metadata[
            b"memplan_schema_version"
        ]
        == b"2"
    )

    upgraded = schema.upgrade_export("evaluations", evaluations, 2)

    assert upgraded.column("machine_profile").to_pylist() == [None]
    assert upgraded.column("workload").to_pylist() == ["unet3d"]


def test_a_schema_3_results_export_installs_with_its_machine_profile(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    fixtures = SCHEMA3.directory
    metadata = pq.read_metadata(fixtures / "results" / "evaluations.parquet").metadata
    assert metadata[b"memplan_schema_version"] == b"3"
    exchange.import_runs(db, fixtures / "runs.parquet", fixtures / "samples.parquet")

    assert bundles.install_bundled_results(db, fixtures / "results")

    assert _evaluation_profiles(db) == [SCHEMA3_PROFILE]
    assert stored.load_evaluations(db, workload="alexnet").empty
    assert [p.name for p in results.load_predictors(stored.read(db), machine=SCHEMA3_PROFILE)] == [
        "paper",
        "refined",
        "least_squares",
    ]


def test_a_results_export_carries_its_version_and_a_newer_one_is_refused(
    tmp_path: Path, old_db: Path
) -> None:
    database.ensure_database(old_db)
    exported = bundles.export_results(old_db, tmp_path / "export")
    current, newer = str(schema.SCHEMA_VERSION), str(schema.SCHEMA_VERSION + 1)
    for table in schema.RESULT_TABLES:
        metadata = pq.read_metadata(exported / f"{table}.parquet").metadata
        assert metadata[b"memplan_schema_version"] == current.encode()
    evaluations = pq.read_table(exported / "evaluations.parquet")
    pq.write_table(
        evaluations.replace_schema_metadata({"memplan_schema_version": newer}),
        exported / "evaluations.parquet",
    )
    db = tmp_path / "target.duckdb"
    exchange.import_runs(
        db, SCHEMA1.directory / "runs.parquet", SCHEMA1.directory / "samples.parquet"
    )

    with pytest.raises(
        DataFileError, match=f"schema version {newer}, newer than this memplan's {current}"
    ):
        bundles.install_bundled_results(db, exported)
    assert stored.load_evaluations(db, workload=None).empty
