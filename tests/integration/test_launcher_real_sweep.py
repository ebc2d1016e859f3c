"""The sweep launcher end to end: a real tiny TensorFlow sweep, detached, watched, cancelled.

Each sweep profiles 16^3 volumes through a 4-filter, 2-level U-Net (a few seconds of
TensorFlow per point) into a temporary DuckDB file, launched exactly as the
dashboard's sidebar launches it.
"""

from __future__ import annotations

import time
from pathlib import Path

import psutil
import pytest

from application import bundles, stored, sweep_job
from application.refit import RefitJob
from core import database, store
from core.machine import this_profile
from modeling.stored import tables as results
from profiling import exchange, job, launcher, requests
from profiling.launcher import LauncherError
from tests.integration.conftest import profiled_children

pytestmark = pytest.mark.tensorflow

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


def tiny_request(batch_sizes: str = "1") -> requests.SweepRequest:
    return requests.parse_request(
        "16", batch_sizes, {"base_filters": "4", "levels": "2"}, 2, "4GiB"
    )


@pytest.fixture
def db(tmp_path: Path):
    path = tmp_path / "runs.duckdb"
    yield path
    if launcher.status(path).running:
        launcher.cancel(path, grace_s=5)


def test_a_launched_sweep_runs_detached_stores_its_run_and_reports_the_refit(db: Path):
    refit = RefitJob(db, quick=True)
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
    # One run is not enough to evaluate the models: the sweep still counts as finished.
    assert current.exit_codes == {"sweeping": 0, "refitting": 2}
    # The refit's own reason, whatever prefix the modeling CLI gives it (e.g. the workload).
    assert current.refit.startswith("models not refit: ")
    assert current.refit.endswith(
        "only 1 distinct measured configuration(s) (1 ok run(s)); "
        "the evaluation needs at least 10; measure more (memplan sweep)"
    )


def test_cancel_stops_a_real_sweep_which_is_marked_interrupted(db: Path):
    started = sweep_job.launch(db, tiny_request("1 2"))
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


def test_after_a_sweep_the_models_are_refit_on_every_stored_run_of_each_machine(
    tmp_path: Path,
):
    db = database.ensure_database(tmp_path / "reference.duckdb")
    exchange.import_runs(db, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    assert bundles.install_bundled_results(db)
    sweep_job.launch(db, tiny_request(), RefitJob(db, **SMALL_REFIT))
    deadline = time.monotonic() + SWEEP_TIMEOUT_S
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, current
        time.sleep(1)

    assert current.phase == job.PHASE_FINISHED and current.refit == "models refit", current
    # The new run was measured on this machine, never on the bundled Intel Xeon: the refit
    # fits the Xeon's 39 ok runs again and leaves this machine's single run to its own profile
    # (too few configurations for a fit of its own yet).
    evaluations = stored.load_evaluations(db)  # newest first
    assert evaluations["n_runs"].tolist() == [39, 39]
    assert evaluations["machine_profile"].nunique() == 1
    here = this_profile().key
    assert here not in set(evaluations["machine_profile"])
    assert len(store.load_runs(db, store.RunFilter(machine=here))) == 1
    assert {p.name for p in results.load_predictors(stored.read(db))} >= {"symbolic", "refined"}
