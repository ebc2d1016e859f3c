"""Where a launched sweep runs — this machine or a Slurm partition (no Streamlit).

The dashboard's launch form says where its sweep runs; this turns what its boxes
say into `profiling.slurm_points.SlurmOptions` (`slurm_options`, a
`ConfigError` naming the box that is wrong), which the sweep's job carries
(`profiling.requests.SweepRequest.job`). ``None`` stands for this machine
throughout: the sweep runs as it always has.

A Slurm sweep has no memory limit of its own: each point's limit is its job's
``--mem`` (its estimate plus a margin), so its `profiling.jobspec.SweepJob` has none.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from core.errors import ConfigError
from core.units import MIB, MIN_MEMORY_LIMIT_BYTES
from profiling import slurm, slurm_points
from profiling.slurm_points import SlurmOptions

# What a cluster sweep runs on this machine: sbatch and srun (submitit's submission),
# squeue (job states), scancel (Cancel) and sinfo (the partition's nodes).
SLURM_COMMANDS = ("sbatch", "srun", "squeue", "scancel", "sinfo")
# `profiling.requests.parse_request` wants a memory limit this machine can hold; a Slurm
# sweep's job drops it (module docstring), so the form passes the smallest limit a point may
# have (`core.units.MIN_MEMORY_LIMIT_BYTES`), which any machine can hold.
SLURM_FORM_MEMORY_LIMIT = f"{MIN_MEMORY_LIMIT_BYTES // MIB}MiB"


def slurm_missing() -> str | None:
    """Why a Slurm sweep cannot be launched from here (`slurm.INSTALL_HINT`); None if it can."""
    if all(shutil.which(command) for command in SLURM_COMMANDS):
        return None
    return slurm.INSTALL_HINT


def slurm_options(
    db_path: Path,
    partition: str,
    account: str = "",
    max_parallel: int = slurm_points.DEFAULT_MAX_PARALLEL,
    cpus_per_task: int = slurm_points.DEFAULT_CPUS_PER_TASK,
    work_dir: str = "",
) -> SlurmOptions:
    """Check a Slurm target as typed in a form; raise `ConfigError` saying what is wrong.

    Blank ``account`` and ``work_dir`` mean none and the default (`slurm_workdir.default_work_dir`);
    a relative ``work_dir`` is taken from the database's folder, where the default lies.
    """
    name = partition.strip()
    if not name:
        raise ConfigError("Partition: name the Slurm partition to run on (sinfo lists them)")
    if len(name.split()) > 1:
        raise ConfigError(f"Partition: {name!r} is not a partition name (it has spaces)")
    problems = [
        f"{label}: must be a whole number of at least 1, got {value!r}"
        for label, value in (("Max parallel jobs", max_parallel), ("CPUs per job", cpus_per_task))
        if isinstance(value, bool) or not isinstance(value, int) or value < 1
    ]
    if problems:
        raise ConfigError("; ".join(problems))
    folder = None
    if work_dir.strip():
        folder = Path(work_dir.strip()).expanduser()
        # The job's working directory is the repository, not the database's folder.
        folder = folder if folder.is_absolute() else Path(db_path).resolve().parent / folder
    return SlurmOptions(
        partition=name,
        account=account.strip() or None,
        max_parallel=max_parallel,
        cpus_per_task=cpus_per_task,
        work_dir=folder,
    )


def describe(target: SlurmOptions | None) -> str | None:
    """Where the sweep runs as its sweep lock will say it (`sweeplock.Holder.executor`)."""
    return None if target is None else target.describe()
