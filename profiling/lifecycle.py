"""One sweep's lifecycle, whichever executor measures its points.

A sweep on this machine (`profiling.sweep`) and one on a Slurm partition
(`profiling.cluster_sweep`) live the same life, written once here (`run`): the
grid is validated and each point given its bound before anything starts; the
database's sweep lock is taken (`profiling.sweeplock`: one sweep per database, CLI
and dashboard alike); sweeps whose process died are marked ``interrupted`` and
records an earlier sweep measured but could not store are stored
(`profiling.pending`); the sweep row is created; the executor measures the
points, storing each record the moment it exists, on disk before the database
(`Sweep.store`); the sweep ends ``finished``, or, on Ctrl-C, SIGTERM or any
failure, the executor stops what it started and the sweep is marked
``interrupted`` if the database lets it within a second (else the next sweep or
the dashboard does).

The executor is what differs: it checks its own settings, prepares (a Slurm work
directory), measures the points, and aborts (kills the child in flight, cancels
the jobs).
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from core import database, store, workloads
from core.errors import StoreError
from core.records import PeakBound, RunRecord
from core.workloads.base import WorkloadConfig, format_image_shape
from profiling import pending, sweeplock
from profiling.estimate import closed_form_bound
from profiling.runner import RunSettings
from profiling.sweep import Grid, expand_grid

# How long an interrupted sweep may wait for the database to record that it was
# interrupted: it must end within 2 s of a SIGTERM, whoever holds the database.
INTERRUPT_RECORD_S = 0.8
# Statuses after which a larger point of the same network cannot fit either.
FAILED_STATUSES = ("oom", "timeout")
# Gives the points a fitted model covers a bound of its own (`modeling.guard`, wired in by
# `application.sweep_job` through `application.sweep_guard`); the others keep the closed form.
Precheck = Callable[[Sequence[WorkloadConfig]], Mapping[WorkloadConfig, PeakBound]]


@dataclass(frozen=True)
class SweepPlan:
    """What a sweep measures, into which database, and how; the same for every executor.

    ``precheck`` gives the points a fitted model covers their bound (else the closed
    form with margins); ``command`` is what the sweeps table records as its origin.
    """

    db_path: Path
    grid: Grid
    settings: RunSettings
    repeats: int = 1
    resume: bool = True
    command: str = ""
    show_progress: bool = True
    precheck: Precheck | None = None


@dataclass
class SweepSummary:
    """What a sweep did, point by point."""

    sweep_id: str
    counts: dict[str, int] = field(default_factory=dict)
    already_measured: int = 0
    recovered: int = 0  # points an earlier sweep measured but left pending, stored first
    ooms_measured_again: int = 0  # oom under a lower memory limit than this sweep's
    interrupted_before: list[str] = field(default_factory=list)  # dead sweeps marked so

    def add(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1


@dataclass
class Sweep:
    """A sweep under way: its plan, each point's bound, what it stored so far, its lock."""

    plan: SweepPlan
    bounds: dict[WorkloadConfig, PeakBound]
    summary: SweepSummary
    lock: sweeplock.SweepLock
    failed: list[tuple[WorkloadConfig, str]] = field(default_factory=list)

    @property
    def total_points(self) -> int:
        return len(self.bounds) * self.plan.repeats

    def store(self, record: RunRecord, config: WorkloadConfig) -> None:
        """Keep ``record`` (on disk first: a database locked past SIGTERM keeps it pending)."""
        pending.store_record(self.plan.db_path, record)
        self.summary.add(record.status)
        if record.status in FAILED_STATUSES:
            self.failed.append((config, record.status))

    def blocked_by(self, config: WorkloadConfig, where: str) -> str | None:
        """Why ``config`` cannot fit: a point no larger already failed ``where``; else None."""
        for smaller, status in self.failed:
            if dominates(config, smaller):
                return (
                    f"a point no larger ({format_image_shape(smaller.image_shape)} at batch "
                    f"{smaller.batch_size}) already ended as {status} {where}"
                )
        return None


