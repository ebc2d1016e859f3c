"""What a machine profile without models lacks, and the smallest sweep that would give it some.

Models are fitted per workload and machine profile: a profile with too few
distinct measured configurations has none. `shortfall` says, in words
(`Shortfall.message`), how many it has and a fit needs, and picks the
smallest sweep that fixes it: the calibration grid's missing points when there
is a calibration, else the smallest sides and batches another machine measured,
else a small starting grid. Nothing here needs Streamlit; a page shows the
message with `presentation.machines.markdown`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from core import frameworks, workloads
from core.dbnames import DB_FLAG
from modeling.evaluation.protocol import MIN_POINTS
from modeling.features import MEASURED_PEAK_COLUMN, OK_STATUS
from presentation import workload_labels

# Where the smallest sweep's points come from (`Sweep.source`).
FROM_CALIBRATION = "the calibration grid's missing points"
FROM_REFERENCE = "the smallest sides and batches measured on the reference machine"
FROM_DEFAULTS = "a small starting grid"
# Sides and batch sizes to start from when no other machine measured the workload: its
# ``LABELS.starting_grid`` (`core.workloads`).
STARTING_SIDES, STARTING_BATCHES = 5, (1, 2, 4)

Point = tuple[int, int]  # (cube or square side, batch size)


@dataclass(frozen=True)
class Sweep:
    """A grid to measure: every side x batch of the workload's default network."""

    workload: str
    image_sizes: tuple[int, ...]  # cube (or square) sides
    batch_sizes: tuple[int, ...]
    new_points: int  # points of the grid the profile has not measured yet
    source: str  # where the points come from, in words
    minutes: float | None = None  # what the grid took elsewhere, when known
    framework: str = frameworks.DEFAULT_FRAMEWORK  # what trains it (`core.frameworks`)

    @property
    def points(self) -> int:
        return len(self.image_sizes) * len(self.batch_sizes)

    def command(self, db: object | None = None) -> str:
        """``memplan sweep --workload W --image-sizes ... --batch-sizes ...``.

        Points already measured on the machine running it are skipped (a sweep resumes).
        """
        sizes = " ".join(map(str, self.image_sizes))
        batches = " ".join(map(str, self.batch_sizes))
        where = f" {DB_FLAG} {db}" if db is not None else ""
        return (
            f"memplan sweep --workload {self.workload}{_flag(self.framework)} --image-sizes "
            f"{sizes} --batch-sizes {batches}{where}"
        )


def _flag(framework: str) -> str:
    """`` --framework torch`` for a framework other than the default, else nothing."""
    return "".join(f" {word}" for word in frameworks.flag(framework))


@dataclass(frozen=True)
class ProfileRuns:
    """What profile ``key`` has measured of ``workload``, which it has no models of."""

    workload: str
    key: str
    label: str
    configurations: int  # distinct measured configurations (what a fit counts)
    here: bool  # the machine running the dashboard: it can measure them
    measured: frozenset[Point] = frozenset()  # its default-network cube (square) runs
    framework: str = frameworks.DEFAULT_FRAMEWORK  # the profile's (`core.profiles`)


@dataclass(frozen=True)
class Shortfall:
    """What ``profile`` lacks before it has models, and what would fix it."""

    profile: ProfileRuns
    needed: int  # what a fit needs (`modeling.evaluation.protocol.MIN_POINTS`)
    sweep: Sweep | None  # None: enough runs, only the fit is missing

    @property
    def missing(self) -> int:
        return max(0, self.needed - self.profile.configurations)

    def evaluate_command(self, db: object | None = None) -> str:
        where = f" {DB_FLAG} {db}" if db is not None else ""
        profile = self.profile
        return (
            f"memplan evaluate --workload {profile.workload}{_flag(profile.framework)} "
            f"--machine {profile.key}{where}"
        )

    def message(self) -> str:
        """What the profile has and lacks, in words (not escaped: see `machines.markdown`)."""
        if self.sweep is None:
            return self._has()
        return self._has() + self._sweep_words(self.sweep)

    def _has(self) -> str:
        profile = self.profile
        title = workload_labels.title(profile.workload)
        machine = f"{profile.label} (profile {profile.key})"
        if profile.configurations == 0:
            return (
                f"{machine} has no measured run of the {title}, so no models of its own: "
                f"a fit needs at least {self.needed} distinct measured configurations."
            )
        if self.missing:
            return (
                f"{machine} has {profile.configurations} distinct measured configuration(s) of "
                f"the {title}; a fit needs at least {self.needed}, so {self.missing} more are "
                "missing."
            )
        return (
            f"{machine} has {profile.configurations} distinct measured configurations of the "
            f"{title}, enough for a fit, but no fitted models yet: "
            f"`{self.evaluate_command()}` fits them."
        )

    def _sweep_words(self, sweep: Sweep) -> str:
        minutes = (
            f", about {sweep.minutes:.0f} min where it was measured"
            if sweep.minutes is not None
            else ""
        )
        words = (
            f" The smallest sweep that fixes it measures {sweep.new_points} new point(s) "
            f"({sweep.source}{minutes}), then `{self.evaluate_command()}` fits the models"
        )
        if sweep.source == FROM_CALIBRATION:
            words += (
                f" (`memplan calibrate --workload {self.profile.workload}"
                f"{_flag(self.profile.framework)}` does both on "
                "the machine it runs on)"
            )
        words += "."
        if self.profile.here:
            return words
        return words + (
            f" These runs must be measured on that machine ({self.profile.label}), not this "
            "one: run the sweep there, then export its runs (`memplan export`) and import "
            "them here."
        )


