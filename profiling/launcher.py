"""Launch one sweep as a detached background job, watch it, cancel it (no Streamlit here).

The dashboard's sidebar uses this; so can anything else. A job is a sequence of
commands — ``python -m profiling sweep ...`` and optionally a model refit the
caller names (profiling never imports modeling) — run by `profiling.job` in a
session of its own, so a page reload, a second browser tab or a closed browser
neither kills nor duplicates it. Everything lives on disk, in a folder beside the
database (``data/memplan.launcher/`` for ``data/memplan.duckdb``):

- ``job.json``   written by `launch` only: the commands, the log, the job's pid,
  process group and process start time (a recycled pid is not the job);
- ``state.json`` written by the job only: its phase, each command's exit code;
- ``job.log``    the commands' output (the sweep's progress bar included);
- ``cancel``     written by `cancel`, so a job killed before it could say so
  still reads as cancelled rather than crashed;
- ``launch.lock`` flock'ed exclusively while launching, shared while reading,
  so two tabs clicking "Launch" at once start one job, and no reader ever sees a
  job that is half-started.

`status` reads these files, the process table, the log's last lines and (for
points done) the sweeps table; a job whose process is gone without having
recorded an end is reported as crashed, never as running.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd
import psutil

from core import database, store, workloads
from core.commands import parse_bytes
from core.errors import ConfigError, MemplanError, StoreError
from core.workloads import DEFAULT_WORKLOAD
from profiling import job
from profiling.sweep import Grid, expand_grid, grid_from_mapping

STATE_DIR_SUFFIX = ".launcher"
LOCK_FILE = "launch.lock"
LOG_FILE = "job.log"
CANCEL_FILE = "cancel"

PHASE_IDLE = "idle"  # no job was ever launched for this database
PHASE_SWEEPING = "sweeping"
PHASE_REFITTING = "refitting"
PHASE_CRASHED = "crashed"  # the job's process is gone and never recorded an end

# psutil's create_time has clock-tick resolution (10 ms); a pid reused by another
# process within this much of the job's start is not a realistic worry.
CREATE_TIME_TOLERANCE_S = 0.05
# A cancelled sweep kills its child and marks itself interrupted in well under a
# second; past this, everything left of the job is killed outright.
CANCEL_GRACE_S = 20.0
# How often `cancel` looks whether the job has ended.
CANCEL_POLL_S = 0.1
# The log tail shown: this many lines, read from at most this many final bytes.
TAIL_LINES = 15
TAIL_BYTES = 64 * 2**10
# tqdm's line from `profiling.sweep.run_sweep`:
#   "3/10 points, now 32 batch 2  45%|████▌     | [01:23<01:40]"
_PROGRESS = re.compile(
    r"(?P<done>\d+)/(?P<total>\d+) points(?:, now (?P<point>.+?))?\s+\d+%\|.*?\|"
    r"\s*\[(?P<elapsed>[^<\]]+)<(?P<remaining>[^\]]+)\]"
)


# The jobs this process started, kept so their exit is collected (no zombie is
# left behind) once `status` sees them end; the launching process never waits on them.
_STARTED: dict[int, subprocess.Popen] = {}


class LauncherError(MemplanError):
    """A launch refused (one already runs) or a cancel with nothing to cancel."""


@dataclass(frozen=True)
class SweepRequest:
    """A validated sweep to launch: its grid, steps per point and per-child memory limit."""

    grid: Grid
    steps: int
    memory_limit_bytes: int
    points: int  # configurations in the grid

    def sweep_args(self, db_path: Path) -> list[str]:
        """The arguments after ``python -m profiling``: every knob of the grid, as its flag."""
        args = ["sweep"]
        for knob, values in self.grid.to_dict().items():
            listed = [values] if isinstance(values, str) else values
            args += [f"--{knob.replace('_', '-')}", *map(str, listed)]
        return args + [
            "--steps",
            str(self.steps),
            "--memory-limit",
            str(self.memory_limit_bytes),
            "--db",
            str(db_path),
        ]


@dataclass(frozen=True)
class JobStatus:
    """What a database's launched job is doing, or did last."""

    running: bool
    # PHASE_IDLE; while running job.PHASE_STARTING, PHASE_SWEEPING or PHASE_REFITTING;
    # at the end one of job.FINAL_PHASES, or PHASE_CRASHED
    phase: str
    pid: int | None = None
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
    message: str = ""  # why the job failed, was cancelled or crashed

    @property
    def fraction_done(self) -> float:
        if not self.points_total:
            return 0.0
        return min(1.0, (self.points_done or 0) / self.points_total)


