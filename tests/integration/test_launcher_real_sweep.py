"""The sweep launcher end to end: a real tiny sweep, detached, watched, cancelled.

Each sweep profiles 16^3 volumes through a 4-filter, 2-level U-Net (a few seconds
per point) into a temporary DuckDB file, launched exactly as the dashboard's
sidebar launches it. Launching, watching and refitting are the launcher's, whichever
framework trains: the sweeps run to their end train PyTorch, whose child costs about
half a TensorFlow one's CPU (mostly TensorFlow's import), the framework set on the
request as the sidebar's Framework box sets it; the cancelled one trains TensorFlow,
its default, whose import outlasts the cancel however loaded the machine.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import psutil
import pytest

from application import bundles, stored, sweep_job
from application.refit import RefitJob
from core import database, store
from core.frameworks import DEFAULT_FRAMEWORK, TORCH
from core.machine import this_profile
from profiling import exchange, job, launcher, requests
from profiling.launcher import LauncherError
from tests.integration.conftest import profiled_children

pytestmark = [pytest.mark.tensorflow, pytest.mark.torch]

SWEEP_TIMEOUT_S = 600
# The claim below is which runs the refit fits (each machine on its own), not the
# comparison: one split of each kind and the two models it asserts on. The whole
# catalogue, seeds included, costs 166 CPU s here (scripts/cpu_time.py).
SMALL_REFIT = {
    "seeds": 1,
    "extrapolation_seeds": 1,
    "quick": True,
    "models": ("refined", "symbolic"),
}


def tiny_request(batch_sizes: str = "1", framework: str = TORCH) -> requests.SweepRequest:
    typed = requests.parse_request(
        "16", batch_sizes, {"base_filters": "4", "levels": "2"}, 2, "4GiB"
    )
    return replace(typed, framework=framework)


@pytest.fixture
def db(tmp_path: Path):
    path = tmp_path / "runs.duckdb"
    yield path
    if launcher.status(path).running:
        launcher.cancel(path, grace_s=5)


def test_a_launched_sweep_runs_detached_stores_its_run_and_reports_the_refit(db: Path):
    refit = RefitJob(db, framework=TORCH, quick=True)  # the form's framework, as the sidebar's
    started = sweep_job.launch(db, tiny_request(), refit)
    assert started.running

    with pytest.raises(LauncherError, match=rf"already running .*\(pid {started.pid}, started"):
        sweep_job.launch(db, tiny_request(), refit)

    seen_points, seen_elapsed = set(), set()
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, current
        seen_points.add(current.current_point)
        seen_elapsed.add(current.elapsed_s)
        time.sleep(0.2)
    assert "16 batch 1" in seen_points  # the progress bar's current point, read from the log
    assert seen_elapsed - {None}  # the sweep's clock, read from its progress bar

    assert current.phase == job.PHASE_FINISHED, current.log_tail
    assert (current.points_done, current.points_total) == (1, 1)
    assert current.sweep_status == "finished"
    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "ok" and run["sweep_id"] == current.sweep_id
    assert (run["depth"], run["base_filters"], run["steps"]) == (16, 4, 2)
    assert run["framework"] == TORCH
    # One run is not enough to evaluate the models: the sweep still counts as finished.
    assert current.exit_codes == {"sweeping": 0, "refitting": 2}
    # The refit's own reason, whatever prefix the modeling CLI gives it (e.g. the workload).
    assert current.refit.startswith("models not refit: ")
    assert current.refit.endswith(
        "only 1 distinct measured configuration(s) (1 ok run(s)); "
        "the evaluation needs at least 10; measure more (memplan sweep)"
    )


def test_cancel_stops_a_real_sweep_which_is_marked_interrupted(db: Path):
    started = sweep_job.launch(db, tiny_request("1 2", DEFAULT_FRAMEWORK))
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while not (children := profiled_children(started.pid)):
        assert time.monotonic() < deadline and launcher.status(db).running, "no child started"
        time.sleep(0.2)

    stopped = launcher.cancel(db)

    assert not stopped.running and stopped.phase == job.PHASE_CANCELLED
    assert stopped.exit_codes == {"sweeping": 130}  # the sweep's own clean interrupt
    assert stopped.sweep_status == "interrupted"
    psutil.wait_procs(children, timeout=10)
    assert not any(child.is_running() for child in children), "the child outlived the sweep"
    assert store.load_runs(db).empty  # the point in flight was discarded


def test_after_a_sweep_only_the_profile_it_measured_is_refit(tmp_path: Path):
    db = database.ensure_database(tmp_path / "reference.duckdb")
    exchange.import_runs(db, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    assert bundles.install_bundled_results(db)
    bundled = set(stored.load_evaluations(db, workload=None)["evaluation_id"])
    # No profile named, as the sidebar's refit: `launch` makes it the sweep's own.
    sweep_job.launch(
        db,
        tiny_request(),
        RefitJob(db, "unet3d", framework=TORCH, only_changed=True, **SMALL_REFIT),
    )
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, current
        time.sleep(1)

    assert current.phase == job.PHASE_FINISHED, current.log_tail
    # The new run was measured on this machine: no bundled profile (the Intel Xeon's, the
    # EPYC's with oneDNN on and off, ...) is refit, and this machine's one run is too few
    # for a fit of its own, which the sidebar says.
    assert set(stored.load_evaluations(db, workload=None)["evaluation_id"]) == bundled
    here = this_profile(framework=TORCH)
    assert len(store.load_runs(db, store.RunFilter(machine=here.key))) == 1
    assert current.exit_codes == {"sweeping": 0, "refitting": 2}
    assert current.refit.startswith("models not refit: unet3d on ")
    assert f"(profile {here.key}): only 1 distinct measured configuration(s)" in current.refit
    # Its log: the one profile tried is this machine's.
    tried = [line for line in current.log_tail if line.startswith("evaluating ")]
    assert tried == [f"evaluating 3D U-Net (IntelAI/unet) on {here.label}"]
