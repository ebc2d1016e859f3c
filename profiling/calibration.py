"""Calibration: the smallest sweep that gives a machine of a new profile its own models.

A model fitted on one machine profile can be off by a factor of three on
another (`core.profiles`), so a new machine is measured, not assumed. Which
points to measure is chosen from the bundled data by `benchmarks.calibration`:
the fewest points of a small image-size x batch grid whose fit predicts every
run of one bundled profile within the target error, checked on a second
profile it was not chosen on. The choice, and what it scored, is
`data/calibration.json`; this module reads (and writes) it, says what a profile
still lacks, and summarises the profiles a database holds. ``python -m
profiling calibrate`` (and the dashboard's button) measures the grid and fits
this machine's models.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from core import database, profiles, store, workloads
from core.errors import ConfigError
from core.units import GIB
from core.workloads.base import format_image_shape
from profiling.sweep import Grid, expand_grid

CALIBRATION_FILE = database.CALIBRATION_FILE
# What a malformed or missing file's message tells the user to run.
REWRITE_HINT = "`python -m benchmarks.calibration --other RUNS_FILE_OR_DB --write` rewrites it"
# The fields of an entry, in the order the file keeps them.
ENTRY_FIELDS: tuple[str, ...] = (
    "image_sizes",
    "batch_sizes",
    "target_mape_pct",
    "model",
    "chosen_on",
    "chosen_mape_pct",
    "checked_on",
    "checked_mape_pct",
    "minutes",
    "command",
)


@dataclass(frozen=True)
class Calibration:
    """A workload's calibration grid and the evidence it was chosen on."""

    workload: str
    image_sizes: tuple[int, ...]  # cube (or square) sides
    batch_sizes: tuple[int, ...]
    target_mape_pct: float  # the error the choice had to reach
    model: str  # the model it was fitted with
    chosen_on: str  # the profile label the points were chosen on
    chosen_mape_pct: float  # that model's error on every run of chosen_on
    checked_on: str  # a profile the points were not chosen on
    checked_mape_pct: float
    minutes: float | None  # measured wall time of the grid on checked_on's machine, if known
    command: str  # what produced it

    @property
    def points(self) -> int:
        return len(self.image_sizes) * len(self.batch_sizes)

    def grid(self) -> Grid:
        dims = workloads.get(self.workload).DIMS
        return Grid(
            image_sizes=tuple((side,) * dims for side in self.image_sizes),
            batch_sizes=self.batch_sizes,
            workload=self.workload,
        )

    def sweep_command(self) -> str:
        sizes = " ".join(str(side) for side in self.image_sizes)
        batches = " ".join(str(batch) for batch in self.batch_sizes)
        return (
            f"memplan sweep --workload {self.workload} --image-sizes {sizes} "
            f"--batch-sizes {batches}"
        )

    def to_entry(self) -> dict[str, Any]:
        """The file's entry for this calibration (ENTRY_FIELDS, JSON types)."""
        values = {
            **self.__dict__,
            "image_sizes": list(self.image_sizes),
            "batch_sizes": list(self.batch_sizes),
        }
        return {name: values[name] for name in ENTRY_FIELDS}


def _read(path: Path) -> dict[str, Any]:
    try:
        found = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as error:
        raise ConfigError(
            f"cannot read the calibration grids in {path}: {error}; {REWRITE_HINT}"
        ) from None
    if not isinstance(found, dict):
        raise ConfigError(
            f"{path} must hold one object per workload name, got a {type(found).__name__}; "
            f"{REWRITE_HINT}"
        )
    return found


def _sizes(entry: dict[str, Any], name: str) -> tuple[int, ...]:
    """A non-empty list of positive whole numbers (a bare "48" is refused, not read as 4, 8)."""
    values = entry[name]
    if not isinstance(values, list) or not values:
        raise ValueError(f"{name} must be a non-empty list of whole numbers, got {values!r}")
    if not all(isinstance(value, int) and not isinstance(value, bool) for value in values):
        raise ValueError(f"{name} must hold whole numbers only, got {values!r}")
    if min(values) < 1:
        raise ValueError(f"{name} must be positive, got {values!r}")
    return tuple(values)


def calibration_for(workload: str, path: Path = CALIBRATION_FILE) -> Calibration | None:
    """The calibration of ``workload``; None when none was chosen (no second profile yet).

    Raises `ConfigError`, naming the file, for an unreadable file or a malformed entry.
    """
    entry = _read(path).get(workload) if path.exists() else None
    if entry is None:
        return None
    try:
        if not isinstance(entry, dict):
            raise TypeError(f"the entry must be an object, got {entry!r}")
        return Calibration(
            workload=workload,
            image_sizes=_sizes(entry, "image_sizes"),
            batch_sizes=_sizes(entry, "batch_sizes"),
            target_mape_pct=float(entry["target_mape_pct"]),
            model=str(entry["model"]),
            chosen_on=str(entry["chosen_on"]),
            chosen_mape_pct=float(entry["chosen_mape_pct"]),
            checked_on=str(entry["checked_on"]),
            checked_mape_pct=float(entry["checked_mape_pct"]),
            minutes=None if entry.get("minutes") is None else float(entry["minutes"]),
            command=str(entry["command"]),
        )
    except KeyError as error:
        raise ConfigError(
            f"the {workload} calibration in {path} lacks {error}; {REWRITE_HINT}"
        ) from None
    except (TypeError, ValueError) as error:
        raise ConfigError(
            f"the {workload} calibration in {path} is malformed: {error}; {REWRITE_HINT}"
        ) from None


