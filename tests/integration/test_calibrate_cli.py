"""``memplan calibrate --grid`` end to end: a real profiled child on a one-point grid.

The calibration file names one point (the smallest cube the reference network
takes, 16^3 at batch 1, trained one step), so the test stays cheap; ``--no-fit``
skips the model fitting, which needs ten points. The point trains in torch: which
points are left and under which profile they land is the calibration's, whichever
framework trains them, and torch's child costs about half a TensorFlow one's CPU.
The runs must land under this machine's profile of that framework (TensorFlow runs
under its own: `test_calibrate_points_real`), and a second call (in this process: it
starts no child) must find nothing left to measure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core import profiles, store
from core.machine import this_profile

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[2]
ONE_POINT = {
    "image_sizes": [16],
    "batch_sizes": [1],
    "target_mape_pct": 5.0,
    "model": "least_squares",
    "chosen_on": "a test",
    "chosen_mape_pct": 0.0,
    "checked_on": "a test",
    "checked_mape_pct": 0.0,
    "minutes": None,
    "command": "written by tests/integration/test_calibrate_cli.py",
}


FRAMEWORK = "torch"


def calibrate_command(grids: Path, db: Path) -> list[str]:
    """``memplan calibrate --grid`` of ``grids`` into ``db``, one step a point, no fit."""
    grid = ["calibrate", "--grid", "--calibration-file", str(grids), "--framework", FRAMEWORK]
    return [*grid, "--db", str(db), "--no-fit", "--steps", "1", "--quiet"]


def test_calibrate_measures_the_grid_under_this_profile_once(tmp_path, memplan_main):
    grids = tmp_path / "calibration.json"
    grids.write_text(json.dumps({"unet3d": ONE_POINT}))
    db = tmp_path / "calib.duckdb"
    here = this_profile(framework=FRAMEWORK)

    first = subprocess.run(
        [sys.executable, "-m", "memplan", *calibrate_command(grids, db)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    assert first.returncode == 0, first.stderr
    assert "1 of 1 point(s) to measure here" in first.stdout
    assert "measured: 1 ok" in first.stdout
    runs = store.load_runs(db)
    assert runs[["depth", "batch_size", "status"]].values.tolist() == [[16, 1, "ok"]]
    assert profiles.profile_keys(runs) == [here.key]
    assert f"Machine profile: {here.label}, key {here.key}" in first.stdout

    second = memplan_main(*calibrate_command(grids, db))

    assert second.returncode == 0, second.stderr
    assert "0 of 1 point(s) to measure here" in second.stdout
    assert "measured:" not in second.stdout
    assert len(store.load_runs(db)) == 1
