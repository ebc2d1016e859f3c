"""Launch one sweep as a detached background job, watch it, cancel it (no Streamlit here).

The dashboard's sidebar uses this; so can anything else. A job is a sequence of
commands — the sweep, a typed `profiling.jobspec.SweepJob` written beside the
job and run by a module the caller names, and optionally a model refit the
caller names (profiling never imports modeling) — run by `profiling.job` in a
session of its own, so a page reload, a second browser tab or a closed browser
neither kills nor duplicates it. Its files live in a folder beside the database
(`profiling.jobstatus` describes them and reads them back); ``launch.lock`` is
flock'ed exclusively while launching, shared while reading, so two tabs clicking
"Launch" at once start one job, and no reader ever sees a job half-started.

One sweep writes to a database at a time, whoever starts it: `launch` is refused
while the launched job runs *or* any sweep holds the database's sweep lock (a
CLI sweep, or the sweep of a job whose own process died), naming it; `status`
shows that sweep and `cancel` stops it.

A sweep runs on this machine or, when its job names `profiling.slurm_points.SlurmOptions`
(`profiling.launch_target`), as Slurm jobs submitted from here; cancelling
one gives it the time to cancel its jobs (`cancel_grace_s`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

from core import database
from core.errors import MemplanError
from profiling import cluster_progress, job, jobstatus, launch_target, slurm, sweeplock
from profiling.jobspec import SweepJob
from profiling.jobstatus import CANCEL_FILE, LOG_FILE, PHASE_REFITTING, PHASE_SWEEPING, JobStatus
from profiling.sweep import expand_grid

# A cancelled sweep kills its child and marks itself interrupted in well under a
# second; past this, everything left of the job is killed outright.
CANCEL_GRACE_S = 20.0
# A cancelled Slurm sweep first scancels its jobs, which a busy slurmctld may take
# up to `slurm.COMMAND_TIMEOUT_S` to answer, then records each point interrupted; a
# submitter killed before that leaves its jobs running on the cluster.
SLURM_CANCEL_GRACE_S = slurm.COMMAND_TIMEOUT_S + CANCEL_GRACE_S
# How often `cancel` looks whether the job has ended.
CANCEL_POLL_S = 0.1
# The launched sweep's `SweepJob`, as JSON, in the job's folder.
SPEC_FILE = "sweep_job.json"
# The refit's job, as JSON, beside it: what ``python -m REFIT_RUNNER REFIT_SPEC_FILE`` reads.
REFIT_SPEC_FILE = "refit_job.json"


class LauncherError(MemplanError):
    """A launch refused (a sweep already runs) or a cancel with nothing to cancel."""


@dataclass(frozen=True)
class JobCommand:
    """One command of a job: its argv, the phase it stands for, and whether it may fail."""

    phase: str
    argv: tuple[str, ...]
    optional: bool = False  # a failure is reported but does not fail the job (the refit)
    # Run only if the job's sweep stored a new ok or oom run: a refit over the same
    # runs would change nothing (`profiling.job`).
    needs_new_runs: bool = False


# --- launching -------------------------------------------------------------------------


def launch(
    db_path: Path,
    job: SweepJob,
    runner: str,
    refit_command: Sequence[str] | None = None,
    *,
    refit_needs_new_runs: bool = False,
    refit: tuple[str, str] | None = None,
) -> JobStatus:
    """Start sweep ``job`` on ``db_path`` as a detached job, then the refit if given.

    ``job`` is written, as JSON, to the job's folder (`SPEC_FILE`), and the job's sweep
    is ``python -m RUNNER SPEC_FILE``: ``runner`` names the module whose ``main`` reads
    the spec and runs it (`profiling.sweep_job.run`) with the pre-check its layer can
    give (`application.sweep_job`); no ``memplan`` command line is built. Its sweeps-table
    command is ``job.origin`` when the caller made it already (`new_origin`), else a new
    one. The refit is
    ``refit`` (a runner module and the refit job's JSON, written to `REFIT_SPEC_FILE`:
    ``python -m RUNNER REFIT_SPEC_FILE``, `application.refit`) or ``refit_command``. With
    ``refit_needs_new_runs`` the refit runs only if the sweep stored a new ``ok`` or
    ``oom`` run (the sidebar's refit); without it, always (a calibration's fit, which
    may be what is missing even when every point was measured before). Raises
    `LauncherError` (naming its pid and start) while a sweep
    runs on this database, launched here or not; for a Slurm job, `slurm.SlurmError`
    when Slurm does not answer and `ConfigError` naming the partitions when it has no
    such one. Returns the new job's status.
    """
    db_path = Path(db_path).resolve()
    if job.slurm is not None:
        missing = launch_target.slurm_missing()
        if missing:
            raise slurm.SlurmError(missing)
        # Refused now, naming the partitions there are, not in the job's log a minute later.
        slurm.partition(job.slurm.partition)
    points = len(expand_grid(job.grid)) * job.repeats
    # What the sweep records as its command: unique, so status finds this job's sweep by it.
    origin = job.origin or new_origin(job)
    job = dataclasses.replace(job, db_path=db_path, origin=origin)
    directory = jobstatus.state_dir(db_path)
    commands = [
        JobCommand(PHASE_SWEEPING, (sys.executable, "-m", runner, str(directory / SPEC_FILE)))
    ]
    specs = {SPEC_FILE: job.to_json()}
    if refit is not None:
        refit_command = (sys.executable, "-m", refit[0], str(directory / REFIT_SPEC_FILE))
        specs[REFIT_SPEC_FILE] = refit[1]
    if refit_command:
        refitting = JobCommand(PHASE_REFITTING, tuple(refit_command), optional=True)
        commands.append(dataclasses.replace(refitting, needs_new_runs=refit_needs_new_runs))
    executor = launch_target.describe(job.slurm)
    return start_job(db_path, commands, origin, points, executor, specs)


def new_origin(job: SweepJob) -> str:
    """A launched sweep's command for the sweeps table, unique to this launch: how its
    status, and a refit of what it measured (`application.refit`), find its sweep."""
    points = len(expand_grid(job.grid)) * job.repeats
    return f"launched job {uuid.uuid4().hex[:12]}: {points} {job.grid.workload} point(s)"


def start_job(
    db_path: Path,
    commands: Sequence[JobCommand],
    sweep_command: str = "",
    points_total: int | None = None,
    executor: str | None = None,
    specs: Mapping[str, str] | None = None,
) -> JobStatus:
    """Run ``commands`` in order as one detached job for ``db_path`` (see `launch`).

    ``sweep_command`` is the command line the job's sweep will store in the
    sweeps table, which is how `status` finds its points done and total;
    ``points_total`` stands in for the total until the sweep has recorded itself,
    ``executor`` (``Slurm partition debug``; None: this machine) for where it says it runs;
    ``specs``, the job files by name (the sweep job's JSON as `SPEC_FILE`, the refit's as
    `REFIT_SPEC_FILE`), are written before the job starts.
    """
    db_path = Path(db_path).resolve()
    directory = jobstatus.state_dir(db_path)
    with jobstatus.locked(directory, exclusive=True):
        _refuse_if_running(db_path, directory)
        for stale in (job.STATE_FILE, CANCEL_FILE, SPEC_FILE, REFIT_SPEC_FILE):
            (directory / stale).unlink(missing_ok=True)
        for name, text in (specs or {}).items():
            (directory / name).write_text(text)
        plan = _plan(db_path, commands, sweep_command, points_total, executor)
        job.write_json(directory / job.JOB_FILE, plan)
        process, create_time = _spawn(directory)
        plan |= {"pid": process.pid, "pgid": process.pid, "create_time": create_time}
        job.write_json(directory / job.JOB_FILE, plan)
        jobstatus.STARTED[process.pid] = process
    return status(db_path)


def _refuse_if_running(db_path: Path, directory: Path) -> None:
    """`LauncherError` when a job of ``directory`` or any other sweep writes to ``db_path``."""
    current = jobstatus.snapshot(directory)
    if current.alive:
        raise LauncherError(
            f"a sweep is already running for {db_path.name} (pid {current.pid}, started "
            f"{current.plan.get('started_at')}); wait for it to finish or cancel it first"
        )
    holder = sweeplock.holder(db_path)
    if holder is not None:
        raise LauncherError(
            f"a sweep is already running for {db_path.name} ({holder.describe()}); "
            "wait for it to finish or cancel it first"
        )


def _plan(
    db_path: Path,
    commands: Sequence[JobCommand],
    sweep_command: str,
    points_total: int | None,
    executor: str | None,
) -> dict[str, Any]:
    """The job file's plan for `start_job`'s arguments, before the job has a process."""
    return {
        "db": str(db_path),
        "started_at": job.now_iso(),
        "cwd": str(database.REPO_ROOT),
        "sweep_command": sweep_command,
        "points_total": points_total,
        "executor": executor,
        "commands": [
            {
                "phase": c.phase,
                "argv": list(c.argv),
                "optional": c.optional,
                "needs_new_runs": c.needs_new_runs,
            }
            for c in commands
        ],
        "log": str(jobstatus.state_dir(db_path) / LOG_FILE),
    }


def _spawn(directory: Path) -> tuple[subprocess.Popen, float | None]:
    """Start `profiling.job` on ``directory`` in a session of its own, its output to the log.

    Returns the process and its creation time (None when it has already ended).
    """
    with open(directory / LOG_FILE, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "profiling.job", str(directory)],
            cwd=database.REPO_ROOT,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        create_time = psutil.Process(process.pid).create_time()
    except psutil.NoSuchProcess:
        create_time = None  # it already ended; status reads its state file
    return process, create_time


# --- watching --------------------------------------------------------------------------


def status(db_path: Path, sweeps: pd.DataFrame | None = None) -> JobStatus:
    """The sweep on ``db_path``: the job launched last for it, or another sweep writing to it.

    ``sweeps`` is the sweeps table if the caller has it at hand (a cached copy);
    otherwise it is read, briefly, only when there is a sweep to show. A sweep
    the table calls running whose process is gone is marked interrupted.
    """
    db_path = Path(db_path).resolve()
    directory = jobstatus.state_dir(db_path)
    if not (directory / job.JOB_FILE).exists():
        return jobstatus.read_status(db_path, sweeps)
    with jobstatus.locked(directory, exclusive=False):
        return jobstatus.read_status(db_path, sweeps)


# --- cancelling ------------------------------------------------------------------------


def cancel_grace_s(executor: str | None) -> float:
    """How long a cancelled sweep running on ``executor`` gets before it is killed."""
    if cluster_progress.runs_on_slurm(executor):
        return SLURM_CANCEL_GRACE_S
    return CANCEL_GRACE_S


def cancel(db_path: Path, grace_s: float | None = None) -> JobStatus:
    """Stop the sweep on ``db_path``: SIGTERM first, SIGKILL to what is left ``grace_s`` later.

    Stops the launched job (its whole process group) and whatever sweep holds
    the database's sweep lock, launched here or not. A sweep stopped by SIGTERM
    discards the point in flight (a Slurm sweep cancels its jobs) and marks itself
    interrupted; if it had to be killed, its sweep row is marked interrupted here.
    ``grace_s`` defaults to what the sweep's executor needs (`cancel_grace_s`).
    """
    db_path = Path(db_path).resolve()
    directory = jobstatus.state_dir(db_path)
    current = jobstatus.Snapshot({}, {}, jobstatus.PHASE_IDLE, "", None, None)
    if (directory / job.JOB_FILE).exists():
        with jobstatus.locked(directory, exclusive=False):
            current = jobstatus.snapshot(directory)
    holder = sweeplock.holder(db_path)
    if grace_s is None:
        executor = holder.executor if holder is not None else None
        if executor is None and current.process is not None:  # its sweep has not said yet
            executor = current.plan.get("executor")
        grace_s = cancel_grace_s(executor)
    sweep = sweeplock.holder_process(holder)
    if current.process is None and sweep is None:
        if holder is not None:
            raise LauncherError(
                f"the sweep on {db_path.name} ({holder.describe()}) does not run on this "
                "machine; stop it where it runs"
            )
        raise LauncherError(f"no sweep is running for {db_path.name}; nothing to cancel")
    if current.process is not None or jobstatus.launched_it(current.plan, holder):
        (directory / CANCEL_FILE).write_text(job.now_iso())
    # The profiled child runs in a session of its own: remember it, to kill it too if need be.
    family = _family(current.process) + _family(sweep)
    group = current.plan.get("pgid", current.pid)
    if current.process is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
    if sweep is not None and (current.process is None or _group_of(sweep) != group):
        with contextlib.suppress(psutil.NoSuchProcess):
            sweep.terminate()
    if not _ended(db_path, current.process, grace_s):
        family += [p for p in _family(current.process) + _family(sweep) if p not in family]
        if current.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(family, timeout=grace_s)
        _ended(db_path, current.process, grace_s)
    # A sweep killed before it could record its end must not read as running forever.
    sweeplock.interrupt_stale_quietly(db_path)
    return status(db_path)


def _family(process: psutil.Process | None) -> list[psutil.Process]:
    if process is None:
        return []
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [process]


def _group_of(process: psutil.Process) -> int | None:
    try:
        return os.getpgid(process.pid)
    except ProcessLookupError:
        return None


def _gone(process: psutil.Process | None) -> bool:
    if process is None:
        return True
    try:
        if process.status() != psutil.STATUS_ZOMBIE:
            return False
    except psutil.NoSuchProcess:
        return True
    jobstatus.process_of(process.pid, process.create_time())  # reaps a job started here
    return True


def _ended(db_path: Path, job_process: psutil.Process | None, timeout_s: float) -> bool:
    """Wait until the job's process is gone (a zombie counts, and is reaped) and no sweep holds
    the database's sweep lock."""
    deadline = time.monotonic() + timeout_s
    while not _gone(job_process) or sweeplock.holder(db_path) is not None:
        if time.monotonic() >= deadline:
            return False
        time.sleep(CANCEL_POLL_S)
    return True
