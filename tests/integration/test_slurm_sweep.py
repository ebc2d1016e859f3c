"""Sweeps through a real Slurm: the tests' one-node cluster (tests/slurm_cluster.py).

Every point is a real TensorFlow (or, where only the lifecycle is tested, torch) run in a
real Slurm job; the submitter is the real CLI in its own process, so it can be killed as a
user's would be.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from core import store
from profiling.slurm_points import JOB_PROCESS_ALLOWANCE_BYTES
from profiling.slurm_workdir import default_work_dir

REPO_ROOT = Path(__file__).resolve().parents[2]
# Two of the least points a real child can train (16^3, 4 base filters, 2 levels, 1 step):
# the claims here are Slurm's lifecycle, not the figure.
GRID = [
    *("--image-sizes", "16", "--batch-sizes", "1", "2", "--base-filters", "4"),
    *("--levels", "2", "--steps", "1"),
]
# Cancelling a job and resuming after a killed submitter are the submitter's and Slurm's,
# whichever framework the job's child trains: those tests train torch, whose child costs
# about half a TensorFlow one's CPU (mostly TensorFlow's import).
LIFECYCLE_FRAMEWORK = ("--framework", "torch")
JOB_ID = re.compile(r"^\d+(_\d+)?$")
WAIT_S = 240.0


def _sweep_command(db: Path, partition: str, *flags: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "memplan",
        "sweep",
        *GRID,
        "--executor",
        "slurm",
        "--partition",
        partition,
        "--cpus-per-task",
        "1",
        "--poll",
        "1",
        "--quiet",
        "--db",
        str(db),
        *flags,
    ]


def _start(db: Path, cluster, *flags: str) -> subprocess.Popen:
    return subprocess.Popen(
        _sweep_command(db, cluster.partition, *flags),
        cwd=REPO_ROOT,
        env=cluster.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=WAIT_S)
    return process.returncode, stdout, stderr


def _manifest_jobs(db: Path) -> dict[str, list[str]]:
    path = default_work_dir(db) / "manifest.json"
    if not path.exists():
        return {}
    points = json.loads(path.read_text())["points"]
    return {point: entry["jobs"] for point, entry in points.items()}


def _job_state(cluster, job_id: str) -> str:
    """What squeue says of a job; an array cancelled before it started is listed whole."""
    listed = cluster.command("squeue", "-h", "--array", "--states=all", "-o", "%i %T").stdout
    states = dict(line.split() for line in listed.splitlines() if line.strip())
    return states.get(job_id) or states.get(job_id.split("_")[0], "")


def _wait_until(condition, what: str, timeout_s: float = WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def _runs(db: Path) -> pd.DataFrame:
    return store.load_runs(db)


def test_a_tiny_sweep_through_slurm_lands_in_duckdb_with_its_job_ids(
    slurm_cluster, tmp_path: Path
) -> None:
    db = tmp_path / "runs.duckdb"
    code, stdout, stderr = _finish(_start(db, slurm_cluster))
    assert code == 0, stderr + slurm_cluster.logs()
    assert "2 ok" in stdout

    runs = _runs(db)
    assert sorted(runs["batch_size"]) == [1, 2]
    assert set(runs["status"]) == {"ok"}, runs["message"].tolist()
    assert all(JOB_ID.match(job) for job in runs["slurm_job_id"])
    assert set(runs["slurm_job_id"]) == {j for jobs in _manifest_jobs(db).values() for j in jobs}
    # The CPUs Slurm gave the job are recorded, and TensorFlow used that many threads.
    assert set(runs["slurm_cpus_per_task"]) == {1}
    assert set(runs["intra_op_threads"]) == {1}
    assert (runs["peak_hwm_bytes"] > 0).all()
    assert all(_job_state(slurm_cluster, job) == "COMPLETED" for job in runs["slurm_job_id"])
    assert store.load_sweeps(db)["status"].tolist() == ["finished"]

    # The same command again measures nothing: both points are stored.
    code, stdout, stderr = _finish(_start(db, slurm_cluster))
    assert code == 0, stderr
    assert "nothing new, 2 already measured" in stdout
    assert len(_runs(db)) == 2


def test_a_cancelled_job_is_recorded_as_interrupted(slurm_cluster, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    # One job at a time: the second point waits in the queue while the first runs.
    submitter = _start(db, slurm_cluster, "--max-parallel", "1", *LIFECYCLE_FRAMEWORK)
    running: list[str] = []

    def one_measuring() -> bool:
        # Started measuring: the job has written its node's facts.
        points = default_work_dir(db) / "points"
        started = [path.name.split(".")[0] for path in points.glob("*.node.json")]
        running[:] = [_manifest_jobs(db)[point][-1] for point in started]
        return bool(running)

    _wait_until(one_measuring, "a job of the sweep to start measuring")
    slurm_cluster.command("scancel", running[0], check=True)
    code, stdout, stderr = _finish(submitter)
    assert code == 0, stderr + slurm_cluster.logs()

    runs = _runs(db).set_index("slurm_job_id")
    cancelled = runs.loc[running[0]]
    assert cancelled["status"] == "interrupted"
    assert f"Slurm job {running[0]} ended CANCELLED" in cancelled["message"]
    # It started, so it is recorded against the node it ran on.
    assert cancelled["hostname"] == slurm_cluster.node_name
    others = runs.drop(index=running[0])
    assert others["status"].tolist() == ["ok"]
    assert "1 interrupted, 1 ok" in stdout


def test_a_point_over_its_jobs_memory_is_recorded_oom(slurm_cluster, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    # TensorFlow's import alone takes ~0.7 GiB: 600 MiB cannot hold the point.
    code, stdout, stderr = _finish(
        _start(db, slurm_cluster, "--mem", "600M", "--max-parallel", "1")
    )
    assert code == 0, stderr + slurm_cluster.logs()
    runs = _runs(db).sort_values("batch_size")
    # The smaller point ran out of memory; the larger one, queued behind it, was then
    # cancelled as a point that cannot fit either, or ran out of memory itself.
    assert runs["status"].iloc[0] == "oom", runs["message"].iloc[0]
    assert runs["status"].iloc[1] in ("oom", "skipped"), runs["message"].iloc[1]
    # The child may use the job's --mem less what the job's own Python needs.
    assert (runs["memory_limit_bytes"] == 600 * 2**20 - JOB_PROCESS_ALLOWANCE_BYTES).all()
    # Usually memplan's watchdog stops it inside the job (the record has its timeline). Both it
    # and Slurm sample memory, and on two loaded cores Slurm's sample can come first (a
    # clean-clone CI run, 2026-11-27: "Exceeded job memory limit" at 690 MiB): oom either way.
    message = runs["message"].iloc[0]
    assert "crossed the limit" in message or "Exceeded job memory limit" in message, message


def test_a_point_past_its_timeout_is_recorded_timeout(slurm_cluster, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    # The job's own watchdog stops the point at --timeout; Slurm's --time is minutes later.
    # One second: TensorFlow's import alone takes longer anywhere, and each second the
    # child runs before it is stopped is a second of CPU spent on nothing the test reads.
    code, _, stderr = _finish(_start(db, slurm_cluster, "--timeout", "1", "--max-parallel", "1"))
    assert code == 0, stderr + slurm_cluster.logs()
    runs = _runs(db).sort_values("batch_size")
    assert runs["status"].iloc[0] == "timeout", runs["message"].iloc[0]
    assert "1 s timeout" in runs["message"].iloc[0]
    assert runs["status"].iloc[1] in ("timeout", "skipped"), runs["message"].iloc[1]


def test_a_killed_submitter_resumes_without_measuring_twice(slurm_cluster, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    submitter = _start(db, slurm_cluster, *LIFECYCLE_FRAMEWORK)

    def both_submitted() -> bool:
        return len(_manifest_jobs(db)) == 2

    _wait_until(both_submitted, "both points to be submitted")
    submitted = _manifest_jobs(db)
    submitter.send_signal(signal.SIGKILL)  # no chance to cancel anything: the jobs run on
    submitter.wait()
    jobs = [job for jobs in submitted.values() for job in jobs]
    assert all(
        _job_state(slurm_cluster, job) in ("PENDING", "RUNNING", "COMPLETED") for job in jobs
    )

    # Again at once, while the jobs still run: it waits for them instead of submitting anew.
    code, stdout, stderr = _finish(_start(db, slurm_cluster, *LIFECYCLE_FRAMEWORK))
    assert code == 0, stderr + slurm_cluster.logs()
    assert _manifest_jobs(db) == submitted  # nothing submitted twice
    runs = _runs(db)
    assert len(runs) == 2
    assert set(runs["status"]) == {"ok"}
    assert sorted(runs["slurm_job_id"]) == sorted(jobs)
    assert "marked 1 dead sweep(s) interrupted" in stdout
    assert sorted(store.load_sweeps(db)["status"]) == ["finished", "interrupted"]


def test_sigterm_cancels_the_sweeps_jobs_and_records_them(slurm_cluster, tmp_path: Path) -> None:
    db = tmp_path / "runs.duckdb"
    submitter = _start(db, slurm_cluster)
    _wait_until(lambda: len(_manifest_jobs(db)) == 2, "both points to be submitted")
    jobs = [job for jobs in _manifest_jobs(db).values() for job in jobs]
    os.kill(submitter.pid, signal.SIGTERM)  # what the dashboard's Cancel sends
    code, _, stderr = _finish(submitter)
    assert code == 130, stderr
    assert "the sweep's jobs were cancelled" in stderr
    # A cancel that lands as the backfill starts an array task is finished by slurmd
    # ("Killing non-startable batch job: Job credential revoked"), which a loaded machine
    # can take well over 30 s to confirm: the generous limit, not a short one.
    _wait_until(
        lambda: all(_job_state(slurm_cluster, job) == "CANCELLED" for job in jobs),
        "the jobs to be cancelled",
    )
    runs = _runs(db)
    assert set(runs["status"]) == {"interrupted"}
    assert sorted(runs["slurm_job_id"]) == sorted(jobs)
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]
