"""Which machine profile a sizing answer is for (`modeling.machines.choose_machine`)."""

import shutil
from pathlib import Path

import pytest

from application import stored
from core import database, profiles, store
from core import snapshot as snapshots
from memplan.cli import main
from modeling import machines
from modeling.errors import NoModelsError
from modeling.stored import bundle
from profiling import exchange
from tests.conftest import build_record, build_runs, built_once

CHEAP = ["--models", "least_squares", "--seeds", "2", "--extrapolation-seeds", "1"]
# This test machine and another one; every run of the second peaks 1.5x higher.
HERE = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx512_bf16"}
ELSEWHERE = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon Gold", "cpu_isa": "amx"}


def _insert(db: Path, facts: dict, scale: float = 1.0) -> str:
    """A sweep of synthetic runs measured on a machine with ``facts``; returns its profile key."""
    records = []
    for row in build_runs(noise=0.01).to_dict("records"):
        row.pop("run_id")
        row.update(facts, peak_hwm_bytes=int(row["peak_hwm_bytes"] * scale))
        records.append(build_record(**row))
    store.insert_runs(db, records)
    return _key(facts)


def _key(facts: dict) -> str:
    """The profile key of runs measured on a machine with ``facts``."""
    return profiles.profile_of(build_record(**facts).row()).key


def _both_machines_evaluated(db: Path) -> None:
    database.ensure_database(db)
    _insert(db, HERE)
    _insert(db, ELSEWHERE, scale=1.5)
    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0


@pytest.fixture(scope="module")
def two_machines(tmp_path_factory) -> tuple[Path, str, str]:
    """A database with both machines' runs, each evaluated on its own, and their profile
    keys. Built once for the session (`built_once`); the module reads its own copy."""
    template = built_once(tmp_path_factory, "machine_choice.duckdb", _both_machines_evaluated)
    db = Path(shutil.copy(template, tmp_path_factory.mktemp("machines") / "runs.duckdb"))
    return db, _key(HERE), _key(ELSEWHERE)


@pytest.fixture
def this_machine(monkeypatch: pytest.MonkeyPatch):
    """Pretend the machine running the test is HERE (whatever CPU CI has)."""
    profile = profiles.profile_of(build_record(**HERE).row())
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": profile
    )
    return profile


def test_the_default_is_this_machine_when_it_has_models(two_machines, this_machine) -> None:
    db, here, _ = two_machines

    choice = stored.choose_machine(db, "unet3d")

    assert (choice.key, choice.reason, choice.note) == (here, machines.THIS_MACHINE, "")
    assert choice.sentence() == (
        f"for AMD EPYC, AVX-512 BF16, 8 cores, TensorFlow 2.16 (profile {here}; this machine)"
    )


def test_one_snapshot_keys_its_runs_once_however_often_it_is_asked(
    two_machines, this_machine, monkeypatch
) -> None:
    db, here, elsewhere = two_machines
    snapshot = snapshots.read(db, "unet3d")  # a new one, not the one `stored.read` remembers
    keyed = []
    real = profiles.profile_keys
    monkeypatch.setattr(
        profiles, "profile_keys", lambda runs: keyed.append(len(runs)) or real(runs)
    )

    for asked in (None, elsewhere, here, None):
        machines.choose_machine(snapshot, asked)
    found = machines.run_profiles(snapshot)
    found.clear()  # the caller's own copy: the snapshot's stays whole

    assert list(machines.run_profiles(snapshot)) == [here, elsewhere]
    assert set(machines.run_counts(snapshot)) == {here, elsewhere}
    assert keyed == [48]  # both machines' 24 runs, keyed once for every question


def test_another_machine_answers_when_asked_by_key_prefix(two_machines, this_machine) -> None:
    db, _, elsewhere = two_machines

    choice = stored.choose_machine(db, "unet3d", elsewhere[:3].upper())

    assert choice.key == elsewhere
    assert choice.label == "Intel Xeon Gold, AMX, 8 cores, TensorFlow 2.16"


