"""A profile calibrated point by point: the Models page shows each chosen point and why."""

from __future__ import annotations

from pathlib import Path

from application.calibration_loop import LoopPlan, find_prior, run_loop
from core import profiles, store
from core.workloads.unet3d import UNetConfig
from tests.app.helpers import open_page, shown
from tests.conftest import build_record

GIB = 2**30
FACTS = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon", "cpu_family": 6, "steps": 6}


def _calibrate(db: Path) -> tuple[str, list]:
    shape = {"depth": 32, "height": 32, "width": 32}
    here = profiles.profile_of(build_record(**FACTS, **shape).row())
    plan = LoopPlan(db, "unet3d", here, steps=6, memory_limit_bytes=19 * GIB)
    prior = find_prior(db, "unet3d", here).predictor

    def measure(side: int, batch: int) -> None:
        [value] = prior.point_bytes([UNetConfig((side,) * 3, batch)])
        cube = {"depth": side, "height": side, "width": side}
        peak = int(0.1 * GIB + 1.1 * value)
        store.insert_run(db, build_record(**FACTS, **cube, batch_size=batch, peak_hwm_bytes=peak))

    outcome = run_loop(plan, measure)
    return here.key, outcome.steps


def test_the_models_page_lists_the_points_a_calibration_chose_and_why(reference_db: Path):
    key, steps = _calibrate(reference_db)

    at = open_page("dashboard/models_page.py", workload="unet3d", machine=key)

    (expander,) = [e for e in at.expander if e.label == "How this machine was calibrated"]
    (table,) = expander.dataframe
    assert table.value["why"].tolist() == [step.sentence() for step in steps]
    assert len(steps) == 3
    assert any("Calibrated from the nearest profile's" in shown(c.value) for c in expander.caption)
