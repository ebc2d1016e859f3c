"""Sweeps on a Slurm cluster: every point one job, every record stored at home, resumable.

`run_cluster_sweep` measures the same grid as `profiling.sweep.run_sweep`, on
the nodes of a Slurm partition instead of this machine. Points are grouped by
the memory they ask for (``--mem``: the point's bound plus ``mem_margin``, or
one figure for all; the bound is the fitted upper bound of the nodes' machine
profile where its models cover the point, `modeling.guard`, else the
conservative estimate, `profiling.estimate`) and each
group is submitted as one job array through submitit (`profiling.slurm`); on
the node `profiling.slurm_job.measure` runs the point exactly as a local sweep
would and writes its record as JSON into the work directory.

Only this process writes to the database, holding its sweep lock
(`profiling.sweeplock`) as a local sweep does: it polls Slurm, ingests each
record as it appears (on disk first, `profiling.pending`) and turns a job that
ended without one into data (`profiling.slurm.OUTCOMES`). The work directory's
``manifest.json`` remembers each point's run id and job ids, so a submitter
that was killed (``kill -9``, a lost login session) loses nothing: the same
command again ingests what finished meanwhile, waits for what still runs and
submits only what is missing, and a record is stored under its run id once.
Ctrl-C or SIGTERM (the dashboard's Cancel) cancels the sweep's jobs and
records their points ``interrupted``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import stat
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from core import database, datafiles, profiles, store, workloads
from core.errors import ConfigError, DataFileError, StoreError
from core.records import PeakBound, RunRecord
from core.units import MIN_MEMORY_LIMIT_BYTES, format_bytes, format_gib
from core.workloads.base import WorkloadConfig, format_image_shape
from profiling import pending, slurm, slurm_job, sweeplock
from profiling.runner import (
    REPO_ROOT,
    STDERR_TAIL_LINES,
    RunSettings,
    skipped_record,
    tail_lines,
)
from profiling.sweep import (
    Grid,
    Precheck,
    SweepSummary,
    dominates,
    expand_grid,
    point_bounds,
    record_interrupted,
)

# --mem is the point's bound plus this share (the closed form already has margins of its
# own, a fitted bound its conformal ratio; this covers what else the job is charged for,
# such as page cache).
DEFAULT_MEM_MARGIN = 0.10
# The reference machines have 2 cores; --cpus-per-task is recorded with every run.
DEFAULT_CPUS_PER_TASK = 2
DEFAULT_MAX_PARALLEL = 8
DEFAULT_POLL_S = 5.0
# A job that ended COMPLETED wrote its record first; on a shared filesystem the file
# may show up here a little later (NFS attribute caching is typically up to 30 s).
RESULT_GRACE_S = 30.0
# A job neither squeue nor accounting knows any more, with no record: lost.
LOST_STATE = "LOST"
LOST_AFTER_S = 60.0
# Stored runs that end a point; any other stored status is measured again (as locally).
DONE_STATUSES = ("ok", "oom")
WORK_DIR_SUFFIX = ".slurm"
MANIFEST = "manifest.json"
_MIB = 2**20
# The job's own Python (submitit, the runner, memory_profiler: 170 MiB of high-water mark,
# measured with `python -c "import resource, profiling.slurm_job, submitit;
# print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"` on an AVX2 AMD EPYC, 2 cores) counts
# against --mem too: the child's limit leaves it this much, so memplan's watchdog, which
# keeps the timeline, stops a point before Slurm kills the whole job.
JOB_PROCESS_ALLOWANCE_BYTES = 256 * 2**20
# A --mem from the estimate is rounded up to whole GiB, so that points of similar size
# ask for the same and go into one job array.
MEM_STEP_BYTES = 2**30

QUEUED, RUNNING, DONE, NEW = "queued", "running", "done", "new"


@dataclass(frozen=True)
class SlurmOptions:
    """Where and how a cluster sweep's jobs run."""

    partition: str
    account: str | None = None
    max_parallel: int = DEFAULT_MAX_PARALLEL
    cpus_per_task: int = DEFAULT_CPUS_PER_TASK
    mem_margin: float = DEFAULT_MEM_MARGIN
    mem_bytes: int | None = None  # one --mem for every point instead of estimate + margin
    work_dir: Path | None = None  # default: beside the database, <stem>.slurm
    poll_s: float = DEFAULT_POLL_S

    def describe(self) -> str:
        account = f", account {self.account}" if self.account else ""
        return f"Slurm partition {self.partition}{account}"


