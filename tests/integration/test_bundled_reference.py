"""The bundled reference sweep: present, valid, and what REFERENCE.md says it is."""

import pandas as pd

from core import database, profiles, store
from profiling import exchange

SIZES = list(range(32, 145, 16))
BATCHES = [1, 2, 4, 8, 16]


def test_the_bundled_export_imports_cleanly_and_covers_the_whole_grid(tmp_path):
    db = database.ensure_database(tmp_path / "fresh.duckdb")
    stored = exchange.import_runs(db, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    runs = store.load_runs(db)
    assert stored == len(runs)

    cubes = runs[(runs["depth"] == runs["height"]) & (runs["height"] == runs["width"])]
    grid = set(zip(cubes["depth"], cubes["batch_size"], strict=True))
    assert {(s, b) for s in SIZES for b in BATCHES} <= grid, "every grid point has a record"
    assert (runs["base_filters"] == 16).all() and (runs["levels"] == 5).all()
    # What did not fit is recorded too, with its reason.
    assert {"ok", "skipped"} <= set(runs["status"])
    not_run = runs[runs["status"] == "skipped"]
    assert not_run["message"].str.len().gt(0).all()

    ok = runs[runs["status"] == "ok"]
    repeats = ok.groupby(["depth", "batch_size"]).size()
    assert (repeats >= 3).sum() >= 3, "at least 3 points measured 3 times"

    samples = store.load_samples(db)
    assert set(samples["run_id"]) == set(ok["run_id"]) | set(
        runs.loc[runs["status"] == "oom", "run_id"]
    )
    # Each stored peak is the top of its own stored timeline.
    timeline_peaks = samples.groupby("run_id")["rss_bytes"].max()
    assert (ok.set_index("run_id")["peak_sampled_bytes"] == timeline_peaks[ok["run_id"]]).all()


def test_a_fresh_default_database_holds_every_bundled_export(tmp_path, monkeypatch):
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "memplan.duckdb")
    db = database.ensure_database(database.default_db_path())
    stored = store.load_runs(db)
    for runs_file, _samples in database.BUNDLED_EXPORTS:
        bundled = pd.read_parquet(runs_file)
        assert set(bundled["run_id"]) <= set(stored["run_id"])
    assert len(stored) == sum(len(pd.read_parquet(f)) for f, _ in database.BUNDLED_EXPORTS)


def test_two_machine_profiles_of_the_u_net_ship_and_share_their_grid(tmp_path, monkeypatch):
    """The reference grid measured on the Intel Xeon and again on this development machine."""
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "memplan.duckdb")
    db = database.ensure_database(database.default_db_path())
    runs = store.load_runs(db, workload="unet3d", status="ok")
    runs["machine"] = profiles.profile_keys(runs)

    found = profiles.profiles_in(runs)
    assert [profile.cpu_vendor for profile in found.values()] == ["AMD", "Intel"]
    amd, intel = found
    assert found[amd].label == "AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21"
    assert found[intel].label == "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21"
    points = {
        key: set(zip(group["depth"], group["batch_size"], strict=True))
        for key, group in runs.groupby("machine")
    }
    assert len(points[intel]) == 33 and points[intel] <= points[amd]


def test_the_bundled_alexnet_sweep_covers_its_grid_on_one_machine(tmp_path):
    db = database.ensure_database(tmp_path / "fresh.duckdb")
    runs_file, samples_file = database.BUNDLED_EXPORTS[1]
    exchange.import_runs(db, runs_file, samples_file)
    runs = store.load_runs(db, workload="alexnet")

    grid = set(zip(runs["height"], runs["batch_size"], strict=True))
    assert {(s, b) for s in range(96, 289, 32) for b in (1, 2, 8, 32, 128)} <= grid
    assert (runs["status"] == "ok").all() and runs["depth"].isna().all()
    # One machine, one software stack: never mixed with another in a fit.
    assert runs[["cpu_model", "tensorflow_version", "cpu_cores"]].drop_duplicates().shape[0] == 1
    assert (runs.groupby(["height", "batch_size"]).size() >= 3).sum() == 3
