"""A sweep launched onto Slurm as the dashboard's sidebar launches it: a typed job, no argv.

The launcher writes the sweep's `profiling.jobspec.SweepJob` beside the job and its
process (`python -m application.sweep_job`) submits the points to the tests'
one-node cluster (tests/slurm_cluster.py), stores them and finishes the sweep.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from application import sweep_job
from core import store
from core.frameworks import TORCH
from profiling import job, launch_target, launcher, requests
from profiling.slurm_points import SlurmOptions

WAIT_S = 300.0


def test_a_sweep_launched_onto_slurm_runs_its_job_file_and_stores_its_point(
    slurm_cluster, tmp_path: Path
) -> None:
    db = tmp_path / "runs.duckdb"
    # The least point a real child can train: the claim is the launch, not the figure, so it
    # trains torch, whose child costs about half a TensorFlow one's CPU (TensorFlow's import).
    request = requests.parse_request(
        "16", "1", {"base_filters": "4", "levels": "2"}, 1, launch_target.SLURM_FORM_MEMORY_LIMIT
    )
    request = replace(request, framework=TORCH)
    target = SlurmOptions(slurm_cluster.partition, cpus_per_task=1, poll_s=1.0)

    started = sweep_job.launch(db, request, target=target)

    assert started.running and started.executor == f"Slurm partition {slurm_cluster.partition}"
    deadline = time.monotonic() + WAIT_S
    while (current := launcher.status(db)).running:
        assert time.monotonic() < deadline, current.log_tail + slurm_cluster.logs()
        time.sleep(0.5)
    assert current.phase == job.PHASE_FINISHED, current.log_tail + slurm_cluster.logs()
    [run] = store.load_runs(db).to_dict("records")
    assert run["status"] == "ok" and run["slurm_job_id"], run["message"]
    assert run["framework"] == TORCH
    [sweep] = store.load_sweeps(db).to_dict("records")
    assert sweep["status"] == "finished" and sweep["command"].startswith("launched job ")
    assert (current.points_done, current.points_total) == (1, 1)
