"""Run a `profiling.jobspec.SweepJob`: the one way a sweep starts, here or on Slurm.

`memplan sweep` builds a job from its flags and calls `run`; a sweep launched
from the dashboard is the same job, read from its JSON by the job's own process
(`application.sweep_job`), which calls `run` too. The caller passes the
pre-check (the fitted models' bounds: profiling never imports modeling).
Ctrl-C or SIGTERM (as `KeyboardInterrupt`) discards the point in flight, or
cancels the Slurm jobs, and returns `INTERRUPTED_EXIT_CODE`; the sweep's row
then says ``interrupted``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from core.errors import INTERRUPTED_EXIT_CODE
from profiling import pending
from profiling.cluster_sweep import run_cluster_sweep
from profiling.jobspec import SweepJob
from profiling.lifecycle import Precheck, SweepPlan, SweepSummary
from profiling.local_sweep import run_sweep
from profiling.slurm_workdir import default_work_dir

SUCCESS_EXIT_CODE = 0
# A sweep every one of whose points was killed from outside measured nothing (`memplan`'s
# FAILED_EXIT_CODE).
ALL_KILLED_EXIT_CODE = 1


def plan_of(job: SweepJob, precheck: Precheck | None = None) -> SweepPlan:
    """The sweep ``job`` asks for, guarded by ``precheck``; `ConfigError` for bad settings."""
    return SweepPlan(
        job.db_path,
        job.grid,
        job.settings(),
        repeats=job.repeats,
        resume=job.resume,
        command=job.origin,
        show_progress=job.show_progress,
        precheck=precheck,
    )


def run(job: SweepJob, precheck: Precheck | None = None) -> int:
    """Sweep ``job``, print what it stored; the exit code (see the module docstring)."""
    plan = plan_of(job, precheck)
    if job.slurm is None:
        return run_here(plan, run_over_bound=job.run_over_bound)
    try:
        summary = run_cluster_sweep(plan, job.slurm)
    except KeyboardInterrupt:
        work_dir = job.slurm.work_dir or default_work_dir(job.db_path)
        print(
            "interrupted: the sweep's jobs were cancelled and their points recorded as "
            f"interrupted (its work directory is {work_dir}); "
            "run the same command to measure them again",
            file=sys.stderr,
        )
        return INTERRUPTED_EXIT_CODE
    print_summary(summary, job.db_path)
    return exit_code(summary)


def run_here(plan: SweepPlan, run_over_bound: bool = False) -> int:
    """Sweep ``plan`` on this machine, print what it stored; the exit code."""
    try:
        summary = run_sweep(plan, run_over_bound=run_over_bound)
    except KeyboardInterrupt:
        print(
            "interrupted: the point in flight was discarded (a measured point not yet "
            f"stored waits in {pending.pending_dir(plan.db_path)}); run the same command to resume",
            file=sys.stderr,
        )
        return INTERRUPTED_EXIT_CODE
    print_summary(summary, plan.db_path)
    return exit_code(summary)


def exit_code(summary: SweepSummary) -> int:
    """ALL_KILLED_EXIT_CODE when every point the sweep ran was killed: it measured nothing."""
    if not summary.counts or set(summary.counts) != {"killed"}:
        return SUCCESS_EXIT_CODE
    print(
        "every point was killed from outside memplan, so nothing was measured; run the same "
        "command to measure them again",
        file=sys.stderr,
    )
    return ALL_KILLED_EXIT_CODE


def print_summary(summary: SweepSummary, db_path: Path) -> None:
    if summary.interrupted_before or summary.recovered:  # what earlier, dead sweeps left
        dead, kept = len(summary.interrupted_before), summary.recovered
        print(f"marked {dead} dead sweep(s) interrupted; stored {kept} run(s) left pending")
    if summary.ooms_measured_again:  # resume counts an oom as done only at no lower a limit
        print(
            f"measured again {summary.ooms_measured_again} point(s) that had run out of memory "
            "under a lower memory limit than this sweep's"
        )
    counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
    print(
        f"sweep {summary.sweep_id}: {counts or 'nothing new'}"
        f"{f', {summary.already_measured} already measured' if summary.already_measured else ''}"
        f" (stored in {db_path})"
    )