def default_network_points(runs: pd.DataFrame, workload: str) -> set[Point]:
    """(side, batch) of every ok cube (or square) run of the workload's default network."""
    if runs.empty:
        return set()
    ok = workload_labels.runs_of(runs, workload)
    ok = ok[(ok["status"] == OK_STATUS) & ok[MEASURED_PEAK_COLUMN].notna()]
    found = set()
    for row in ok.to_dict("records"):
        config = workloads.config_from_row(row)
        shape = tuple(config.image_shape)
        if len(set(shape)) == 1 and config == type(config)(shape, config.batch_size):
            found.add((int(shape[0]), int(config.batch_size)))
    return found


def starting_grid(workload: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sides and batch sizes to start from when no machine has measured ``workload``."""
    declared = workloads.labels(workload).starting_grid
    if declared is not None:
        return declared
    sides = workloads.get(workload).square_sides(1, 256)
    step = max(1, len(sides) // STARTING_SIDES)
    return tuple(sides[::step][:STARTING_SIDES]), STARTING_BATCHES


def smallest_grid(
    sides: Sequence[int], batches: Sequence[int], measured: set[Point], needed: int
) -> tuple[tuple[int, ...], tuple[int, ...], int]:
    """The fewest smallest sides x batches with ``needed`` points not in ``measured``.

    Fewer batch sizes first, then fewer sides: small points are quick and fit
    well. Returns (sides, batches, new points); the whole grid when even that
    has fewer.
    """
    sides, batches = sorted(set(sides)), sorted(set(batches))
    for n_batches, n_sides in itertools.product(
        range(1, len(batches) + 1), range(1, len(sides) + 1)
    ):
        grid = set(itertools.product(sides[:n_sides], batches[:n_batches]))
        if len(grid - measured) >= needed:
            return tuple(sides[:n_sides]), tuple(batches[:n_batches]), len(grid - measured)
    grid = set(itertools.product(sides, batches))
    return tuple(sides), tuple(batches), len(grid - measured)


def shortfall(
    profile: ProfileRuns,
    *,
    calibration_missing: Iterable[tuple[str, int]] | None = None,
    calibration_minutes: float | None = None,
    reference: Iterable[Point] = (),
    needed: int = MIN_POINTS,
) -> Shortfall:
    """What ``profile`` (without models) lacks, and the smallest sweep that fixes it.

    calibration_missing : the calibration grid's points it lacks
        (`profiling.calibration.missing_points`), None without a calibration;
    reference : (side, batch) of the reference machine's default-network runs,
        the grid to take the smallest points of without a calibration (or when
        its missing points are too few to reach ``needed``).
    """
    to_add = needed - profile.configurations
    if to_add <= 0:
        return Shortfall(profile, needed, None)
    measured = set(profile.measured)
    # A calibration grid holds cubes (squares): one side each.
    missing = [
        (int(side), int(batch))
        for side, batch in (calibration_missing or [])
        if str(side).isdigit()
    ]
    if calibration_missing is not None and len(missing) >= to_add:
        sides = tuple(sorted({side for side, _ in missing}))
        batches = tuple(sorted({batch for _, batch in missing}))
        new = len(set(itertools.product(sides, batches)) - measured)
        sweep = Sweep(
            profile.workload,
            sides,
            batches,
            new,
            FROM_CALIBRATION,
            calibration_minutes,
            profile.framework,
        )
        return Shortfall(profile, needed, sweep)
    candidates = set(missing) | set(reference)
    source = FROM_REFERENCE if candidates else FROM_DEFAULTS
    if candidates:
        sides, batches = sorted({s for s, _ in candidates}), sorted({b for _, b in candidates})
    else:
        sides, batches = map(list, starting_grid(profile.workload))
    chosen_sides, chosen_batches, new = smallest_grid(sides, batches, measured, to_add)
    return Shortfall(
        profile,
        needed,
        Sweep(
            profile.workload, chosen_sides, chosen_batches, new, source, framework=profile.framework
        ),
    )