@dataclass
class _Point:
    """One point of the sweep and how far it has got (mutable: the loop moves it along)."""

    point_id: str
    config: WorkloadConfig
    repeat: int
    bound: PeakBound  # what the point is expected to need at most, and whose word that is
    mem_bytes: int
    run_id: str
    jobs: list[str]
    state: str = NEW
    ended_at: float | None = None  # when Slurm first said the job ended, with no record yet
    missing_at: float | None = None  # when Slurm first did not know the job

    @property
    def label(self) -> str:
        return f"{format_image_shape(self.config.image_shape)} batch {self.config.batch_size}"

    @property
    def job_id(self) -> str | None:
        return self.jobs[-1] if self.jobs else None


def default_work_dir(db_path: Path) -> Path:
    """``runs.slurm/`` beside ``runs.duckdb``."""
    db_path = Path(db_path)
    return db_path.with_name(db_path.stem + WORK_DIR_SUFFIX)


def mem_request_bytes(bound: PeakBound, options: SlurmOptions) -> int:
    """The ``--mem`` of a point: the flag's figure (whole MiB), or its bound plus the margin."""
    if options.mem_bytes:
        return math.ceil(options.mem_bytes / _MIB) * _MIB
    wanted = bound.bound_bytes * (1 + options.mem_margin)
    return math.ceil(wanted / MEM_STEP_BYTES) * MEM_STEP_BYTES


def point_id(config: WorkloadConfig, settings: RunSettings, repeat: int) -> str:
    """The same point of the same protocol gets the same id in every run of the command."""
    key = {
        **workloads.config_columns(config),
        "steps": settings.steps,
        "seed": settings.seed,
        "repeat": repeat,
    }
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]


def _check(options: SlurmOptions, repeats: int) -> None:
    problems = []
    least_mem = JOB_PROCESS_ALLOWANCE_BYTES + MIN_MEMORY_LIMIT_BYTES
    if options.mem_bytes is not None and options.mem_bytes < least_mem:
        problems.append(
            f"--mem {format_bytes(options.mem_bytes)} is too small: the job's own Python takes "
            f"{JOB_PROCESS_ALLOWANCE_BYTES // _MIB} MiB and a point at least "
            f"{MIN_MEMORY_LIMIT_BYTES // _MIB} MiB more; give at least {least_mem // _MIB}MiB"
        )
    if options.max_parallel < 1:
        problems.append(f"--max-parallel must be at least 1, got {options.max_parallel}")
    if options.cpus_per_task < 1:
        problems.append(f"--cpus-per-task must be at least 1, got {options.cpus_per_task}")
    if not 0 <= options.mem_margin <= 10:
        problems.append(f"--mem-margin must be from 0 to 10 (a share), got {options.mem_margin}")
    if not options.partition.strip():
        problems.append("--partition is empty: name the Slurm partition to run on (see `sinfo`)")
    if problems:
        raise ConfigError("; ".join(problems))


# --- the work directory ---------------------------------------------------------------

# The work directory and the two folders in it that jobs read from: submitit unpickles
# ``logs/<job>_submitted.pkl`` on the node, so whoever can write there runs code as you.
WORK_SUBDIRS = ("logs", "points")
PRIVATE_MODE = 0o700


def _unsafe_because(path: Path) -> str | None:
    """Why ``path`` (an existing directory) is not private to this user; None when it is."""
    info = path.lstat()
    me = os.geteuid()
    if stat.S_ISLNK(info.st_mode):
        if info.st_uid != me:
            return f"is a symbolic link owned by uid {info.st_uid}, not by you (uid {me})"
        info = path.stat()
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != me:
        return f"is owned by uid {info.st_uid}, not by you (uid {me})"
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"is writable by {'others' if info.st_mode & stat.S_IWOTH else 'its group'} " + (
            f"(mode {stat.S_IMODE(info.st_mode):04o})"
        )
    return None


def prepare_work_dir(work_dir: Path) -> None:
    """Make ``work_dir`` and its ``logs/``, ``points/`` (mode 0700), or check existing ones.

    An existing one must be owned by this user and writable by nobody else: the
    jobs load the pickled call submitit writes there and run it as this user.
    Raises `ConfigError` naming the directory and how to fix it.
    """
    work_dir = Path(work_dir)
    for path in (work_dir, *(work_dir / name for name in WORK_SUBDIRS)):
        if path == work_dir:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            path.mkdir(mode=PRIVATE_MODE)
            os.chmod(path, PRIVATE_MODE)  # whatever the umask took away or added
            continue
        except FileExistsError:
            pass
        reason = _unsafe_because(path)
        if reason:
            raise ConfigError(
                f"the Slurm work directory {path} {reason}; its jobs run code stored there, "
                f"so it must be yours and writable only by you: `chown $(id -un) {path} && "
                f"chmod 700 {path}` if you trust what is in it, or give another --work-dir"
            )


