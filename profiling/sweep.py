"""Sweeps: a grid of configurations, measured smallest first, resumable, host-safe.

`expand_grid` validates every point before anything runs. `run_sweep` then
takes the database's sweep lock (`profiling.sweeplock`: one sweep per database,
CLI and dashboard alike), stores what an earlier sweep measured but could not
store (`profiling.pending`), marks ``interrupted`` the sweeps whose process died,
and, point by point: skips what this machine profile (`core.profiles`) already
measured (resume: ``ok`` and ``oom`` points; ``killed`` and ``error`` ones are
measured again), records as ``skipped`` what cannot fit (its bound against the memory limit
and the memory available now — the fitted model's upper bound for this machine
where one covers the point, else the conservative closed-form estimate — or a
smaller point that already ran out of memory or time), runs the rest in fresh children,
and stores each record the moment it exists, on disk before the database. An
interrupt (Ctrl-C, SIGTERM) stops even a wait for the database's lock at once,
kills the child in flight, keeps a measured point that was not stored yet on
disk for the next sweep and marks the sweep ``interrupted`` if the database
lets it within a second (else the next sweep or the dashboard does).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil
from tqdm import tqdm

from core import database, store, workloads
from core.errors import ConfigError, StoreError
from core.machine import this_profile
from core.records import PeakBound, RunRecord
from core.settings import read_settings_file
from core.units import GIB, check_memory_limit_floor, format_gib
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import PRECISIONS, WorkloadConfig, format_image_shape
from profiling import pending, sweeplock
from profiling.estimate import closed_form_bound, estimate_peak_bytes
from profiling.runner import RunSettings, run_point, skipped_record

# The default memory limit: this share of the machine's RAM...
DEFAULT_MEMORY_FRACTION = 0.75
# ...and never closer than this to what is available when a point starts, so
# the host keeps room for itself and a sweep never pushes it into swap.
HOST_RESERVE_BYTES = 2 * 2**30
# Progress/ETA weights, from the reference machine (2 cores, TF 2.21): a point
# costs ~14 s of import and tracing plus ~4 us per voxel per sample per step.
POINT_OVERHEAD_S = 14.0
STEP_S_PER_VOXEL = 4e-6
# How long an interrupted sweep may wait for the database to record that it was
# interrupted: it must end within 2 s of a SIGTERM, whoever holds the database.
INTERRUPT_RECORD_S = 0.8
# The most a sweep measures: points (configurations x repeats) and repeats of a point.
# The largest bundled sweep has 441 points; at ~20 s a point, 10,000 are over two days
# of one machine. A bigger study is several sweeps (they resume, and share a database).
MAX_SWEEP_POINTS = 10_000
MAX_REPEATS = 100

# A grid's lists, by the config field each one varies (plural where the CLI's flag is).
KNOB_LISTS: dict[str, str] = {
    "base_filters": "base_filters",
    "levels": "levels",
    "in_channels": "in_channels",
    "classes": "classes",
    "precisions": "precision",
    "upsamplings": "upsampling",
}
GRID_KNOBS = ("workload", "image_sizes", "batch_sizes", *KNOB_LISTS)
# Gives the points a fitted model covers a bound of its own (`modeling.guard`, wired in by
# the CLI through `presentation.sweep_guard`); the others keep the closed form.
Precheck = Callable[[Sequence[WorkloadConfig]], Mapping[WorkloadConfig, PeakBound]]


@dataclass(frozen=True)
class Grid:
    """The knobs of a sweep; every combination is one point.

    A knob list left ``None`` takes the workload's default; a list given for a
    knob the workload does not have is refused.
    """

    image_sizes: tuple[tuple[int, ...], ...]
    batch_sizes: tuple[int, ...]
    workload: str = DEFAULT_WORKLOAD
    base_filters: tuple[int, ...] | None = None
    levels: tuple[int, ...] | None = None
    in_channels: tuple[int, ...] | None = None
    classes: tuple[int, ...] | None = None
    precisions: tuple[str, ...] | None = None
    upsamplings: tuple[str, ...] | None = None

    def knob_lists(self) -> dict[str, tuple]:
        """Config field -> the values given for it (the knobs left to default are absent)."""
        return {
            field_name: values
            for grid_name, field_name in KNOB_LISTS.items()
            if (values := getattr(self, grid_name)) is not None
        }

    def to_dict(self) -> dict[str, Any]:
        knobs = {name: list(getattr(self, name)) for name in KNOB_LISTS if getattr(self, name)}
        return {
            "workload": self.workload,
            "image_sizes": [format_image_shape(shape) for shape in self.image_sizes],
            "batch_sizes": list(self.batch_sizes),
            **knobs,
        }


@dataclass
class SweepSummary:
    """What a sweep did, point by point."""

    sweep_id: str
    counts: dict[str, int] = field(default_factory=dict)
    already_measured: int = 0
    recovered: int = 0  # points an earlier sweep measured but left pending, stored first
    interrupted_before: list[str] = field(default_factory=list)  # dead sweeps marked so

    def add(self, status: str) -> None:
        self.counts[status] = self.counts.get(status, 0) + 1


def default_memory_limit_bytes() -> int:
    memory = psutil.virtual_memory()
    return int(min(memory.total * DEFAULT_MEMORY_FRACTION, memory.available - HOST_RESERVE_BYTES))


def stable_memory_limit_bytes() -> int:
    """`DEFAULT_MEMORY_FRACTION` of the machine's total RAM: the dashboard's default limit.

    Total, not available, memory: the available figure moved the sidebar's default
    between visits (11.3 to 17.6 GiB seen on a 23.5 GiB VM, issue 26). Each point
    still checks the memory available when it starts (`HOST_RESERVE_BYTES` kept free).
    """
    return int(psutil.virtual_memory().total * DEFAULT_MEMORY_FRACTION)


def check_sweep_size(grid: Grid, repeats: int) -> int:
    """The points ``grid`` x ``repeats`` makes, counted without building them.

    `ConfigError` when repeats or the points exceed MAX_REPEATS or
    MAX_SWEEP_POINTS, naming the figures and what to do.
    """
    if not 1 <= repeats <= MAX_REPEATS:
        raise ConfigError(f"--repeats must be from 1 to {MAX_REPEATS}, got {repeats}")
    lists = [grid.image_sizes, grid.batch_sizes, *grid.knob_lists().values()]
    combinations = math.prod(len(values) for values in lists)
    points = combinations * repeats
    if points > MAX_SWEEP_POINTS:
        sizes = " x ".join(str(len(values)) for values in lists)
        raise ConfigError(
            f"the sweep has {points:,} points ({sizes} combinations x {repeats} repeat(s)); "
            f"one sweep measures at most {MAX_SWEEP_POINTS:,}: split the grid into several "
            "sweeps (they resume and can share a database)"
        )
    return points


def expand_grid(grid: Grid, repeats: int = 1) -> list[WorkloadConfig]:
    """Every valid configuration of ``grid``, smallest estimated peak first.

    Raises `ConfigError` naming every invalid value, or a grid over the limits
    (`check_sweep_size`, with ``repeats``), before anything runs or is built.
    """
    check_sweep_size(grid, repeats)
    workload = workloads.get(grid.workload)
    knobs = grid.knob_lists()
    foreign = [name for name in knobs if name not in workload.NETWORK_KNOBS]
    if foreign:
        raise ConfigError(
            f"the {grid.workload} workload has no {', '.join(foreign)}; "
            f"its knobs are {', '.join(workload.NETWORK_KNOBS)}"
        )
    for name, values in {
        "image sizes": grid.image_sizes,
        "batch sizes": grid.batch_sizes,
        **knobs,
    }.items():
        if not values:
            raise ConfigError(f"the sweep grid has no {name.replace('_', ' ')}: give at least one")
    bad = sorted({p for p in knobs.get("precision", ()) if p not in PRECISIONS})
    if bad:
        raise ConfigError(
            f"unknown value(s) {', '.join(map(str, bad))}: precisions are {', '.join(PRECISIONS)}"
        )
    configs, problems = [], []
    for shape, batch, *values in itertools.product(
        grid.image_sizes, grid.batch_sizes, *knobs.values()
    ):
        try:
            configs.append(workload.Config(shape, batch, **dict(zip(knobs, values, strict=True))))
        except ConfigError as error:
            problems.append(str(error))
    if problems:
        unique = list(dict.fromkeys(problems))
        raise ConfigError("the sweep grid has invalid points:\n- " + "\n- ".join(unique))
    return sorted(set(configs), key=lambda c: (estimate_peak_bytes(c), c.elements, c.batch_size))


def point_bounds(
    configs: Sequence[WorkloadConfig], precheck: Precheck | None
) -> dict[WorkloadConfig, PeakBound]:
    """Each point's bound: the fitted one ``precheck`` gives it, else the closed form."""
    fitted = precheck(configs) if precheck else {}
    return {config: fitted.get(config) or closed_form_bound(config) for config in configs}