# --- validating a request --------------------------------------------------------------


def _words(text: str) -> list[str]:
    return text.replace(",", " ").split()


def _whole_numbers(label: str, text: str, example: str) -> list[int]:
    words = _words(text)
    if not words:
        raise ConfigError(f"{label}: give at least one, e.g. {example}")
    numbers = []
    for word in words:
        try:
            numbers.append(int(word))
        except ValueError:
            raise ConfigError(
                f"{label}: {word!r} is not a whole number; give numbers separated by spaces, "
                f"e.g. {example}"
            ) from None
    return list(dict.fromkeys(numbers))


def parse_request(
    image_sizes: str,
    batch_sizes: str,
    base_filters: str,
    steps: int,
    memory_limit: str,
    workload: str = DEFAULT_WORKLOAD,
) -> SweepRequest:
    """Check a sweep as typed in a form; raise `ConfigError` saying what is wrong and what is right.

    Sizes are separated by spaces or commas (``"32 64 96x96x64"``); the memory
    limit takes the CLI's units (``"12GiB"``). Every point of the grid is
    validated, so a grid that would fail never starts. ``base_filters`` may be
    blank for a workload without that knob.
    """
    sizes = list(dict.fromkeys(_words(image_sizes)))
    if not sizes:
        raise ConfigError("Image sizes: give at least one, e.g. 32 64 96x96x64")
    batches = _whole_numbers("Batch sizes", batch_sizes, "1 2 4")
    knobs: dict[str, list[int]] = {}
    if base_filters.strip() or "base_filters" in workloads.get(workload).NETWORK_KNOBS:
        knobs["base_filters"] = _whole_numbers("Base filters", base_filters, "16")
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ConfigError(f"Steps: must be a whole number of at least 1, got {steps!r}")
    if not memory_limit.strip():
        raise ConfigError("Memory limit: give the most one point may use, e.g. 12GiB")
    try:
        limit_bytes = parse_bytes(memory_limit)
    except argparse.ArgumentTypeError as error:
        raise ConfigError(f"Memory limit: {error}") from None
    grid = grid_from_mapping(
        {"workload": workload, "image_sizes": sizes, "batch_sizes": batches, **knobs}
    )
    points = len(expand_grid(grid))
    return SweepRequest(grid=grid, steps=steps, memory_limit_bytes=limit_bytes, points=points)


def memory_limit_text(limit_bytes: int) -> str:
    """``limit_bytes`` as the form shows it, rounded down to 0.1 GiB (never above the limit)."""
    tenths = limit_bytes * 10 // 2**30
    return f"{tenths / 10:.1f}GiB"


# --- files -----------------------------------------------------------------------------


