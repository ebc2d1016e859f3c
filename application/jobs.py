"""The sidebar's background sweep job, watched and stopped: its status, its phases, its
Slurm points' progress, the time left it estimates, and cancelling it.

A typed door to `profiling.launcher` / `jobstatus` / `job` / `joblog` /
`cluster_progress` (launching is `application.sweep_job.launch`), so the sweep
panel imports `application`, never `profiling`.
"""

from __future__ import annotations

from profiling.cluster_progress import cluster_progress, point_table
from profiling.job import MODELS_REFIT, PHASE_CANCELLED, PHASE_FAILED, PHASE_FINISHED
from profiling.joblog import eta_caption
from profiling.jobstatus import PHASE_IDLE, PHASE_REFITTING, PHASE_SWEEPING, JobStatus
from profiling.launcher import LauncherError, cancel, status

__all__ = [
    "MODELS_REFIT",
    "PHASE_CANCELLED",
    "PHASE_FAILED",
    "PHASE_FINISHED",
    "PHASE_IDLE",
    "PHASE_REFITTING",
    "PHASE_SWEEPING",
    "JobStatus",
    "LauncherError",
    "cancel",
    "cluster_progress",
    "eta_caption",
    "point_table",
    "status",
]