def test_without_models_for_this_machine_the_answer_says_why_and_what_to_run(
    two_machines, this_machine, tmp_path: Path
) -> None:
    db = Path(shutil.copy(two_machines[0], tmp_path / "runs.duckdb"))
    with database.transaction(db) as con:  # keep only the other machine's evaluation
        con.execute("DELETE FROM evaluations WHERE machine_profile = ?", [this_machine.key])

    choice = stored.choose_machine(db, "unet3d")

    assert choice.key == two_machines[2]
    assert choice.reason == machines.LATEST
    assert choice.note == (
        f"This machine ({this_machine.label}, profile {this_machine.key}) has runs but no "
        f"fitted models: `memplan evaluate --workload unet3d --machine "
        f"{this_machine.key}` fits them."
    )


def test_a_machine_with_too_few_runs_is_told_to_calibrate(this_machine, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    database.ensure_database(db)
    elsewhere = _insert(db, ELSEWHERE)
    assert main(["evaluate", "--db", str(db), *CHEAP]) == 0
    rows = build_runs(sides=(32, 48), batches=(1, 2)).drop(columns="run_id")
    store.insert_runs(db, [build_record(**{**row, **HERE}) for row in rows.to_dict("records")])

    choice = stored.choose_machine(db, "unet3d")

    assert choice.key == elsewhere
    assert "has 4 measured configuration(s) of unet3d, fewer than the 10" in choice.note
    assert "`memplan calibrate --workload unet3d`" in choice.note


def test_the_bundled_reference_answers_on_a_new_machine(tmp_path: Path, monkeypatch) -> None:
    """The repository's database on a machine of a profile no bundled run has."""
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "memplan.duckdb")
    db = database.ensure_database(tmp_path / "memplan.duckdb")
    newcomer = profiles.profile_of(build_record(cpu_model="Brand New CPU").row())
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": newcomer
    )
    reference = bundle.bundled_evaluations("unet3d")[0]

    choice = stored.choose_machine(db, "unet3d")

    assert (choice.key, choice.reason) == (reference.machine, machines.BUNDLED)
    assert choice.label.startswith("Intel Xeon, instruction set unknown, 2 cores")
    assert "has no unet3d runs" in choice.note


def test_runs_without_this_cpus_generation_answer_for_it_and_say_so(
    two_machines, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine that records its CPU generation (schema 7) over runs that did not."""
    db, before_schema_7, _ = two_machines
    newer = profiles.profile_of(build_record(cpu_family=25, cpu_model_number=1, **HERE).row())
    monkeypatch.setattr(
        machines, "this_profile", lambda precision="float32", framework="tensorflow": newer
    )

    choice = stored.choose_machine(db, "unet3d")

    assert newer.key != before_schema_7  # not the same profile: an unknown fact joins nothing
    assert (choice.key, choice.reason) == (before_schema_7, machines.SAME_BUT_GENERATION)
    assert "they did not record the CPU family and model" in choice.sentence()
    assert f"profile {newer.key}) has no unet3d runs" in choice.note
    assert "(family 25, model 1)" in choice.note


def test_no_runs_anywhere_says_what_loads_them(tmp_path: Path) -> None:
    db = tmp_path / "empty.duckdb"
    database.ensure_database(db)

    with pytest.raises(NoModelsError, match=f"`memplan import --bundled --db {db}` loads the"):
        stored.choose_machine(db, "unet3d")


def test_imported_runs_keep_the_profile_of_the_machine_that_measured_them(
    two_machines, tmp_path: Path
) -> None:
    db, _, elsewhere = two_machines
    exported = tmp_path / "runs.parquet"
    copy = tmp_path / "copy.duckdb"
    database.ensure_database(copy)

    exchange.export_runs(db, exported)
    exchange.import_runs(copy, exported)

    assert elsewhere in profiles.profiles_in(store.load_runs(copy))
    assert set(profiles.profile_keys(store.load_runs(copy))) == set(
        profiles.profile_keys(store.load_runs(db))
    )
