"""The point-by-point calibration with real TensorFlow children, on a tiny candidate grid.

The candidates are the smallest U-Nets memplan trains (16^3 and 24^3, 2 levels, 4 base
filters, batch 1 and 2, one step: a few seconds of TensorFlow each); the prior is the
bundled AVX-512 AMD EPYC profile's model. Each chosen point must be a real run under
this machine's profile, and the stored model must answer for it.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from application import stored as stored_models
from application.calibration_loop import LoopPlan, run_loop
from core import database, profiles, store
from core.machine import this_profile
from memplan.calibrate_points import one_point_measure
from modeling import calibration_model
from profiling import exchange
from profiling.runner import RunSettings

pytestmark = pytest.mark.tensorflow

GIB = 2**30


def test_the_loop_measures_chosen_points_for_real_and_stores_a_model(tmp_path: Path):
    db = tmp_path / "calib.duckdb"
    database.ensure_database(db)
    amd = database.DATA_DIR / "unet3d_amd_runs.parquet"
    exchange.import_runs(db, amd, database.DATA_DIR / "unet3d_amd_samples.parquet")
    here = this_profile()
    plan = LoopPlan(
        db,
        "unet3d",
        here,
        steps=1,
        memory_limit_bytes=8 * GIB,
        command="tests/integration/test_calibration_loop.py",
        sides=(16, 24),
        batches=(1, 2),
        knobs=(("levels", 2), ("base_filters", 4)),
    )
    log = io.StringIO()

    outcome = run_loop(plan, one_point_measure(plan, RunSettings(8 * GIB, steps=1), log))

    assert 3 <= len(outcome.points) <= 4, log.getvalue()
    assert len(outcome.steps) == len(outcome.points)
    assert log.getvalue().count("measured: 1 ok") == len(outcome.steps)
    runs = store.load_runs(db, store.RunFilter(machine=here.key))
    assert len(runs) == len(outcome.points)
    assert set(profiles.profile_keys(runs)) == {here.key}
    assert set(runs["levels"]) == {2} and set(runs["base_filters"]) == {4}
    stored = stored_models.load_predictor(db, workload="unet3d", machine=here.key)
    assert stored.name == calibration_model.NAME
    [peak] = stored.point_bytes([plan.config(16, 1)])
    measured = dict(((s, b), p) for s, b, p in outcome.points)
    assert peak == pytest.approx(measured[(16, 1)], rel=0.2)
