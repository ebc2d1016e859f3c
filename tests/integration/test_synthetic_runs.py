"""The dashboard-speed benchmark's big database: synthetic runs stored as real sweeps store them."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.synthetic_runs import add_synthetic_runs
from core import database, store
from profiling import exchange


@pytest.fixture
def reference_runs_db(tmp_path: Path) -> Path:
    path = tmp_path / "speed.duckdb"
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    return path


def test_synthetic_runs_join_the_bundled_ones_as_tensorflow_runs(reference_runs_db: Path) -> None:
    before = store.load_runs(reference_runs_db)

    added = add_synthetic_runs(reference_runs_db, count=40, timelines=2)

    after = store.load_runs(reference_runs_db)
    assert len(after) == len(before) + len(added) == len(before) + 40
    synthetic = after[after["run_id"].isin(added["run_id"])]
    # Every run carries the facts a sweep records since schema 8, so the pages group it.
    assert set(synthetic["framework"]) == {"tensorflow"}
    assert set(synthetic["framework_version"]) == {"2.21.0"}
    timelines = store.load_samples(reference_runs_db)
    assert timelines["run_id"].isin(added["run_id"]).any()