class Executor(Protocol):
    """Where a sweep's points are measured: this machine, or the nodes of a partition."""

    def check(self, plan: SweepPlan) -> None:
        """Refuse the executor's own settings (`ConfigError`) before anything starts."""

    def prepare(self, plan: SweepPlan) -> None:
        """What the executor needs before the lock is taken (a partition, a work directory)."""

    def describe(self) -> str | None:
        """Where the points run, for the sweep lock's readers; None: this machine."""

    def measure(self, sweep: Sweep) -> None:
        """Measure every point, storing each record with `Sweep.store` as it comes."""

    def abort(self, sweep: Sweep) -> None:
        """Stop what `measure` started (a child, jobs) after an interrupt or a failure."""


def point_bounds(
    configs: Sequence[WorkloadConfig], precheck: Precheck | None
) -> dict[WorkloadConfig, PeakBound]:
    """Each point's bound: the fitted one ``precheck`` gives it, else the closed form."""
    fitted = precheck(configs) if precheck else {}
    return {config: fitted.get(config) or closed_form_bound(config) for config in configs}


def dominates(config: WorkloadConfig, failed: WorkloadConfig) -> bool:
    """Needs at least as much memory as ``failed``: same network, no smaller input."""
    knobs = workloads.of(config).NETWORK_KNOBS
    same_network = config.workload == failed.workload and all(
        getattr(config, knob) == getattr(failed, knob) for knob in knobs
    )
    return (
        same_network
        and config.batch_size >= failed.batch_size
        and all(a >= b for a, b in zip(config.image_shape, failed.image_shape, strict=True))
    )


@contextlib.contextmanager
def _lock_wait(seconds: float) -> Iterator[None]:
    """Wait at most ``seconds`` for the database's lock while the block runs."""
    name = database.LOCK_TIMEOUT_ENV_VAR
    before = os.environ.get(name)
    os.environ[name] = str(seconds)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


def record_interrupted(db_path: Path, sweep_id: str) -> None:
    """Mark the sweep interrupted if the database lets it at once; else a later reader will."""
    with (
        pending.signals_deferred(),
        _lock_wait(INTERRUPT_RECORD_S),
        contextlib.suppress(StoreError),
    ):
        store.interrupt_sweeps(db_path, [sweep_id])


def run(plan: SweepPlan, executor: Executor) -> SweepSummary:
    """Measure every point of ``plan.grid`` with ``executor``; what the sweep did.

    Raises `ConfigError` for a bad grid or executor setting before anything runs,
    and `profiling.sweeplock.SweepBusyError`, naming it, while another sweep writes
    to the database.
    """
    db_path = plan.db_path
    database.check_writable(db_path, "a sweep")
    executor.check(plan)
    configs = expand_grid(plan.grid, plan.repeats)
    executor.prepare(plan)
    database.ensure_database(db_path)
    bounds = point_bounds(configs, plan.precheck)
    summary = SweepSummary(sweep_id=uuid.uuid4().hex[:12])
    total = len(configs) * plan.repeats
    with sweeplock.hold(db_path, summary.sweep_id, plan.command, total) as lock:
        # Holding the lock, no other sweep runs: every sweep still "running" is dead.
        summary.interrupted_before = sweeplock.interrupt_stale(db_path)
        summary.recovered = pending.ingest(db_path)
        store.create_sweep(db_path, summary.sweep_id, plan.command, plan.grid.to_dict(), total)
        where = executor.describe()
        if where:
            lock.update(executor=where)
        sweep = Sweep(plan, bounds, summary, lock)
        try:
            executor.measure(sweep)
            store.update_sweep(db_path, summary.sweep_id, status="finished", finished=True)
        except BaseException:
            # Ctrl-C, SIGTERM or any failure here: nothing is left running unwatched.
            executor.abort(sweep)
            record_interrupted(db_path, summary.sweep_id)
            raise
    return summary