def estimated_seconds(config: WorkloadConfig, steps: int) -> float:
    """A rough duration of one point, used to weight the progress bar's ETA."""
    return POINT_OVERHEAD_S + STEP_S_PER_VOXEL * config.elements * config.batch_size * (steps + 1)


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


def _skip_reason(
    config: WorkloadConfig,
    bound: PeakBound,
    settings: RunSettings,
    failed: list[tuple[WorkloadConfig, str]],
    run_over_bound: bool = False,
) -> str | None:
    for smaller, status in failed:
        if dominates(config, smaller):
            return (
                f"a point no larger ({format_image_shape(smaller.image_shape)} at batch "
                f"{smaller.batch_size}) already ended as {status} under the same limit"
            )
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


def run_sweep(
    db_path: Path,
    grid: Grid,
    settings: RunSettings,
    *,
    repeats: int = 1,
    resume: bool = True,
    command: str = "",
    show_progress: bool = True,
    on_record: Callable[[RunRecord], None] | None = None,
    precheck: Precheck | None = None,
    run_over_bound: bool = False,
) -> SweepSummary:
    """Measure every point of ``grid`` ``repeats`` times into ``db_path``.

    ``precheck`` gives the points a fitted model covers their bound; a point is
    skipped only when its bound (that one, else the closed form with margins)
    exceeds the memory limit or the memory available. ``run_over_bound`` launches a
    point over the limit anyway and lets the limit stop it (verifying a sizing
    answer's next size up); the memory available is still checked. Raises
    `profiling.sweeplock.SweepBusyError`, naming it, while another sweep writes
    to ``db_path``.
    """
    database.check_writable(db_path, "a sweep")
    check_memory_limit_floor(settings.memory_limit_bytes)
    configs = expand_grid(grid, repeats)
    database.ensure_database(db_path)
    bounds = point_bounds(configs, precheck)
    points = _Points(configs, repeats)
    summary = SweepSummary(sweep_id=uuid.uuid4().hex[:12])
    with sweeplock.hold(db_path, summary.sweep_id, command, len(points)) as lock:
        # Holding the lock, no other sweep runs: every sweep still "running" is dead.
        summary.interrupted_before = sweeplock.interrupt_stale(db_path)
        summary.recovered = pending.ingest(db_path)
        store.create_sweep(db_path, summary.sweep_id, command, grid.to_dict(), len(points))
        try:
            _run_points(
                db_path,
                points,
                bounds,
                settings,
                summary,
                lock,
                resume,
                show_progress,
                on_record,
                run_over_bound,
            )
        except BaseException:
            record_interrupted(db_path, summary.sweep_id)
            raise
    return summary


