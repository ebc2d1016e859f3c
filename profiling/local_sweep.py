"""Sweeps on this machine: each point in a fresh child, smallest first, resumable, host-safe.

`run_sweep` lives the sweep lifecycle of `profiling.lifecycle` with this
machine as the executor: point by point it skips what this machine profile
(`core.profiles`) already measured (resume: ``ok`` and ``oom`` points; ``killed``
and ``error`` ones are measured again, and an ``oom`` under a lower memory limit
than this sweep's), records as ``skipped`` what cannot fit
(its bound against the memory limit and the memory available now — the fitted
model's upper bound for this machine where one covers the point, else the
conservative closed-form estimate — or a smaller point that already ran out of
memory or time), and runs the rest in fresh children (`profiling.runner`). An
interrupt (Ctrl-C, SIGTERM) stops even a wait for the database's lock at once
and kills the child in flight; a measured point not stored yet waits on disk for
the next sweep.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import psutil
from tqdm import tqdm

from core import store, workloads
from core.machine import this_profile
from core.records import PeakBound, RunRecord
from core.units import GIB, check_memory_limit_floor, format_gib
from core.workloads.base import WorkloadConfig, format_image_shape
from profiling.lifecycle import Sweep, SweepPlan, SweepSummary, run
from profiling.runner import RunSettings, run_point, skipped_record
from profiling.sweep import HOST_RESERVE_BYTES

# Progress/ETA weights, from the reference machine (2 cores, TF 2.21): a point
# costs ~14 s of import and tracing plus ~4 us per voxel per sample per step.
POINT_OVERHEAD_S = 14.0
STEP_S_PER_VOXEL = 4e-6
# Stored statuses that end a point on resume, and those of a point ruled out without a run.
DONE_STATUSES = ("ok", "oom")
SKIPPED_STATUSES = ("skipped",)


def run_sweep(
    plan: SweepPlan,
    *,
    run_over_bound: bool = False,
    on_record: Callable[[RunRecord], None] | None = None,
) -> SweepSummary:
    """Measure every point of ``plan`` on this machine, ``plan.repeats`` times each.

    A point is skipped only when its bound exceeds the memory limit or the memory
    available. ``run_over_bound`` launches a point over the limit anyway and lets
    the limit stop it (verifying a sizing answer's next size up); the memory
    available is still checked. ``on_record`` sees each record as it is stored.
    """
    return run(plan, LocalExecutor(run_over_bound=run_over_bound, on_record=on_record))


def estimated_seconds(config: WorkloadConfig, steps: int) -> float:
    """A rough duration of one point, used to weight the progress bar's ETA."""
    return POINT_OVERHEAD_S + STEP_S_PER_VOXEL * config.elements * config.batch_size * (steps + 1)


def skip_reason(
    config: WorkloadConfig, bound: PeakBound, settings: RunSettings, run_over_bound: bool = False
) -> str | None:
    """Why ``config`` cannot run here: its bound over the memory limit or what is available.

    None on a GPU: the bound is of host RAM and says nothing of the device's memory (a point
    that cannot fit there is a measured ``oom``).
    """
    if settings.device != "cpu":
        return None
    estimate = f"estimated peak {format_gib(bound.bound_bytes)} ({bound.source})"
    if bound.bound_bytes > settings.memory_limit_bytes and not run_over_bound:
        return f"{estimate} exceeds the memory limit {format_gib(settings.memory_limit_bytes)}"
    room = psutil.virtual_memory().available - HOST_RESERVE_BYTES
    if bound.bound_bytes > room:
        return (
            f"{estimate} exceeds the {format_gib(room)} available now "
            f"(keeping {HOST_RESERVE_BYTES / GIB:.0f} GiB for the host)"
        )
    return None


@dataclass(frozen=True)
class Points:
    """Each configuration ``repeats`` times, in order, made one at a time as the loop asks."""

    configs: Sequence[WorkloadConfig]
    repeats: int

    def __len__(self) -> int:
        return len(self.configs) * self.repeats

    def __iter__(self) -> Iterator[tuple[WorkloadConfig, int]]:
        return ((config, repeat) for config in self.configs for repeat in range(self.repeats))


@dataclass(frozen=True)
class _Resume:
    """What this machine profile already stored, per precision: measured and skipped points,
    and the ``oom`` runs under a lower memory limit than this sweep's, measured again."""

    measured: dict[str, dict]
    skipped: dict[str, dict]
    lower_limit_ooms: dict[str, dict]

    @classmethod
    def read(cls, sweep: Sweep) -> _Resume:
        # Points count as done per machine profile, not hostname: two VMs may share a name.
        # The profile depends on the precision where oneDNN is on but cannot take its dtype,
        # and on the framework: a torch point is never done by a TensorFlow run.
        db_path, framework = sweep.plan.db_path, sweep.plan.settings.framework
        limit = sweep.plan.settings.memory_limit_bytes
        keys = {c.precision: this_profile(c.precision, framework).key for c in sweep.bounds}
        ooms = {p: store.completed_points(db_path, k, statuses=("oom",)) for p, k in keys.items()}
        return cls(
            measured={
                p: store.completed_points(db_path, k, DONE_STATUSES, oom_limit_at_least=limit)
                for p, k in keys.items()
            },
            skipped={
                p: store.completed_points(db_path, k, statuses=SKIPPED_STATUSES)
                for p, k in keys.items()
            },
            lower_limit_ooms={
                p: ooms[p] - store.completed_points(db_path, k, ("oom",), oom_limit_at_least=limit)
                for p, k in keys.items()
            },
        )

    def _count(self, counts: dict[str, dict], config: WorkloadConfig, steps: int) -> int:
        key = store.point_key({**workloads.config_columns(config), "steps": steps})
        return counts[config.precision].get(key, 0)

    def done(self, config: WorkloadConfig, steps: int, repeat: int, skipped: bool) -> bool:
        """Whether ``repeat`` of ``config`` is already stored (as skipped, or measured)."""
        return self._count(self.skipped if skipped else self.measured, config, steps) > repeat

    def oom_under_lower_limit(self, config: WorkloadConfig, steps: int, repeat: int) -> bool:
        """Whether ``repeat`` of ``config``, not done, ran out of memory under a lower limit."""
        measured = self._count(self.measured, config, steps)
        return measured + self._count(self.lower_limit_ooms, config, steps) > repeat


@dataclass
class LocalExecutor:
    """Measures a sweep's points one at a time in fresh children on this machine."""

    run_over_bound: bool = False
    on_record: Callable[[RunRecord], None] | None = None

    def check(self, plan: SweepPlan) -> None:
        check_memory_limit_floor(plan.settings.memory_limit_bytes)

    def prepare(self, plan: SweepPlan) -> None:
        """Nothing to prepare: the children start as the points come."""

    def describe(self) -> str | None:
        return None

    def abort(self, sweep: Sweep) -> None:
        """Nothing left to stop: `profiling.runner` kills the child in flight itself."""

    def measure(self, sweep: Sweep) -> None:
        plan, settings = sweep.plan, sweep.plan.settings
        points = Points(list(sweep.bounds), plan.repeats)
        # A GPU run's profile is its GPU's, which only the child reads: resuming by this
        # machine's profile would take its CPU runs for done. A GPU sweep measures again.
        on_host = plan.settings.device == "cpu"
        resume = _Resume.read(sweep) if plan.resume and on_host else None
        # A point the estimate already rules out costs nothing, so it does not inflate the ETA.
        costs = {
            config: estimated_seconds(config, settings.steps)
            if self.run_over_bound or bound.bound_bytes <= settings.memory_limit_bytes
            else 0.0
            for config, bound in sweep.bounds.items()
        }
        bar = tqdm(
            total=round(sum(costs.values()) * points.repeats),
            disable=not plan.show_progress,
            unit="s",
            bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
        )
        try:
            for done, (config, repeat) in enumerate(points):
                label = f"{format_image_shape(config.image_shape)} batch {config.batch_size}"
                bar.set_description_str(f"{done}/{len(points)} points, now {label}")
                sweep.lock.update(points_done=done, current_point=label)
                record = self._point(sweep, config, repeat, resume)
                if record is None:
                    sweep.summary.already_measured += 1
                else:
                    sweep.store(record, config)
                    if self.on_record:
                        self.on_record(record)
                store.update_sweep(plan.db_path, sweep.summary.sweep_id, points_done=done + 1)
                if record is None or record.status == "skipped":
                    # Done at once: counted as progress it would make the rate absurd and
                    # the time left read 0 s while real points remain; it leaves the total.
                    bar.total -= round(costs[config])
                    bar.refresh()
                else:
                    bar.update(round(costs[config]))
            bar.set_description_str(f"{len(points)}/{len(points)} points")
            sweep.lock.update(points_done=len(points), current_point=None)
        finally:
            bar.close()

    def _point(
        self, sweep: Sweep, config: WorkloadConfig, repeat: int, resume: _Resume | None
    ) -> RunRecord | None:
        """The record of one point, or None when resume finds it already stored."""
        settings, steps = sweep.plan.settings, sweep.plan.settings.steps
        if resume and resume.done(config, steps, repeat, skipped=False):
            return None
        bound = sweep.bounds[config]
        reason = sweep.blocked_by(config, "under the same limit") or skip_reason(
            config, bound, settings, self.run_over_bound
        )
        sweep_id, estimate = sweep.summary.sweep_id, bound.bound_bytes
        if reason:
            if resume and resume.done(config, steps, repeat, skipped=True):
                return None
            return skipped_record(
                config, settings, reason, sweep_id=sweep_id, repeat=repeat, estimate_bytes=estimate
            )
        if resume and resume.oom_under_lower_limit(config, steps, repeat):
            sweep.summary.ooms_measured_again += 1
        return run_point(
            config, settings, sweep_id=sweep_id, repeat=repeat, estimate_bytes=estimate
        )
