"""What the sweep on a database is doing: the launched job's files, its process, the sweep lock.

`profiling.launcher` starts jobs; this reads them back (no Streamlit here). A
job's files live in a folder beside the database (``data/memplan.launcher/``
for ``data/memplan.duckdb``): ``job.json`` (its plan, pid and process start
time), ``state.json`` (written by the job: phase, exit codes), ``job.log`` and
``cancel``. The database's sweep lock (`profiling.sweeplock`) says which sweep
writes to it now, whoever started it, so:

- the launched job running: its phase, progress (sweeps table, then log) and log;
- the job's process gone but its sweep still holding the lock: still running
  (never "crashed" while the sweep runs on), and cancellable;
- another sweep holding the lock (a CLI sweep): shown as running, ``external``;
- nothing running: the job's outcome, and every sweep the table still calls
  running is marked interrupted (`profiling.sweeplock.interrupt_stale`).

A sweep on a Slurm partition (`profiling.cluster_sweep`) says where it runs
(``executor``) and the state of each point's job in its lock
(`profiling.cluster_progress` reads them).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

from core import store
from core.dbopen import file_stamp
from core.errors import StoreError
from profiling import job, joblog, sweeplock
from profiling.cluster_progress import PointState, point_states, runs_on_slurm

STATE_DIR_SUFFIX = ".launcher"
LOCK_FILE = "launch.lock"
LOG_FILE = "job.log"
CANCEL_FILE = "cancel"

PHASE_IDLE = "idle"  # no job was ever launched for this database, and no sweep runs on it
PHASE_SWEEPING = "sweeping"
PHASE_REFITTING = "refitting"
PHASE_CRASHED = "crashed"  # the job's process is gone and never recorded an end

# psutil's create_time has clock-tick resolution (10 ms); a pid reused by another
# process within this much of the job's start is not a realistic worry.
CREATE_TIME_TOLERANCE_S = 0.05

# The jobs this process started, kept so their exit is collected (no zombie is
# left behind) once `status` sees them end; the launching process never waits on them.
STARTED: dict[int, subprocess.Popen] = {}


@dataclass(frozen=True)
class JobStatus:
    """What the sweep on a database is doing: the job launched here, or another sweep."""

    running: bool
    # PHASE_IDLE; while running job.PHASE_STARTING, PHASE_SWEEPING or PHASE_REFITTING;
    # at the end one of job.FINAL_PHASES, or PHASE_CRASHED
    phase: str
    pid: int | None = None  # the job's process, or the sweep's when the job is gone
    started_at: str | None = None  # ISO 8601, UTC
    finished_at: str | None = None
    command: str = ""  # the sweep's command line, as the sweeps table stores it
    sweep_id: str | None = None
    sweep_status: str | None = None  # the sweeps table's: running, finished, interrupted
    points_done: int | None = None
    points_total: int | None = None
    current_point: str | None = None  # e.g. "32 batch 2"
    elapsed_s: float | None = None  # how long the sweep has run (tqdm's clock)
    eta_s: float | None = None  # the sweep's estimate of the time left; None while it has none
    log_tail: list[str] = field(default_factory=list)
    exit_codes: dict[str, int] = field(default_factory=dict)  # phase -> exit code
    refit: str | None = None  # None when no refit was asked
    message: str = ""  # why the job failed, was cancelled or crashed; who runs a sweep
    external: bool = False  # a sweep this launcher did not start (e.g. a CLI sweep)
    executor: str | None = None  # where the points run: None for this machine
    point_states: tuple[PointState, ...] = ()  # a cluster sweep's points, once submitted
    cancelling: bool = False  # Cancel was pressed and the sweep has not stopped yet

    @property
    def fraction_done(self) -> float:
        if not self.points_total:
            return 0.0
        return min(1.0, (self.points_done or 0) / self.points_total)

    @property
    def on_slurm(self) -> bool:
        return runs_on_slurm(self.executor)


def state_dir(db_path: Path) -> Path:
    """The launcher's folder for ``db_path``: ``<stem>.launcher`` beside it."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + STATE_DIR_SUFFIX)


@contextlib.contextmanager
def locked(directory: Path, exclusive: bool) -> Iterator[None]:
    """The launch lock: exclusive while launching, shared while reading."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def process_of(pid: int | None, create_time: float | None) -> psutil.Process | None:
    """The job's process if it still runs: same pid *and* same start time, not a zombie."""
    if not pid or create_time is None:
        return None
    try:
        process = psutil.Process(pid)
        if abs(process.create_time() - create_time) > CREATE_TIME_TOLERANCE_S:
            return None  # the pid now belongs to another process
        if process.status() == psutil.STATUS_ZOMBIE:
            _reap(pid)
            return None
        return process
    except psutil.NoSuchProcess:
        return None


