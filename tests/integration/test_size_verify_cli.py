"""``memplan size image --verify`` for real: a subprocess that runs a real sweep.

The models are fitted on synthetic runs recorded as this machine's profile (a real
fit needs ten measured configurations: minutes of TensorFlow), made pessimistic
by `PESSIMISM_BYTES`, so the answer at batch 1 is the smallest cube, 16^3, which
then really runs (one profiled child, well under a minute) under the budget as
its memory limit (``--headroom 0``: all of the budget for training). The next size
up, 18^3, is over the budget by the same model's bound, but the sweep launches it
anyway (``--run-over-bound``) and lets the budget, as its memory limit, stop it;
being far smaller than the pessimistic model says, it fits, and the answer reads as
on the safe side.

Verifying is the parent's, whichever framework its children train: the runs are
PyTorch's (``--framework torch``), whose child costs about half a TensorFlow one's
CPU (mostly TensorFlow's import); `test_calibrate_points_real` trains TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from application import verify_here
from application.stored import load_predictor
from core import database, profiles, store
from core.machine import framework_facts, machine_info, onednn_enabled, software_info
from core.workloads.unet3d import UNetConfig
from memplan import cli as memplan_cli
from modeling.closed_form_floor import replace_below_floor
from modeling.sizing import largest_image_side
from tests.conftest import build_record, build_runs

pytestmark = pytest.mark.torch  # the verification runs a real PyTorch child

REPO = Path(__file__).resolve().parents[2]
# Added to every synthetic peak: the fitted bound of 16^3 must stay above its real peak.
PESSIMISM_BYTES = 3 * 2**29
SIDE, NEXT_SIDE = 16, 18  # a 2-level network takes every even side
# A 4-filter, 2-level network in PyTorch: the verifying runs are the smallest children there are.
TINY_NETWORK = {"base_filters": 4, "levels": 2}
TINY_FLAGS = ["--base-filters", "4", "--levels", "2", "--framework", "torch"]


@pytest.fixture(scope="module")
def this_machines_models(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """A database whose synthetic runs are this machine's, with a fitted model; and a budget
    between the model's bounds of 16^3 and 18^3 at batch 1."""
    db = tmp_path_factory.mktemp("verify") / "runs.duckdb"
    database.ensure_database(db)
    here = {
        **machine_info(),
        **software_info(),
        **framework_facts("torch"),
        "onednn_enabled": onednn_enabled(),
    }
    # Neither 16^3 nor 18^3 among them: only the verification measures those.
    sides = (48, 64, 80, 96, 112, 128)
    for row in build_runs(sides=sides, network=TINY_NETWORK).to_dict("records"):
        row.pop("run_id")
        row.update(here, peak_hwm_bytes=row["peak_hwm_bytes"] + PESSIMISM_BYTES)
        store.insert_run(db, build_record(**row))
    fit = ["evaluate", "--db", str(db), "--models", "least_squares", "--seeds", "2"]
    assert memplan_cli.main([*fit, "--extrapolation-seeds", "1", "--framework", "torch"]) == 0
    key = profiles.profile_of(build_record(**here).row()).key
    model = load_predictor(db, "least_squares", "unet3d", machine=key)
    configs = [UNetConfig((side,) * 3, 1, **TINY_NETWORK) for side in (SIDE, NEXT_SIDE)]
    (low, high), _ = replace_below_floor(model, configs, model.upper_bytes(configs))
    budget = int((low + high) / 2)
    assert largest_image_side(model, budget, 1, knobs=TINY_NETWORK).side == SIDE
    return db, budget


def test_verify_measures_the_answer_for_real_and_exits_0(
    this_machines_models: tuple[Path, int],
    memplan_main: Callable[..., subprocess.CompletedProcess[str]],
) -> None:
    db, budget = this_machines_models
    if budget > verify_here.safe_limit_bytes():
        pytest.skip(f"this machine cannot give a run {budget} bytes now")

    result = subprocess.run(
        [sys.executable, "-m", "memplan", "size", "image", "--budget", f"{budget}B"]
        + ["--headroom", "0", "--batch-size", "1", *TINY_FLAGS, "--db", str(db), "--verify"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].startswith(f"largest image: {SIDE}^3 at batch 1 within ")
    assert lines[-1].startswith(f"verified: {SIDE}x{SIDE}x{SIDE} at batch 1 fits at ")
    assert f"(measured); {NEXT_SIDE}x{NEXT_SIDE}x{NEXT_SIDE} measured at " in lines[-1]
    runs = store.load_runs(db, store.RunFilter(sweep_id=store.load_sweeps(db)["sweep_id"].iloc[-1]))
    assert sorted(runs["status"]) == ["ok", "ok"] and set(runs["framework"]) == {"torch"}
    assert (runs["memory_limit_bytes"] == budget).all()

    # Without --verify, the stored run now verifies the answer (in this process: it measures
    # nothing, and a process of its own costs a second or two of CPU starting).
    again = memplan_main(
        *("size", "image", "--budget", f"{budget}B", "--headroom", "0", "--batch-size", "1"),
        *(*TINY_FLAGS, "--db", str(db)),
    )
    assert again.returncode == 0 and lines[-1] in again.stdout.splitlines()
