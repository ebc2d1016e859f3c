"""Sweep grids: the points a sweep measures, validated before anything runs, and its limits.

`expand_grid` turns a `Grid` (from the CLI's lists, a settings file or the
dashboard's form: `grid_from_mapping`, `load_grid_file`) into every valid
configuration, smallest estimated peak first, and refuses an invalid value or a
grid over the limits before a point is built. `default_memory_limit_bytes` is
the memory a point may take unless told otherwise. What then happens to the
points is `profiling.lifecycle`'s, on this machine (`profiling.local_sweep`) or
on a Slurm partition (`profiling.cluster_sweep`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

import psutil

from core import workloads
from core.errors import ConfigError
from core.settings import read_settings_file
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import WorkloadConfig, format_image_shape
from profiling.estimate import estimate_peak_bytes

# The default memory limit: this share of the machine's RAM...
DEFAULT_MEMORY_FRACTION = 0.75
# ...and never closer than this to what is available when a point starts, so
# the host keeps room for itself and a sweep never pushes it into swap.
HOST_RESERVE_BYTES = 2 * 2**30
# The most a sweep measures: points (configurations x repeats) and repeats of a point.
# The largest bundled sweep has 441 points; at ~20 s a point, 10,000 are over two days
# of one machine. A bigger study is several sweeps (they resume, and share a database).
MAX_SWEEP_POINTS = 10_000
MAX_REPEATS = 100

# A grid's lists, by the config field each one varies (plural where the CLI's flag is):
# one per knob some workload declares (`core.workloads.KNOBS`).
KNOB_LISTS: dict[str, str] = {knob.sweep_key: name for name, knob in workloads.KNOBS.items()}
GRID_KNOBS = ("workload", "image_sizes", "batch_sizes", *KNOB_LISTS)


class _GridMethods:
    """What `Grid` does with its lists; its fields come from the knob declarations."""

    workload: str
    image_sizes: tuple[tuple[int, ...], ...]
    batch_sizes: tuple[int, ...]

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


# The knobs of a sweep; every combination is one point. A knob list left ``None``
# takes the workload's default; a list given for a knob the workload does not have is
# refused. Fields: image_sizes, batch_sizes, workload, then one tuple per `KNOB_LISTS` key
# (base_filters, levels, ..., precisions, upsamplings), made from the declarations so a
# new knob is a new list here without an edit.
Grid = dataclasses.make_dataclass(
    "Grid",
    [
        ("image_sizes", tuple[tuple[int, ...], ...]),
        ("batch_sizes", tuple[int, ...]),
        ("workload", str, field(default=DEFAULT_WORKLOAD)),
        *(
            (key, tuple[workloads.KNOBS[name].kind, ...] | None, field(default=None))
            for key, name in KNOB_LISTS.items()
        ),
    ],
    bases=(_GridMethods,),
    frozen=True,
)
Grid.__module__ = __name__  # pickles and reprs as profiling.sweep.Grid
Grid.__doc__ = "The lists of a sweep; every combination of their values is one point."


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
    for name, values in knobs.items():  # a text knob's unknown values, named once
        choices = workloads.KNOBS[name].choices
        bad = sorted({value for value in values if choices and value not in choices})
        if bad:
            raise ConfigError(
                f"unknown value(s) {', '.join(map(str, bad))}: "
                f"{workloads.KNOBS[name].sweep_key} are {', '.join(choices)}"
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
