"""What a sweep is asked with: the grid, how each point runs, where (here or Slurm), and
their defaults, for `memplan sweep` / `calibrate` / `size --verify` and the sidebar's form.

A typed door to `profiling.sweep` (the grid), `profiling.runner` (`RunSettings`
and its defaults), `profiling.jobspec` (`SweepJob`), `profiling.lifecycle`
(`SweepPlan`), `profiling.requests` (the form's text parsed into a checked
request), `profiling.launch_target` / `slurm_points` / `slurm_workdir` (the
Slurm target) and `profiling.local_sweep` (a sweep run here), so the pages and
`memplan` import `application`, never `profiling`. Running a `SweepJob` guarded
by the fitted models is `application.sweep_job`.
"""

from __future__ import annotations

import sys

from profiling import gpu
from profiling.jobspec import SweepJob
from profiling.launch_target import SLURM_FORM_MEMORY_LIMIT, slurm_missing, slurm_options
from profiling.lifecycle import SweepPlan
from profiling.local_sweep import run_sweep
from profiling.pending import pending_dir
from profiling.requests import SweepRequest, memory_limit_text, parse_request
from profiling.runner import (
    DEFAULT_SAMPLE_INTERVAL_S,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    RunSettings,
)
from profiling.slurm_points import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    DEFAULT_POLL_S,
    SlurmOptions,
)
from profiling.slurm_workdir import default_work_dir
from profiling.sweep import (
    DEFAULT_MEMORY_FRACTION,
    GRID_KNOBS,
    KNOB_LISTS,
    Grid,
    default_memory_limit_bytes,
    grid_from_mapping,
    stable_memory_limit_bytes,
)
from profiling.sweep_job import run_here

__all__ = [
    "DEFAULT_CPUS_PER_TASK",
    "DEFAULT_MAX_PARALLEL",
    "DEFAULT_MEMORY_FRACTION",
    "DEFAULT_MEM_MARGIN",
    "DEFAULT_POLL_S",
    "DEFAULT_SAMPLE_INTERVAL_S",
    "DEFAULT_STEPS",
    "DEFAULT_TIMEOUT_S",
    "GRID_KNOBS",
    "KNOB_LISTS",
    "SLURM_FORM_MEMORY_LIMIT",
    "Grid",
    "RunSettings",
    "SlurmOptions",
    "SweepJob",
    "SweepPlan",
    "SweepRequest",
    "check_device",
    "default_memory_limit_bytes",
    "default_work_dir",
    "grid_from_mapping",
    "memory_limit_text",
    "parse_request",
    "pending_dir",
    "run_here",
    "run_sweep",
    "slurm_missing",
    "slurm_options",
    "stable_memory_limit_bytes",
]


def check_device(device: str, framework: str) -> None:
    """Refuse, in one line, a ``--device`` ``framework`` cannot train on here (`ConfigError`)."""
    gpu.check_available(device, sys.executable, framework)
