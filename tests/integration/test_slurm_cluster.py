"""The test Slurm cluster itself: jobs run, write their output, can be cancelled, and
``--mem`` is checked at submission and enforced at run time."""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path

from tests.slurm_cluster import SlurmCluster

# squeue's names for the states of a job that is not finished yet.
UNFINISHED = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "RESIZING"}
JOB_TIMEOUT_S = 15.0


def _submit(cluster: SlurmCluster, *args: str) -> str:
    result = cluster.command("sbatch", "--parsable", *args)
    assert result.returncode == 0, f"sbatch failed: {result.stderr}\n{cluster.logs()}"
    return result.stdout.strip().split(";")[0]


def _state(cluster: SlurmCluster, job_id: str) -> str:
    return cluster.command("squeue", "--states=all", "-h", "-j", job_id, "-o", "%T").stdout.strip()


def _wait_for_state(
    cluster: SlurmCluster,
    job_id: str,
    done: set[str] | None = None,
    timeout_s: float = JOB_TIMEOUT_S,
) -> str:
    """The job's state once it is in ``done`` (default: any finished state)."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = _state(cluster, job_id)
        finished = state not in UNFINISHED if done is None else state in done
        if state and finished:
            return state
        assert time.monotonic() < deadline, (
            f"job {job_id} is still {state!r} after {timeout_s:g} s\n{cluster.logs()}"
        )
        time.sleep(0.2)


def test_batch_job_completes_and_writes_its_output(slurm_cluster: SlurmCluster, tmp_path: Path):
    output = tmp_path / "hi.out"
    job_id = _submit(slurm_cluster, f"--output={output}", "--wrap", "echo hi")
    assert _wait_for_state(slurm_cluster, job_id) == "COMPLETED"
    assert output.read_text().strip() == "hi"
    # No slurmdbd: sacct only answers from the job completion file (-c).
    deadline = time.monotonic() + 5
    while True:
        completion = slurm_cluster.command(
            "sacct", "-c", "-X", "-j", job_id, "-o", "JobID,State", "--parsable2", "--noheader"
        ).stdout.split()
        if completion or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert completion == [f"{job_id}|COMPLETED"]


def test_scancel_ends_a_running_job_as_cancelled(slurm_cluster: SlurmCluster, tmp_path: Path):
    job_id = _submit(slurm_cluster, f"--output={tmp_path / 'sleep.out'}", "--wrap", "sleep 300")
    _wait_for_state(slurm_cluster, job_id, {"RUNNING"})
    slurm_cluster.command("scancel", job_id, check=True)
    assert _wait_for_state(slurm_cluster, job_id) == "CANCELLED"
    details = slurm_cluster.command("scontrol", "show", "job", job_id, check=True).stdout
    assert "JobState=CANCELLED" in details


def test_memory_above_the_node_is_refused_at_submission(slurm_cluster: SlurmCluster):
    result = slurm_cluster.command(
        "sbatch", f"--mem={slurm_cluster.memory_mb + 1024}M", "--wrap", "true"
    )
    assert result.returncode != 0
    assert "Memory specification can not be satisfied" in result.stderr


def test_job_over_its_memory_is_killed(slurm_cluster: SlurmCluster, tmp_path: Path):
    hog = "x = bytearray(800 * 2**20); import time; time.sleep(20)"
    job_id = _submit(
        slurm_cluster,
        "--mem=200M",
        f"--output={tmp_path / 'hog.out'}",
        "--wrap",
        f"{shlex.quote(sys.executable)} -c {shlex.quote(hog)}",
    )
    assert _wait_for_state(slurm_cluster, job_id) == "FAILED"