@dataclass(frozen=True)
class _Points:
    """Each configuration ``repeats`` times, in order, made one at a time as the loop asks."""

    configs: Sequence[WorkloadConfig]
    repeats: int

    def __len__(self) -> int:
        return len(self.configs) * self.repeats

    def __iter__(self) -> Iterator[tuple[WorkloadConfig, int]]:
        return ((config, repeat) for config in self.configs for repeat in range(self.repeats))


def _run_points(
    db_path: Path,
    points: _Points,
    bounds: Mapping[WorkloadConfig, PeakBound],
    settings: RunSettings,
    summary: SweepSummary,
    lock: sweeplock.SweepLock,
    resume: bool,
    show_progress: bool,
    on_record: Callable[[RunRecord], None] | None,
    run_over_bound: bool,
) -> None:
    # Points count as done per machine profile, not hostname: two VMs may share a name.
    # The profile depends on the precision where oneDNN is on but cannot take its dtype.
    precisions = {config.precision for config in points.configs}
    keys = {precision: this_profile(precision).key for precision in precisions}
    measured = {
        precision: store.completed_points(db_path, key, statuses=("ok", "oom"))
        for precision, key in keys.items()
    }
    already_skipped = {
        precision: store.completed_points(db_path, key, statuses=("skipped",))
        for precision, key in keys.items()
    }
    failed: list[tuple[WorkloadConfig, str]] = []
    # A point the estimate already rules out costs nothing, so it does not inflate the ETA.
    costs = {
        config: estimated_seconds(config, settings.steps)
        if run_over_bound or bounds[config].bound_bytes <= settings.memory_limit_bytes
        else 0.0
        for config in points.configs
    }
    bar = tqdm(
        total=round(sum(costs.values()) * points.repeats),
        disable=not show_progress,
        unit="s",
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
    )
    try:
        for done, (config, repeat) in enumerate(points):
            cost = costs[config]
            label = f"{format_image_shape(config.image_shape)} batch {config.batch_size}"
            bar.set_description_str(f"{done}/{len(points)} points, now {label}")
            lock.update(points_done=done, current_point=label)
            record = _measure_point(
                config,
                repeat,
                bounds[config],
                settings,
                summary.sweep_id,
                resume,
                measured[config.precision],
                already_skipped[config.precision],
                failed,
                run_over_bound,
            )
            if record is None:
                summary.already_measured += 1
            else:
                # On disk first: a database locked past SIGTERM keeps it pending, not lost.
                pending.store_record(db_path, record)
                summary.add(record.status)
                if on_record:
                    on_record(record)
            store.update_sweep(db_path, summary.sweep_id, points_done=done + 1)
            if record is None or record.status == "skipped":
                # Done at once: counted as progress it would make the rate absurd and
                # the time left read 0 s while real points remain; it leaves the total.
                bar.total -= round(cost)
                bar.refresh()
            else:
                bar.update(round(cost))
        bar.set_description_str(f"{len(points)}/{len(points)} points")
        lock.update(points_done=len(points), current_point=None)
        store.update_sweep(db_path, summary.sweep_id, status="finished", finished=True)
    finally:
        bar.close()