def _reap(pid: int) -> None:
    """Collect the exit of a job this process started, so it leaves no zombie behind."""
    started = STARTED.get(pid)
    if started is not None and started.poll() is not None:
        del STARTED[pid]


@dataclass(frozen=True)
class Snapshot:
    """The job's files and whether its process still runs, read once."""

    plan: dict[str, Any]
    state: dict[str, Any]
    phase: str
    message: str
    pid: int | None
    process: psutil.Process | None

    @property
    def alive(self) -> bool:
        return self.process is not None


def snapshot(directory: Path) -> Snapshot:
    plan = job.read_json(directory / job.JOB_FILE)
    state = job.read_json(directory / job.STATE_FILE)
    if not plan:
        return Snapshot(plan, state, PHASE_IDLE, "", None, None)
    phase = state.get("phase", job.PHASE_STARTING)
    message = state.get("message", "")
    # The launcher records the pid right after starting the job, the job on its first line.
    pid = plan.get("pid") or state.get("pid")
    process = None
    if phase not in job.FINAL_PHASES:
        process = process_of(pid, plan.get("create_time") or state.get("create_time"))
        if process is None and (directory / CANCEL_FILE).exists():
            phase, message = job.PHASE_CANCELLED, "cancelled"
        elif process is None:
            phase = PHASE_CRASHED
            message = "the job's process ended without recording an outcome; see the log"
    return Snapshot(plan, state, phase, message, pid, process)


def launched_it(plan: dict[str, Any], current: sweeplock.Holder | None) -> bool:
    """Whether the sweep holding the lock is the one this job started (same command, later)."""
    return (
        current is not None
        and bool(plan.get("sweep_command"))
        and current.command == plan["sweep_command"]
        and (current.started_at or "") >= plan.get("started_at", "")
    )


def read_status(db_path: Path, sweeps: pd.DataFrame | None) -> JobStatus:
    """The status of ``db_path``'s sweep; call it holding the launch lock shared, if any."""
    directory = state_dir(db_path)
    snap = snapshot(directory)
    current = sweeplock.holder(db_path)
    if snap.alive or launched_it(snap.plan, current):
        return _job_status(db_path, snap, sweeps, current)
    if current is not None:
        return _other_sweep(db_path, current, sweeps)
    # Nothing runs on this database: a sweep the table calls running died.
    table = _load_sweeps(db_path, sweeps)
    if table is not None and sweeplock.interrupt_stale_quietly(db_path, table):
        table = _load_sweeps(db_path, None) if sweeps is None else table
    if not snap.plan:
        return JobStatus(running=False, phase=PHASE_IDLE)
    return _job_status(db_path, snap, table, None)


def _load_sweeps(db_path: Path, sweeps: pd.DataFrame | None) -> pd.DataFrame | None:
    """``sweeps`` if given, else the sweeps table; None when there is none to read now."""
    if sweeps is not None:
        return sweeps
    if not db_path.exists():
        return None
    try:
        return _sweeps_at(db_path, file_stamp(db_path)).copy()
    except StoreError:
        return None  # locked or unreadable right now: the log's progress stands in


# Read once per state of the file (`core.dbopen.file_stamp`: any write changes it), not on
# every status: a caller polling a running job (the command line, a test waiting for it)
# opened the database each time (~25 ms CPU on the 2-core VM). A refused read is not kept.
@functools.lru_cache(maxsize=4)
def _sweeps_at(db_path: Path, stamp: tuple[int, ...]) -> pd.DataFrame:
    return store.load_sweeps(db_path)


def _shown_status(row: pd.Series | None, current: sweeplock.Holder | None) -> str | None:
    """The row's status, but a sweep called running whose process is gone is interrupted."""
    if row is None:
        return None
    status = str(row["status"])
    alive = current is not None and current.sweep_id in (None, str(row["sweep_id"]))
    if status == store.SWEEP_RUNNING and not alive:
        return store.SWEEP_INTERRUPTED
    return status