def write_calibration(calibration: Calibration, path: Path = CALIBRATION_FILE) -> Path:
    """Store ``calibration`` as its workload's entry of ``path``, keeping the other entries.

    Written to a temporary file and renamed, so a reader never sees half a file.
    """
    entries = _read(path) if path.exists() else {}
    entries[calibration.workload] = calibration.to_entry()
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(json.dumps(entries, indent=2) + "\n")
    temp.replace(path)
    return path


def _default_point(row: dict[str, Any]) -> tuple[str, int] | None:
    """(image size, batch) of a run of the workload's default network; None for another one."""
    config = workloads.config_from_row(row)
    if config != config.__class__(config.image_shape, config.batch_size):
        return None
    return format_image_shape(config.image_shape), config.batch_size


def missing_points(
    db_path: Path, calibration: Calibration, profile_key: str
) -> list[tuple[str, int]]:
    """The grid's (image size, batch) points with no ok run on profile ``profile_key`` yet."""
    runs = store.load_runs(
        db_path, store.RunFilter(status="ok", workload=calibration.workload, machine=profile_key)
    )
    measured = {_default_point(row) for row in runs.to_dict("records")}
    return [
        (format_image_shape(config.image_shape), config.batch_size)
        for config in expand_grid(calibration.grid())
        if (format_image_shape(config.image_shape), config.batch_size) not in measured
    ]


# Columns of `profile_table`, in order.
PROFILE_TABLE_COLUMNS: tuple[str, ...] = (
    "profile",
    "machine",
    "workload",
    "runs",
    "ok",
    "configurations",
    "family/model/stepping",
    "baseline (GiB)",
    "fitted",
    "this machine",
)


def _fitted_pairs(db_path: Path) -> set[tuple[str, str]]:
    """(workload, profile key) of every evaluation stored in the database."""
    with database.connect(db_path, read_only=True) as con:
        rows = con.execute(
            "SELECT DISTINCT workload, machine_profile FROM evaluations"
            " WHERE machine_profile IS NOT NULL"
        ).fetchall()
    return {(str(workload), str(key)) for workload, key in rows}


def _gib(value: int | None) -> float | None:
    return None if value is None else round(value / GIB, 3)


def profile_table(db_path: Path, here_key: str, workload: str | None = None) -> pd.DataFrame:
    """One row per (machine profile, workload) with runs in the database (PROFILE_TABLE_COLUMNS).

    ``runs`` counts every status, ``ok`` and ``configurations`` (distinct measured
    points) the ok runs only; ``family/model/stepping`` is the CPU generation its
    runs recorded (`core.profiles.generation_of`) and ``baseline (GiB)`` their median
    resident memory right after the framework import; ``fitted`` says whether an evaluation of that
    workload on that profile is stored in this database; ``this machine`` marks
    the profile ``here_key`` (`core.machine.this_profile`). Most runs first.
    """
    runs = store.load_runs(db_path, store.RunFilter(workload=workload))
    if runs.empty:
        return pd.DataFrame(columns=list(PROFILE_TABLE_COLUMNS))
    runs = profiles.with_keys(runs)
    known = profiles.profiles_in(runs)
    fitted = _fitted_pairs(db_path)
    rows = []
    for (key, name), group in runs.groupby([profiles.KEY_COLUMN, "workload"], sort=False):
        ok = group[group["status"] == "ok"]
        points = {store.point_key(row) for row in ok.to_dict("records")}
        rows.append(
            {
                "profile": key,
                "machine": known[key].label,
                "workload": name,
                "runs": len(group),
                "ok": len(ok),
                "configurations": len(points),
                "family/model/stepping": profiles.generation_of(group),
                "baseline (GiB)": _gib(profiles.baseline_bytes(group)),
                "fitted": "yes" if (name, key) in fitted else "no",
                "this machine": "<- this machine" if key == here_key else "",
            }
        )
    table = pd.DataFrame(rows, columns=list(PROFILE_TABLE_COLUMNS))
    return table.sort_values(["runs", "profile", "workload"], ascending=[False, True, True])


# The evaluation a calibration runs (`application.calibrate.fit_job`): 3 random splits
# (a MAPE with a spread, and no
# more: the stored bounds come from the cross-conformal folds, which hold each of
# the grid's 12 configurations out once, past the 9 a 90% bound needs) and one
# extrapolation split, which is fixed: more seeds only vary the models' own
# randomness. 3.2 minutes for the 12-point grid on a 2-core AMD EPYC before the
# cross-conformal folds were added (docs/machines.md), against ~9 for the default.
FIT_SEEDS = 3
FIT_EXTRAPOLATION_SEEDS = 1