def _measure_point(
    config: WorkloadConfig,
    repeat: int,
    bound: PeakBound,
    settings: RunSettings,
    sweep_id: str,
    resume: bool,
    measured: dict,
    already_skipped: dict,
    failed: list[tuple[WorkloadConfig, str]],
    run_over_bound: bool,
) -> RunRecord | None:
    """The record of one point, or None when resume finds it already measured."""
    key = store.point_key(_key_fields(config, settings.steps))
    if resume and measured.get(key, 0) > repeat:
        return None
    reason = _skip_reason(config, bound, settings, failed, run_over_bound)
    estimate = bound.bound_bytes
    if reason:
        if resume and already_skipped.get(key, 0) > repeat:
            return None
        return skipped_record(
            config, settings, reason, sweep_id=sweep_id, repeat=repeat, estimate_bytes=estimate
        )
    record = run_point(config, settings, sweep_id=sweep_id, repeat=repeat, estimate_bytes=estimate)
    if record.status in ("oom", "timeout"):
        failed.append((config, record.status))
    return record


def _key_fields(config: WorkloadConfig, steps: int) -> dict[str, object]:
    return {**workloads.config_columns(config), "steps": steps}


def grid_from_mapping(values: dict[str, Sequence]) -> Grid:
    """A `Grid` from a config file's or the CLI's lists (image sizes as text or numbers)."""
    unknown = sorted(set(values) - set(GRID_KNOBS))
    if unknown:
        raise ConfigError(
            f"unknown sweep setting(s) {', '.join(unknown)}; known: {', '.join(GRID_KNOBS)}"
        )
    workload = workloads.get(values.get("workload", DEFAULT_WORKLOAD))
    converted: dict[str, Any] = {"workload": workload.NAME}
    for knob, items in values.items():
        if knob == "workload":
            continue
        if isinstance(items, str | int):
            items = [items]
        if knob == "image_sizes":
            converted[knob] = tuple(workload.parse_image_shape(str(item)) for item in items)
        else:
            converted[knob] = tuple(items)
    if "image_sizes" not in converted or "batch_sizes" not in converted:
        raise ConfigError("a sweep needs image_sizes and batch_sizes (e.g. [32, 64] and [1, 2])")
    return Grid(**converted)


def load_grid_file(path: Path) -> Grid:
    """Read a sweep grid from a ``.toml`` or ``.json`` file (keys as in `GRID_KNOBS`).

    The file's keys and value types are checked first (`core.settings.read_settings_file`),
    so a wrong type is a `ConfigError` naming the key, never a TypeError.
    """
    return grid_from_mapping(read_settings_file(path))