def _job_status(
    db_path: Path,
    snap: Snapshot,
    sweeps: pd.DataFrame | None,
    current: sweeplock.Holder | None,
) -> JobStatus:
    directory = state_dir(db_path)
    plan, state = snap.plan, snap.state
    ours = current if launched_it(plan, current) else None
    orphaned = not snap.alive and ours is not None  # the job died; its sweep runs on
    running = snap.alive or orphaned
    phase = PHASE_SWEEPING if orphaned else snap.phase
    tail = joblog.log_tail(directory / LOG_FILE)
    progress = joblog.progress_from_log(tail)
    log_age_s = joblog.age_s(directory / LOG_FILE)
    sweep = job.sweep_row(plan, _load_sweeps(db_path, sweeps))
    done = progress.get("done", 0 if plan.get("points_total") else None)
    total = progress.get("total", plan.get("points_total"))
    if sweep is not None:
        done, total = int(sweep["points_done"]), int(sweep["points_total"])
    if ours is not None and ours.points_done is not None:  # fresher than a cached table
        done, total = max(done or 0, ours.points_done), ours.points_total or total
    results = {c["phase"]: c for c in state.get("commands", [])}
    message = snap.message
    if orphaned:
        message = (
            f"the job's process (pid {snap.pid}) has ended, but its sweep runs on "
            f"(pid {ours.pid}); cancelling stops it"
        )
    elif snap.phase == PHASE_CRASHED and sweep is not None and sweep["status"] == "finished":
        message = (
            "the job's process ended while its sweep ran on; the sweep finished, but "
            "nothing after it (the refit) ran"
        )
    return JobStatus(
        running=running,
        phase=phase,
        pid=ours.pid if orphaned else snap.pid,
        started_at=plan.get("started_at"),
        finished_at=state.get("finished_at"),
        command=plan.get("sweep_command", ""),
        sweep_id=None if sweep is None else str(sweep["sweep_id"]),
        sweep_status=_shown_status(sweep, current),
        points_done=done,
        points_total=total,
        current_point=progress.get("point") if running else None,
        elapsed_s=joblog.live_clock(progress.get("elapsed"), log_age_s, running, +1),
        eta_s=joblog.live_clock(
            progress.get("remaining"), log_age_s, running and phase == PHASE_SWEEPING, -1
        ),
        log_tail=tail,
        exit_codes={name: int(result["exit_code"]) for name, result in results.items()},
        refit=_refit_outcome(plan, results, phase, state.get("skipped", {})),
        message=message,
        # The plan says where the sweep runs before the sweep itself has started to.
        executor=(ours.executor if ours is not None else None) or plan.get("executor"),
        point_states=point_states(ours.point_states if ours is not None else None),
        cancelling=running and (directory / CANCEL_FILE).exists(),
    )


def _other_sweep(
    db_path: Path, current: sweeplock.Holder, sweeps: pd.DataFrame | None
) -> JobStatus:
    """A sweep this launcher did not start (a CLI sweep): what its lock and row say."""
    table = _load_sweeps(db_path, sweeps)
    row = None
    if table is not None and not table.empty and current.sweep_id:
        mine = table[table["sweep_id"] == current.sweep_id]
        row = None if mine.empty else mine.iloc[-1]
    done, total = current.points_done, current.points_total
    if row is not None:
        done, total = max(done or 0, int(row["points_done"])), int(row["points_total"])
    return JobStatus(
        running=True,
        phase=PHASE_SWEEPING,
        pid=current.pid,
        started_at=current.started_at,
        command=current.command,
        sweep_id=current.sweep_id,
        sweep_status=store.SWEEP_RUNNING,
        points_done=done,
        points_total=total,
        current_point=current.current_point,
        elapsed_s=_seconds_since(current.started_at),
        message=f"a sweep this dashboard did not launch is running ({current.describe()})",
        external=True,
        executor=current.executor,
        point_states=point_states(current.point_states),
    )


def _seconds_since(iso: str | None) -> float | None:
    try:
        started = datetime.fromisoformat(iso or "")
    except ValueError:
        return None
    return max(0.0, (datetime.now(started.tzinfo) - started).total_seconds())


def _refit_outcome(
    plan: dict, results: dict[str, dict], phase: str, skipped: dict[str, str]
) -> str | None:
    if not any(c["phase"] == PHASE_REFITTING for c in plan.get("commands", [])):
        return None
    if PHASE_REFITTING in skipped:
        return f"{skipped[PHASE_REFITTING]}: models not refit"
    result = results.get(PHASE_REFITTING)
    if result is None:
        if phase in (job.PHASE_STARTING, PHASE_SWEEPING):
            return "models will be refit when the sweep ends"
        if phase == PHASE_REFITTING:
            return "refitting the models"
        return "models not refit: the sweep did not finish"
    if result["exit_code"] == 0:
        # What the refit said it did (which profiles, which settings), where it says so.
        return result.get("outcome", job.MODELS_REFIT)
    return f"models not refit: {result.get('reason', 'exit code ' + str(result['exit_code']))}"