def state_dir(db_path: Path) -> Path:
    """The launcher's folder for ``db_path``: ``<stem>.launcher`` beside it."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + STATE_DIR_SUFFIX)


@contextlib.contextmanager
def _locked(directory: Path, exclusive: bool) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / LOCK_FILE, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _process(pid: int | None, create_time: float | None) -> psutil.Process | None:
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
    started = _STARTED.get(pid)
    if started is not None and started.poll() is not None:
        del _STARTED[pid]


# --- launching -------------------------------------------------------------------------


@dataclass(frozen=True)
class JobCommand:
    """One command of a job: its argv, the phase it stands for, and whether it may fail."""

    phase: str
    argv: tuple[str, ...]
    optional: bool = False  # a failure is reported but does not fail the job (the refit)


def launch(
    db_path: Path, request: SweepRequest, refit_command: Sequence[str] | None = None
) -> JobStatus:
    """Start ``request`` against ``db_path`` as a detached job, then ``refit_command`` if given.

    Raises `LauncherError` (naming the job's pid and start) while a job launched
    for this database still runs. Returns the new job's status.
    """
    db_path = Path(db_path).resolve()
    sweep_args = request.sweep_args(db_path)
    commands = [JobCommand(PHASE_SWEEPING, (sys.executable, "-m", "profiling", *sweep_args))]
    if refit_command:
        commands.append(JobCommand(PHASE_REFITTING, tuple(refit_command), optional=True))
    # `python -m profiling sweep` stores its command line like this; status finds the sweep by it.
    sweep_command = shlex.join(["python", "-m", "profiling", *sweep_args])
    return start_job(db_path, commands, sweep_command, points_total=request.points)


def start_job(
    db_path: Path,
    commands: Sequence[JobCommand],
    sweep_command: str = "",
    points_total: int | None = None,
) -> JobStatus:
    """Run ``commands`` in order as one detached job for ``db_path`` (see `launch`).

    ``sweep_command`` is the command line the job's sweep will store in the
    sweeps table, which is how `status` finds its points done and total;
    ``points_total`` stands in for the total until the sweep has recorded itself.
    """
    db_path = Path(db_path).resolve()
    directory = state_dir(db_path)
    with _locked(directory, exclusive=True):
        current = _snapshot(directory)
        if current.alive:
            raise LauncherError(
                f"a sweep is already running for {db_path.name} (pid {current.pid}, started "
                f"{current.plan.get('started_at')}); wait for it to finish or cancel it first"
            )
        for stale in (job.STATE_FILE, CANCEL_FILE):
            (directory / stale).unlink(missing_ok=True)
        log_path = directory / LOG_FILE
        plan: dict[str, Any] = {
            "db": str(db_path),
            "started_at": job.now_iso(),
            "cwd": str(database.REPO_ROOT),
            "sweep_command": sweep_command,
            "points_total": points_total,
            "commands": [
                {"phase": c.phase, "argv": list(c.argv), "optional": c.optional} for c in commands
            ],
            "log": str(log_path),
        }
        job.write_json(directory / job.JOB_FILE, plan)
        with open(log_path, "wb") as log:
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
        plan |= {"pid": process.pid, "pgid": process.pid, "create_time": create_time}
        job.write_json(directory / job.JOB_FILE, plan)
        _STARTED[process.pid] = process
    return status(db_path)


# --- watching --------------------------------------------------------------------------


def status(db_path: Path, sweeps: pd.DataFrame | None = None) -> JobStatus:
    """The job launched last for ``db_path``.

    ``sweeps`` is the sweeps table if the caller has it at hand (a cached copy);
    otherwise it is read, briefly, only while a job has a sweep to show.
    """
    db_path = Path(db_path).resolve()
    directory = state_dir(db_path)
    if not (directory / job.JOB_FILE).exists():
        return JobStatus(running=False, phase=PHASE_IDLE)
    with _locked(directory, exclusive=False):
        return _read_status(db_path, sweeps)


@dataclass(frozen=True)
class _Snapshot:
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


def _snapshot(directory: Path) -> _Snapshot:
    plan = job.read_json(directory / job.JOB_FILE)
    state = job.read_json(directory / job.STATE_FILE)
    if not plan:
        return _Snapshot(plan, state, PHASE_IDLE, "", None, None)
    phase = state.get("phase", job.PHASE_STARTING)
    message = state.get("message", "")
    # The launcher records the pid right after starting the job, the job on its first line.
    pid = plan.get("pid") or state.get("pid")
    process = None
    if phase not in job.FINAL_PHASES:
        process = _process(pid, plan.get("create_time") or state.get("create_time"))
        if process is None and (directory / CANCEL_FILE).exists():
            phase, message = job.PHASE_CANCELLED, "cancelled"
        elif process is None:
            phase = PHASE_CRASHED
            message = "the job's process ended without recording an outcome; see the log"
    return _Snapshot(plan, state, phase, message, pid, process)


def _read_status(db_path: Path, sweeps: pd.DataFrame | None) -> JobStatus:
    directory = state_dir(db_path)
    snapshot = _snapshot(directory)
    plan, state, phase, alive = snapshot.plan, snapshot.state, snapshot.phase, snapshot.alive
    if not plan:
        return JobStatus(running=False, phase=PHASE_IDLE)
    tail = log_tail(directory / LOG_FILE)
    progress = _progress_from_log(tail)
    log_age_s = _age_s(directory / LOG_FILE)
    sweep = _sweep_row(db_path, plan, sweeps)
    done = progress.get("done", 0 if plan.get("points_total") else None)
    total = progress.get("total", plan.get("points_total"))
    if sweep is not None:
        done, total = int(sweep["points_done"]), int(sweep["points_total"])
    results = {c["phase"]: c for c in state.get("commands", [])}
    return JobStatus(
        running=alive,
        phase=phase,
        pid=snapshot.pid,
        started_at=plan.get("started_at"),
        finished_at=state.get("finished_at"),
        command=plan.get("sweep_command", ""),
        sweep_id=None if sweep is None else str(sweep["sweep_id"]),
        sweep_status=None if sweep is None else str(sweep["status"]),
        points_done=done,
        points_total=total,
        current_point=progress.get("point") if alive else None,
        elapsed_s=_live(progress.get("elapsed"), log_age_s, alive, +1),
        eta_s=_live(progress.get("remaining"), log_age_s, alive and phase == PHASE_SWEEPING, -1),
        log_tail=tail,
        exit_codes={name: int(result["exit_code"]) for name, result in results.items()},
        refit=_refit_outcome(plan, results, phase),
        message=snapshot.message,
    )


def _sweep_row(db_path: Path, plan: dict, sweeps: pd.DataFrame | None) -> pd.Series | None:
    """The sweeps-table row of this job's sweep: its command, created after the launch."""
    if sweeps is None:
        if not db_path.exists():
            return None
        try:
            sweeps = store.load_sweeps(db_path)
        except StoreError:
            return None  # locked or unreadable right now: the log's progress stands in
    if sweeps.empty:
        return None
    mine = sweeps[
        (sweeps["command"] == plan.get("sweep_command"))
        & (sweeps["created_at"] >= plan.get("started_at", ""))
    ]
    return None if mine.empty else mine.iloc[-1]


def _refit_outcome(plan: dict, results: dict[str, dict], phase: str) -> str | None:
    if not any(c["phase"] == PHASE_REFITTING for c in plan.get("commands", [])):
        return None
    result = results.get(PHASE_REFITTING)
    if result is None:
        if phase in (job.PHASE_STARTING, PHASE_SWEEPING):
            return "models will be refit when the sweep ends"
        if phase == PHASE_REFITTING:
            return "refitting the models"
        return "models not refit: the sweep did not finish"
    if result["exit_code"] == 0:
        return "models refit"
    return f"models not refit: {result.get('reason', 'exit code ' + str(result['exit_code']))}"


def log_tail(path: Path, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` lines of a log as a terminal shows them (a ``\\r`` rewrites its line)."""
    try:
        with open(path, "rb") as log:
            log.seek(max(0, log.seek(0, os.SEEK_END) - TAIL_BYTES))
            text = log.read().decode(errors="replace")
    except FileNotFoundError:
        return []
    shown = []
    for line in text.split("\n"):
        # A progress bar redraws itself after "\r"; the last non-empty redraw is what shows.
        redraws = [part for part in line.split("\r") if part.strip()]
        if redraws:
            shown.append(redraws[-1].rstrip())
    return shown[-lines:]


def _age_s(path: Path) -> float:
    try:
        return max(0.0, time.time() - path.stat().st_mtime)
    except FileNotFoundError:
        return 0.0


def clock_seconds(text: str | None) -> float | None:
    """tqdm's ``"01:23"`` or ``"1:02:03"`` in seconds; None for its ``"?"`` (no rate yet)."""
    try:
        parts = [int(part) for part in (text or "").split(":")]
    except ValueError:
        return None
    if not 2 <= len(parts) <= 3:
        return None
    seconds = 0
    for part in parts:
        seconds = seconds * 60 + part
    return float(seconds)


def _live(clock: str | None, log_age_s: float, running: bool, sign: int) -> float | None:
    """A clock read from the log, moved on by the time since the log was written.

    The progress bar is redrawn only when a point starts or ends, so while one
    runs the elapsed time grows, and the time left shrinks, past what the log says.
    """
    seconds = clock_seconds(clock)
    if seconds is None or not running:
        return seconds if sign > 0 else None
    return max(0.0, seconds + sign * log_age_s)


def duration_text(seconds: float) -> str:
    """``45 s``, ``3 min 05 s``, ``2 h 04 min``: a duration as a person reads it."""
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _progress_from_log(tail: list[str]) -> dict[str, str | int]:
    """Points done/total, the current point and the clock from the last progress line."""
    for line in reversed(tail):
        match = _PROGRESS.search(line)
        if match:
            found: dict[str, str | int] = {
                "done": int(match["done"]),
                "total": int(match["total"]),
                "elapsed": match["elapsed"].strip(),
                "remaining": match["remaining"].strip(),
            }
            if match["point"]:
                found["point"] = match["point"].strip()
            return found
    return {}


# --- cancelling ------------------------------------------------------------------------


def cancel(db_path: Path, grace_s: float = CANCEL_GRACE_S) -> JobStatus:
    """Stop the running job: SIGTERM to its process group, SIGKILL to what is left later.

    A sweep stopped by SIGTERM discards the point in flight and marks itself
    interrupted; if it had to be killed, its sweep row is marked interrupted here.
    """
    db_path = Path(db_path).resolve()
    directory = state_dir(db_path)
    with _locked(directory, exclusive=False):
        current = _snapshot(directory)
    if current.process is None:
        raise LauncherError(f"no sweep is running for {db_path.name}; nothing to cancel")
    (directory / CANCEL_FILE).write_text(job.now_iso())
    group = current.plan.get("pgid", current.pid)
    # The profiled child runs in a session of its own: remember it, to kill it too if need be.
    family = _family(current.process)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    if not _ended(directory, grace_s):
        family += [p for p in _family(current.process) if p not in family]
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)
        for member in family:
            with contextlib.suppress(psutil.NoSuchProcess):
                member.kill()
        psutil.wait_procs(family, timeout=grace_s)
        _ended(directory, grace_s)
        _mark_interrupted(db_path)
    return status(db_path)


def _family(process: psutil.Process) -> list[psutil.Process]:
    try:
        return [process, *process.children(recursive=True)]
    except psutil.NoSuchProcess:
        return [process]


def _ended(directory: Path, timeout_s: float) -> bool:
    """Wait until the job's process is gone (a zombie counts as gone, and is reaped)."""
    deadline = time.monotonic() + timeout_s
    while _snapshot(directory).alive:
        if time.monotonic() >= deadline:
            return False
        time.sleep(CANCEL_POLL_S)
    return True


def _mark_interrupted(db_path: Path) -> None:
    """A sweep killed before it could record its end must not read as running forever."""
    stopped = status(db_path)
    if stopped.sweep_id and stopped.sweep_status == store.SWEEP_RUNNING:
        store.update_sweep(db_path, stopped.sweep_id, status="interrupted", finished=True)
