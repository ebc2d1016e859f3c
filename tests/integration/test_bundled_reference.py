"""The bundled reference sweep: present, valid, and what REFERENCE.md says it is."""

import pandas as pd

from core import store
from profiling import exchange

SIZES = list(range(32, 145, 16))
BATCHES = [1, 2, 4, 8, 16]


def test_the_bundled_export_imports_cleanly_and_covers_the_whole_grid(tmp_path):
    db = store.ensure_database(tmp_path / "fresh.duckdb")
    stored = exchange.import_runs(db, store.BUNDLED_RUNS, store.BUNDLED_SAMPLES)
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


def test_a_fresh_default_database_holds_the_bundled_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(store, "default_db_path", lambda: tmp_path / "memplan.duckdb")
    db = store.ensure_database(store.default_db_path())
    bundled = pd.read_parquet(store.BUNDLED_RUNS)
    assert len(store.load_runs(db)) == len(bundled)
