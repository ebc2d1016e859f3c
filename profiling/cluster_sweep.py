"""Sweeps on a Slurm cluster: every point one job, every record stored at home, resumable.

`run_cluster_sweep` lives the sweep lifecycle of `profiling.lifecycle`, as a
local sweep does, with the nodes of a Slurm partition as the executor. Points
are grouped by the memory they ask for (``--mem``: the point's bound plus
``mem_margin``, or one figure for all; `profiling.slurm_points`) and each group
is submitted as one job array through submitit (`profiling.slurm`); on the node
`profiling.slurm_job.measure` runs the point exactly as a local sweep would and
writes its record as JSON into the work directory (`profiling.slurm_workdir`).

Only this process writes to the database, holding its sweep lock as a local
sweep does: it polls Slurm, ingests each record as it appears (on disk first,
`profiling.pending`) and turns a job that ended without one into data
(`profiling.slurm.OUTCOMES`). The work directory's manifest remembers each
point's run id and job ids, so a submitter that was killed loses nothing: the
same command again ingests what finished meanwhile, waits for what still runs
and submits only what is missing, and a record is stored under its run id once.
Ctrl-C, SIGTERM (the dashboard's Cancel) or any failure cancels the sweep's jobs
and records their points ``interrupted``.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import Any

from tqdm import tqdm

from core import store, workloads
from core.errors import DataFileError, StoreError
from core.records import RunRecord
from core.units import format_gib
from profiling import pending, slurm, slurm_job
from profiling.lifecycle import FAILED_STATUSES, Sweep, SweepPlan, SweepSummary, run
from profiling.runner import REPO_ROOT, STDERR_TAIL_LINES, tail_lines
from profiling.slurm_points import (
    DONE,
    NEW,
    QUEUED,
    RUNNING,
    ClusterPoint,
    PlanInputs,
    SlurmOptions,
    Unmeasured,
    check_options,
    plan_points,
    settings_for,
    unmeasured_record,
)
from profiling.slurm_workdir import (
    default_work_dir,
    load_manifest,
    prepare_work_dir,
    save_manifest,
)

# A job that ended COMPLETED wrote its record first; on a shared filesystem the file
# may show up here a little later (NFS attribute caching is typically up to 30 s).
RESULT_GRACE_S = 30.0
# A job neither squeue nor accounting knows any more, with no record: lost.
LOST_STATE = "LOST"
LOST_AFTER_S = 60.0


def run_cluster_sweep(plan: SweepPlan, options: SlurmOptions) -> SweepSummary:
    """Measure every point of ``plan`` on ``options.partition``.

    ``plan.settings`` is the protocol; its memory limit is replaced per point by
    the point's ``--mem`` (its bound, `plan.precheck`'s where the nodes' fitted
    models cover it, else the closed form with margins, plus ``options.mem_margin``),
    less what the job's own Python takes. Raises `profiling.slurm.SlurmError` when
    Slurm is missing or refuses, and `profiling.sweeplock.SweepBusyError` while
    another sweep writes to the database.
    """
    return run(plan, ClusterExecutor(options))


class ClusterExecutor:
    """The submit-and-poll loop of one cluster sweep (state: the points and their jobs).

    Set up by the lifecycle (`check`, `prepare`), then `measure` holds the sweep
    it drives; the rest are its steps.
    """

    def __init__(self, options: SlurmOptions) -> None:
        self.options = options
        self.work_dir = Path(options.work_dir) if options.work_dir else None
        self.partition: slurm.Partition | None = None
        self.manifest: dict[str, Any] = {"points": {}}
        self.points: list[ClusterPoint] = []
        self.sweep: Sweep | None = None
        self.stored_done = 0  # the progress the sweeps table has, written when it changes

    # the lifecycle's steps ------------------------------------------------------------

    def check(self, plan: SweepPlan) -> None:
        check_options(self.options)

    def prepare(self, plan: SweepPlan) -> None:
        self.partition = slurm.partition(self.options.partition)
        self.work_dir = self.work_dir or default_work_dir(plan.db_path)
        prepare_work_dir(self.work_dir)
        self.manifest = load_manifest(self.work_dir, plan.db_path)

    def describe(self) -> str:
        return self.options.describe()

    def measure(self, sweep: Sweep) -> None:
        plan = sweep.plan
        self.sweep = sweep
        self.points, sweep.summary.already_measured = plan_points(
            PlanInputs(
                db_path=plan.db_path,
                bounds=sweep.bounds,
                repeats=plan.repeats,
                settings=plan.settings,
                options=self.options,
                manifest=self.manifest,
                resume=plan.resume,
            )
        )
        bar = tqdm(total=len(self.points), disable=not plan.show_progress, unit="point")
        try:
            while True:
                self._poll()
                self._submit_new()
                self._report(bar)
                if all(point.state == DONE for point in self.points):
                    break
                time.sleep(self.options.poll_s)
        finally:
            bar.close()

    def abort(self, sweep: Sweep) -> None:
        """Cancel the jobs still queued or running and record their points interrupted."""
        self.sweep = sweep
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

    # progress -------------------------------------------------------------------------

    @property
    def _sweep(self) -> Sweep:
        assert self.sweep is not None, "the lifecycle hands the sweep to measure() first"
        return self.sweep

    @property
    def points_dir(self) -> Path:
        assert self.work_dir is not None, "prepare() sets the work directory"
        return self.work_dir / "points"

    @property
    def log_dir(self) -> Path:
        assert self.work_dir is not None, "prepare() sets the work directory"
        return self.work_dir / "logs"

    def _count(self, state: str) -> int:
        return sum(point.state == state for point in self.points)

    def _report(self, bar: tqdm) -> None:
        done, queued, running = self._count(DONE), self._count(QUEUED), self._count(RUNNING)
        bar.n = done
        bar.set_description_str(f"{done}/{len(self.points)} points")
        bar.set_postfix_str(f"{running} running, {queued} queued", refresh=False)
        bar.refresh()
        self._sweep.lock.update(
            points_done=done,
            current_point=f"{running} running, {queued} queued on {self.options.partition}",
            point_states=[
                {"label": p.label, "state": p.state, "job_id": p.job_id} for p in self.points
            ],
        )
        if done != self.stored_done:
            sweep = self._sweep
            store.update_sweep(sweep.plan.db_path, sweep.summary.sweep_id, points_done=done)
            self.stored_done = done

    # the loop -------------------------------------------------------------------------

    def _store(self, point: ClusterPoint, record: RunRecord) -> None:
        self._sweep.store(record, point.config)
        point.state = DONE
        if record.status in FAILED_STATUSES:
            self._skip_dominated(point)

    def _record(self, point: ClusterPoint, status: str, message: str) -> None:
        assert self.partition is not None, "prepare() looks the partition up"
        ended = Unmeasured(
            status, message, self._sweep.summary.sweep_id, self.points_dir, self.partition
        )
        self._store(point, unmeasured_record(point, ended, self._sweep.plan.settings))

    def _skip_reason(self, point: ClusterPoint) -> str | None:
        assert self.partition is not None, "prepare() looks the partition up"
        blocked = self._sweep.blocked_by(point.config, f"on {self.partition.name}")
        if blocked:
            return blocked
        if point.mem_bytes > self.partition.max_memory_bytes:
            return (
                f"needs --mem {format_gib(point.mem_bytes)}, more than any node of partition "
                f"{self.partition.name} has ({format_gib(self.partition.max_memory_bytes)})"
            )
        return None

    def _skip_dominated(self, failed: ClusterPoint) -> None:
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
        by_memory: dict[int, list[ClusterPoint]] = {}
        for point in fresh:
            if point.state == NEW:
                by_memory.setdefault(point.mem_bytes, []).append(point)
        for mem_bytes, group in sorted(by_memory.items()):
            specs = [self._write_spec(point) for point in group]
            request = slurm.JobRequest(
                partition=self.options.partition,
                account=self.options.account,
                mem_bytes=mem_bytes,
                time_s=self._sweep.plan.settings.timeout_s,
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
            save_manifest(
                self.points_dir.parent,
                self._sweep.plan.db_path,
                {p.point_id: p.manifest_entry() for p in group},
            )

    def _write_spec(self, point: ClusterPoint) -> str:
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
            settings=dataclasses.asdict(settings_for(point, self._sweep.plan.settings)),
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

    def _ingest(self, point: ClusterPoint, result: Path, state: str | None) -> bool:
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
        self._store(point, dataclasses.replace(record, sweep_id=self._sweep.summary.sweep_id))
        return True

    def _ended(self, point: ClusterPoint, state: str) -> None:
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