def _load_manifest(work_dir: Path, db_path: Path) -> dict[str, Any]:
    path = work_dir / MANIFEST
    if not path.exists():
        return {"database": str(Path(db_path).resolve()), "points": {}}
    try:
        manifest = json.loads(path.read_text())
        points = manifest["points"]
        owner = manifest["database"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ConfigError(
            f"{path} is not a memplan cluster-sweep manifest ({error}); "
            "give another --work-dir or move that directory away"
        ) from None
    if owner != str(Path(db_path).resolve()):
        raise ConfigError(
            f"the work directory {work_dir} belongs to the sweeps of {owner}, not of "
            f"{Path(db_path).resolve()}; give each database its own --work-dir"
        )
    if not isinstance(points, dict):
        raise ConfigError(f"{path} has no table of points; give another --work-dir")
    return manifest


def _save_manifest(work_dir: Path, db_path: Path, points: list[_Point]) -> None:
    path = work_dir / MANIFEST
    known = _load_manifest(work_dir, db_path)["points"]
    known.update({p.point_id: {"run_id": p.run_id, "jobs": p.jobs} for p in points})
    manifest = {"database": str(Path(db_path).resolve()), "points": known}
    pending.write_atomically(path, json.dumps(manifest))


# --- records --------------------------------------------------------------------------


def _settings_for(point: _Point, settings: RunSettings) -> RunSettings:
    """The protocol of the sweep with the child's memory limit inside the job's --mem."""
    limit = max(_MIB, point.mem_bytes - JOB_PROCESS_ALLOWANCE_BYTES)
    return dataclasses.replace(settings, memory_limit_bytes=limit)


# What a job's node.json may fill in a run: the node's machine and software facts and the
# job's Slurm figures (`profiling.slurm_job.measure` writes exactly these), never a
# measurement, the configuration or how the run ended.
NODE_COLUMNS = (
    "hostname",
    "cpu_vendor",
    "cpu_model",
    "cpu_isa",
    "cpu_cores",
    "usable_cores",
    "intra_op_threads",
    "total_ram_bytes",
    "os",
    "l3_cache_bytes",
    "python_version",
    "tensorflow_version",
    "keras_version",
    "numpy_version",
    "slurm_job_id",
    "slurm_cpus_per_task",
)


def _partition_facts(point: _Point, partition: slurm.Partition) -> dict[str, Any]:
    """What ``sinfo`` says of the partition, with the CPU unknown (never fitted, no profile)."""
    return {
        "hostname": f"slurm:{partition.name}",
        "cpu_vendor": None,
        "cpu_model": profiles.UNKNOWN,
        "cpu_isa": None,
        "cpu_cores": partition.max_cpus,
        "usable_cores": None,
        "intra_op_threads": None,
        "total_ram_bytes": partition.max_memory_bytes,
        "l3_cache_bytes": None,
        "slurm_job_id": point.job_id,
    }


def _node_facts(path: Path) -> dict[str, Any]:
    """The node columns of a job's node.json; `DataFileError` if it is not an object of them."""
    try:
        facts = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as error:
        raise DataFileError(f"{path}: not readable JSON ({error})") from None
    if not isinstance(facts, dict):
        raise DataFileError(f"{path}: a {type(facts).__name__}, not an object of node facts")
    return {name: facts[name] for name in NODE_COLUMNS if name in facts}


def _unmeasured_record(
    point: _Point,
    status: str,
    message: str,
    settings: RunSettings,
    sweep_id: str,
    points_dir: Path,
    partition: slurm.Partition,
) -> RunRecord:
    """The run of a point whose job left no record, with the machine it ran on.

    The node's own facts when the job got as far as writing them and they pass
    the checks an import makes; else (the file moved aside, named on stderr)
    what ``sinfo`` says of the partition.
    """
    base = skipped_record(
        point.config,
        _settings_for(point, settings),
        message,
        sweep_id=sweep_id,
        repeat=point.repeat,
        estimate_bytes=point.bound.bound_bytes,
    )
    own = {"run_id": point.run_id, "status": status}
    record = dataclasses.replace(base, **_partition_facts(point, partition), **own)
    path = slurm_job.node_path(points_dir, point.point_id)
    if not path.exists():
        return record
    try:
        facts = _node_facts(path)
        from_node = dataclasses.replace(record, **facts)
        datafiles.check_record(path, from_node.row(), [])
    except (DataFileError, TypeError) as error:
        pending.quarantine(path, str(error))
        return record
    return from_node


# --- the sweep ------------------------------------------------------------------------


def run_cluster_sweep(
    db_path: Path,
    grid: Grid,
    settings: RunSettings,
    options: SlurmOptions,
    *,
    repeats: int = 1,
    resume: bool = True,
    command: str = "",
    show_progress: bool = True,
    precheck: Precheck | None = None,
) -> SweepSummary:
    """Measure every point of ``grid`` on ``options.partition``; ``settings`` is the protocol.

    ``settings.memory_limit_bytes`` is replaced per point by its ``--mem``: the
    bound ``precheck`` gives it (the nodes' fitted models, `modeling.guard`), else
    the closed form with margins, plus ``options.mem_margin``.
    Raises `profiling.slurm.SlurmError` when Slurm is missing or refuses, and
    `profiling.sweeplock.SweepBusyError` while another sweep writes to ``db_path``.
    """
    database.check_writable(db_path, "a sweep")
    _check(options, repeats)
    configs = expand_grid(grid, repeats)
    bounds = point_bounds(configs, precheck)
    partition = slurm.partition(options.partition)
    database.ensure_database(db_path)
    work_dir = Path(options.work_dir or default_work_dir(db_path))
    prepare_work_dir(work_dir)
    manifest = _load_manifest(work_dir, db_path)
    summary = SweepSummary(sweep_id=uuid.uuid4().hex[:12])
    total = len(configs) * repeats
    with sweeplock.hold(db_path, summary.sweep_id, command, total) as lock:
        summary.interrupted_before = sweeplock.interrupt_stale(db_path)
        summary.recovered = pending.ingest(db_path)
        store.create_sweep(db_path, summary.sweep_id, command, grid.to_dict(), total)
        lock.update(executor=options.describe())
        points = _points(db_path, bounds, repeats, settings, options, manifest, resume, summary)
        run = _ClusterRun(db_path, work_dir, points, settings, options, partition, summary, lock)
        try:
            run.drive(show_progress)
        except BaseException:
            # Ctrl-C, SIGTERM or any failure here: no job is left running unwatched.
            run.cancel()
            record_interrupted(db_path, summary.sweep_id)
            raise
    return summary


def _points(
    db_path: Path,
    bounds: dict[WorkloadConfig, PeakBound],
    repeats: int,
    settings: RunSettings,
    options: SlurmOptions,
    manifest: dict[str, Any],
    resume: bool,
    summary: SweepSummary,
) -> list[_Point]:
    """Every point, with what the work directory and the database already know of it."""
    points = []
    for config, bound in bounds.items():
        for repeat in range(repeats):
            pid = point_id(config, settings, repeat)
            known = manifest["points"].get(pid) if resume else None
            point = _Point(
                point_id=pid,
                config=config,
                repeat=repeat,
                bound=bound,
                mem_bytes=mem_request_bytes(bound, options),
                run_id=str(known["run_id"]) if known else uuid.uuid4().hex,
                jobs=[str(job) for job in known["jobs"]] if known else [],
            )
            points.append(point)
    stored = store.run_statuses(db_path, [p.run_id for p in points])
    for point in points:
        status = stored.get(point.run_id)
        if status in DONE_STATUSES:
            point.state = DONE
            summary.already_measured += 1
        elif status is not None:  # stored, but measured again (interrupted, error, ...)
            point.run_id, point.jobs = uuid.uuid4().hex, []
        elif point.jobs:
            point.state = QUEUED  # its job may still run, or have left a record: polled first
    return points


class _ClusterRun:
    """The submit-and-poll loop of one cluster sweep (state: the points and their jobs)."""

    def __init__(
        self,
        db_path: Path,
        work_dir: Path,
        points: list[_Point],
        settings: RunSettings,
        options: SlurmOptions,
        partition: slurm.Partition,
        summary: SweepSummary,
        lock: sweeplock.SweepLock,
    ) -> None:
        self.db_path = db_path
        self.work_dir = work_dir
        self.points_dir = work_dir / "points"
        self.log_dir = work_dir / "logs"
        self.points = points
        self.settings = settings
        self.options = options
        self.partition = partition
        self.summary = summary
        self.lock = lock
        self.stored_done = 0  # the progress the sweeps table has, written when it changes
        self.failed: list[tuple[WorkloadConfig, str]] = []

    # progress -------------------------------------------------------------------------

    def _count(self, state: str) -> int:
        return sum(point.state == state for point in self.points)

    def _report(self, bar: tqdm) -> None:
        done, queued, running = self._count(DONE), self._count(QUEUED), self._count(RUNNING)
        bar.n = done
        bar.set_description_str(f"{done}/{len(self.points)} points")
        bar.set_postfix_str(f"{running} running, {queued} queued", refresh=False)
        bar.refresh()
        self.lock.update(
            points_done=done,
            current_point=f"{running} running, {queued} queued on {self.options.partition}",
            point_states=[
                {"label": p.label, "state": p.state, "job_id": p.job_id} for p in self.points
            ],
        )
        if done != self.stored_done:
            store.update_sweep(self.db_path, self.summary.sweep_id, points_done=done)
            self.stored_done = done

    # the loop -------------------------------------------------------------------------

    def drive(self, show_progress: bool) -> None:
        bar = tqdm(total=len(self.points), disable=not show_progress, unit="point")
        try:
            while True:
                self._poll()
                self._submit_new()
                self._report(bar)
                if all(point.state == DONE for point in self.points):
                    break
                time.sleep(self.options.poll_s)
            store.update_sweep(
                self.db_path, self.summary.sweep_id, status="finished", finished=True
            )
        finally:
            bar.close()

    def _store(self, point: _Point, record: RunRecord) -> None:
        pending.store_record(self.db_path, record)
        point.state = DONE
        self.summary.add(record.status)
        if record.status in ("oom", "timeout"):
            self.failed.append((point.config, record.status))
            self._skip_dominated(point)

    def _record(self, point: _Point, status: str, message: str) -> None:
        record = _unmeasured_record(
            point,
            status,
            message,
            self.settings,
            self.summary.sweep_id,
            self.points_dir,
            self.partition,
        )
        self._store(point, record)

    def _skip_reason(self, point: _Point) -> str | None:
        for smaller, status in self.failed:
            if dominates(point.config, smaller):
                return (
                    f"a point no larger ({format_image_shape(smaller.image_shape)} at batch "
                    f"{smaller.batch_size}) already ended as {status} on {self.partition.name}"
                )
        if point.mem_bytes > self.partition.max_memory_bytes:
            return (
                f"needs --mem {format_gib(point.mem_bytes)}, more than any node of partition "
                f"{self.partition.name} has ({format_gib(self.partition.max_memory_bytes)})"
            )
        return None

    def _skip_dominated(self, failed: _Point) -> None:
        """Cancel the queued points that cannot fit where a smaller one did not."""
        doomed = [
            (p, reason)
            for p in self.points
            if p.state == QUEUED and p is not failed and (reason := self._skip_reason(p))
        ]
        slurm.cancel([p.job_id for p, _ in doomed if p.job_id])
        for point, reason in doomed:
            self._record(point, "skipped", reason)

    def _submit_new(self) -> None:
        fresh = [p for p in self.points if p.state == NEW]
        for point in fresh:
            reason = self._skip_reason(point)
            if reason:
                self._record(point, "skipped", reason)
        by_memory: dict[int, list[_Point]] = {}
        for point in fresh:
            if point.state == NEW:
                by_memory.setdefault(point.mem_bytes, []).append(point)
        for mem_bytes, group in sorted(by_memory.items()):
            specs = [self._write_spec(point) for point in group]
            request = slurm.JobRequest(
                partition=self.options.partition,
                account=self.options.account,
                mem_bytes=mem_bytes,
                time_s=self.settings.timeout_s,
                cpus_per_task=self.options.cpus_per_task,
                max_parallel=self.options.max_parallel,
            )
            job_ids = slurm.submit(
                slurm_job.measure, specs, request, self.log_dir, python_path=REPO_ROOT
            )
            for point, job_id in zip(group, job_ids, strict=True):
                point.jobs.append(job_id)
                point.state = QUEUED
                point.ended_at = point.missing_at = None
            _save_manifest(self.work_dir, self.db_path, group)

    def _write_spec(self, point: _Point) -> str:
        # A new attempt: what an earlier one left belongs to it, not to this one.
        slurm_job.result_path(self.points_dir, point.point_id).unlink(missing_ok=True)
        slurm_job.node_path(self.points_dir, point.point_id).unlink(missing_ok=True)
        path = slurm_job.spec_path(self.points_dir, point.point_id)
        slurm_job.PointSpec(
            point_id=point.point_id,
            run_id=point.run_id,
            workload=point.config.workload,
            config=point.config.to_dict(),
            repeat=point.repeat,
            estimate_bytes=point.bound.bound_bytes,
            settings=dataclasses.asdict(_settings_for(point, self.settings)),
        ).write(path)
        return str(path)

    def _poll(self) -> None:
        active = [p for p in self.points if p.state in (QUEUED, RUNNING)]
        if not active:
            return
        try:
            states = slurm.job_states(p.job_id for p in active if p.job_id)
        except slurm.SlurmError as error:
            print(f"warning: {error}; asking again in {self.options.poll_s:g} s", file=sys.stderr)
            return
        now = time.monotonic()
        for point in active:
            result = slurm_job.result_path(self.points_dir, point.point_id)
            state = states.get(point.job_id or "")
            if result.exists() and self._ingest(point, result, state):
                continue
            if state in slurm.QUEUED_STATES:
                point.state = QUEUED
            elif state in slurm.RUNNING_STATES:
                point.state = RUNNING
            elif state is None:
                point.missing_at = point.missing_at or now
                if now - point.missing_at >= LOST_AFTER_S:
                    self._ended(point, LOST_STATE)
            elif state != "COMPLETED" or now - (point.ended_at or now) >= RESULT_GRACE_S:
                self._ended(point, state)
            else:
                point.ended_at = point.ended_at or now

    def _ingest(self, point: _Point, result: Path, state: str | None) -> bool:
        """Store the job's record; False when it was refused and the job may yet write one.

        The file passes the checks an import makes and must be this point's run
        (its run id and configuration); anything else is moved aside and named.
        """
        try:
            record = pending.from_json(result.read_text(), result)
            config = workloads.config_columns(point.config)
            theirs = {name: getattr(record, name) for name in config}
            if record.run_id != point.run_id or theirs != config:
                raise DataFileError(
                    f"{result}: run {record.run_id} ({theirs}) is not this point's run "
                    f"{point.run_id} ({config})"
                )
        except (OSError, DataFileError) as error:
            bad = pending.quarantine(result, str(error))
            if state in slurm.QUEUED_STATES or state in slurm.RUNNING_STATES:
                return False  # its job still runs: its own record comes later
            self._record(point, "error", f"the job's record was refused ({error}); see {bad}")
            return True
        # Stored under the sweep that brought it home (an earlier submitter may have died).
        self._store(point, dataclasses.replace(record, sweep_id=self.summary.sweep_id))
        return True

    def _ended(self, point: _Point, state: str) -> None:
        """A job ended without a record: submit once more, or record how it ended."""
        if state in (*slurm.RETRIED_STATES, LOST_STATE) and len(point.jobs) < slurm.MAX_ATTEMPTS:
            point.state = NEW
            return
        job = point.job_id
        if state == LOST_STATE:
            why = (
                f"Slurm no longer knows job {job} (not in squeue, and no accounting has it) "
                "and it wrote no record"
            )
        else:
            tries = (
                f" (attempt {len(point.jobs)} of {slurm.MAX_ATTEMPTS})"
                if len(point.jobs) > 1
                else ""
            )
            why = f"Slurm job {job} ended {state}{tries} without writing its record"
        tail = tail_lines(slurm.log_path(self.log_dir, job or ""), STDERR_TAIL_LINES)
        status = slurm.outcome(state, tail)
        self._record(point, status, f"{why}; its log ends:\n{tail}" if tail else why)

    def cancel(self) -> None:
        """Cancel the jobs still queued or running and record their points interrupted."""
        active = [p for p in self.points if p.state in (QUEUED, RUNNING) and p.job_id]
        try:
            slurm.cancel([p.job_id for p in active if p.job_id])
        except slurm.SlurmError as error:
            print(f"warning: could not cancel the jobs: {error}", file=sys.stderr)
            return
        for point in active:
            try:
                self._record(
                    point, "interrupted", f"Slurm job {point.job_id} cancelled with the sweep"
                )
            except StoreError:
                return  # the database is busy: the point is measured again next time
            except Exception as error:  # the jobs are cancelled; never hide why we stopped
                print(f"warning: could not record the cancelled points: {error}", file=sys.stderr)
                return
