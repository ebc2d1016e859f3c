"""Choose the calibration grid: the fewest points whose fit predicts a whole machine profile.

    python -m benchmarks.calibration --other RUNS_FILE_OR_DB [--reference RUNS] [--write]

A machine of a new profile (`core.profiles`) needs its own models, and so its
own runs: how few will do? Candidates are product grids S x B, S a subset of
the measured cube sides and B of the batch sizes, every point of which was
measured ``ok`` on both profiles, with at least `MIN_POINTS` points (what an
evaluation needs). For each, the least-squares model on the analytical terms
(the catalogue's ``least_squares`` spec, fitted the way
`modeling.evaluation.fitting` fits a spec) is fitted on profile A's runs at
those points only and scored by its MAPE on *every* ok run of A.

The choice is made on A alone (by default the bundled Intel reference): the
candidate with the fewest points that reaches `TARGET_MAPE_PCT`, ties to the
least measuring time on A, then to the smaller sides and batches. It is then
checked on B (``--other``, a profile it was not chosen on) without choosing
again: the same points' fit on B's own runs, scored on every ok run of B.
Minutes are the measured wall time of the grid on each machine: per point, the
median ``wall_s`` of its runs (one measurement each, as a calibration takes),
summed. ``--write`` stores the choice as the workload's entry of
`data/calibration.json` (`profiling.calibration`), minutes from B, this
development machine. Least squares only: seconds, not minutes.
"""

from __future__ import annotations

import argparse
import itertools
import shlex
import statistics
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from core import datafiles, profiles, store, workloads
from core.database import BUNDLED_RUNS
from core.errors import ConfigError
from core.machine import machine_info
from core.profiles import MachineProfile
from modeling.estimators.catalogue import ModelSpec, catalogue, pick
from modeling.estimators.symbolic import MIN_SAMPLES
from modeling.evaluation.fitting import FINAL_SEED
from modeling.evaluation.protocol import MIN_POINTS
from modeling.evaluation.selection import fit_with_selection, mape_pct
from modeling.evaluation.splits import RANDOM, kinds_for, make_split, validation_split
from modeling.features import TARGET_COLUMN, config_frame, measured_frame
from presentation.report import markdown_table
from profiling.calibration import CALIBRATION_FILE, Calibration, write_calibration

# The error the chosen grid's fit must reach on every run of the profile it was chosen on.
TARGET_MAPE_PCT = 5.0
# The model fitted per candidate: closed form, milliseconds, and stable on ten points.
MODEL = "least_squares"
DEFAULT_WORKLOAD = "unet3d"
# How many candidates the table shows, best first.
SHOWN = 8
SECONDS_PER_MINUTE = 60.0
DUCKDB_SUFFIXES = (".duckdb", ".db")

Point = tuple[int, int]  # (cube or square side, batch size)


@dataclass(frozen=True)
class Candidate:
    """A product grid: every side with every batch."""

    sides: tuple[int, ...]
    batches: tuple[int, ...]

    @property
    def points(self) -> tuple[Point, ...]:
        return tuple(itertools.product(self.sides, self.batches))

    @property
    def label(self) -> str:
        """ "32 64 x 1 2 4 8 16": sides x batches."""
        return f"{' '.join(map(str, self.sides))} x {' '.join(map(str, self.batches))}"


@dataclass(frozen=True)
class ProfileRuns:
    """One machine profile's ok runs of a workload, as features, with their points and times."""

    profile: MachineProfile
    source: Path
    frame: pd.DataFrame  # `measured_frame`, indexed by run_id
    points: pd.Series  # run_id -> Point of a default-network cube run, else None
    wall_s: pd.Series  # run_id -> seconds the run took

    def measured(self) -> set[Point]:
        return {point for point in self.points if point is not None}

    def runs_at(self, points: Iterable[Point]) -> pd.DataFrame:
        wanted = set(points)
        return self.frame[self.points.map(lambda point: point in wanted).to_numpy()]

    def minutes(self, points: Iterable[Point]) -> float:
        """Measured minutes of one run per point: each point's median wall time, summed."""
        seconds: dict[Point, list[float]] = {point: [] for point in points}
        for run_id, point in self.points.items():
            if point in seconds:
                seconds[point].append(float(self.wall_s[run_id]))
        return (
            sum(statistics.median(times) for times in seconds.values() if times)
            / SECONDS_PER_MINUTE
        )


@dataclass(frozen=True)
class Scored:
    """A candidate's MAPE (%) on every ok run of one profile, and its measuring minutes there."""

    candidate: Candidate
    mape_pct: float
    minutes: float

    def reaches(self, target_pct: float) -> bool:
        return self.mape_pct <= target_pct


def read_runs(path: Path) -> pd.DataFrame:
    """The ok runs of a DuckDB database, or of a runs export (.parquet or .csv)."""
    if not path.exists():
        raise ConfigError(f"no runs at {path}: give a DuckDB file or a runs export")
    if path.suffix in DUCKDB_SUFFIXES:
        runs = store.load_runs(path, store.RunFilter(status="ok"))
    else:
        runs = datafiles.read_runs(path).to_pandas()
    return runs[runs["status"] == "ok"].reset_index(drop=True)


def _cube_point(row: dict) -> Point | None:
    """(side, batch) of a run of the workload's default network on a cube (square); else None."""
    config = workloads.config_from_row(row)
    shape = config.image_shape
    if len(set(shape)) != 1 or config != config.__class__(shape, config.batch_size):
        return None
    return int(shape[0]), int(config.batch_size)


def profile_runs(runs: pd.DataFrame, workload: str, source: Path) -> ProfileRuns:
    """The ok ``workload`` runs of the profile with the most of them in ``runs``."""
    mine = profiles.with_keys(runs[runs["workload"] == workload])
    if mine.empty:
        raise ConfigError(f"{source} holds no ok {workload} runs")
    found = profiles.profiles_in(mine)
    profile = next(iter(found.values()))
    if len(found) > 1:
        print(
            f"note: {source} holds {len(found)} machine profiles; using the one with the most "
            f"{workload} runs, {profile.label} ({profile.key})",
            file=sys.stderr,
        )
    mine = profiles.runs_of(mine, profile.key)
    frame = measured_frame(mine)
    rows = mine.set_index("run_id").loc[frame.index]
    points = [_cube_point(row) for row in rows.reset_index().to_dict("records")]
    return ProfileRuns(
        profile,
        source,
        frame,
        pd.Series(points, index=frame.index, dtype=object),
        rows["wall_s"].astype(float),
    )


def evaluable(candidate: Candidate, workload: str) -> bool:
    """Whether `memplan evaluate` can score every model on one run per point.

    Asked of the protocol's own splits: each split kind's training runs, less the
    validation runs carved from them to choose a model's settings, must leave the
    MIN_SAMPLES runs symbolic regression needs. The extrapolation split is the
    binding one: it tests on the two largest sides and validates on the next, so
    a grid needs sides below those three (5 sides x 2 batches fails: 4 runs).
    """
    module = workloads.get(workload)
    configs = [module.Config((side,) * module.DIMS, batch) for side, batch in candidate.points]
    frame = config_frame(configs)
    frame.index = pd.Index([str(number) for number in range(len(frame))], name="run_id")
    try:
        for kind in kinds_for(frame):
            train = frame.loc[list(make_split(frame, kind, FINAL_SEED).train)]
            if len(validation_split(train, kind, FINAL_SEED).train) < MIN_SAMPLES:
                return False
    except ValueError:  # too few sizes or points for a split at all
        return False
    return True


def candidates(
    available: set[Point], workload: str = DEFAULT_WORKLOAD, min_points: int = MIN_POINTS
) -> list[Candidate]:
    """Every product grid of ``available`` sides and batches that an evaluation can use.

    All its points measured, ``min_points`` of them or more, and `evaluable`.
    """
    sides = sorted({side for side, _ in available})
    batches = sorted({batch for _, batch in available})
    found = []
    for n_sides in range(1, len(sides) + 1):
        for chosen_sides in itertools.combinations(sides, n_sides):
            for n_batches in range(1, len(batches) + 1):
                if n_sides * n_batches < min_points:
                    continue
                for chosen_batches in itertools.combinations(batches, n_batches):
                    candidate = Candidate(chosen_sides, chosen_batches)
                    if all(point in available for point in candidate.points):
                        found.append(candidate)
    # Whether a grid is evaluable depends only on how many sides and batches it has.
    usable: dict[tuple[int, int], bool] = {}
    for candidate in found:
        shape = (len(candidate.sides), len(candidate.batches))
        if shape not in usable:
            usable[shape] = evaluable(candidate, workload)
    return [c for c in found if usable[(len(c.sides), len(c.batches))]]


def least_squares_spec() -> ModelSpec:
    return pick(catalogue(), [MODEL])[0]


def score(runs: ProfileRuns, candidate: Candidate, spec: ModelSpec) -> Scored:
    """``spec`` fitted on the runs at ``candidate``'s points, scored on every run of ``runs``."""
    train = runs.runs_at(candidate.points)

    def build(rows: pd.DataFrame, params: dict) -> object:
        return spec.build(rows, params, FINAL_SEED)

    outcome = fit_with_selection(build, spec.candidates, spec.columns, train, RANDOM, FINAL_SEED)
    predicted = outcome.estimator.predict(runs.frame[list(outcome.columns)])
    return Scored(
        candidate,
        mape_pct(runs.frame[TARGET_COLUMN].to_numpy(), predicted),
        runs.minutes(candidate.points),
    )


def _order(scored: Scored, target_pct: float) -> tuple:
    """Reaching the target first, by fewest points, least minutes, smaller grid; then by MAPE."""
    grid = (scored.candidate.sides, scored.candidate.batches)
    size = len(scored.candidate.points)
    if scored.reaches(target_pct):
        return (0, size, scored.minutes, grid)
    return (1, scored.mape_pct, size, scored.minutes, grid)


def rank_on(
    chosen_on: ProfileRuns,
    checked_on: ProfileRuns,
    target_pct: float = TARGET_MAPE_PCT,
    min_points: int = MIN_POINTS,
    spec: ModelSpec | None = None,
) -> list[Scored]:
    """Every candidate measured on both profiles, scored on ``chosen_on`` only, best first.

    The first is the choice. ``checked_on`` only limits the candidates to points it
    measured; its errors play no part in the order.
    """
    spec = spec or least_squares_spec()
    available = chosen_on.measured() & checked_on.measured()
    workload = str(chosen_on.frame["workload"].iloc[0])
    found = candidates(available, workload, min_points)
    if not found:
        raise ConfigError(
            f"no product grid of at least {min_points} points that an evaluation can use "
            "was measured ok on both "
            f"{chosen_on.profile.label} and {checked_on.profile.label}; "
            f"points measured on both: {sorted(available) or 'none'}"
        )
    scored = [score(chosen_on, candidate, spec) for candidate in found]
    return sorted(scored, key=lambda item: _order(item, target_pct))


def _who(runs: ProfileRuns) -> str:
    where = f"profile {runs.profile.key}, {len(runs.frame)} ok runs of {runs.source}"
    return f"{runs.profile.label} ({where})"


def table(ranked: list[Scored], checks: list[Scored], a: str, b: str) -> pd.DataFrame:
    """The candidates shown, with A's and B's figures side by side."""
    return pd.DataFrame(
        [
            {
                "grid (sides x batches)": chosen.candidate.label,
                "points": len(chosen.candidate.points),
                f"MAPE % on {a}": chosen.mape_pct,
                f"MAPE % on {b}": checked.mape_pct,
                f"minutes on {a}": chosen.minutes,
                f"minutes on {b}": checked.minutes,
            }
            for chosen, checked in zip(ranked, checks, strict=True)
        ]
    )


def verdict(chosen: Scored, checked: Scored, target_pct: float, a: str, b: str) -> str:
    """One plain sentence: whether the choice reached the target on each profile."""
    on_a = "reaches" if chosen.reaches(target_pct) else "does NOT reach"
    on_b = "reaches" if checked.reaches(target_pct) else "does NOT reach"
    text = (
        f"Chosen: {chosen.candidate.label} ({len(chosen.candidate.points)} points). "
        f"It {on_a} {target_pct:g}% on {a} ({chosen.mape_pct:.2f}%) and {on_b} it on {b} "
        f"({checked.mape_pct:.2f}%, fitted on {b}'s own runs at those points)."
    )
    if not (chosen.reaches(target_pct) and checked.reaches(target_pct)):
        text += f" No grid reached {target_pct:g}% on both; the figures stored are the real ones."
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reference",
        type=Path,
        default=BUNDLED_RUNS,
        help="runs of profile A, the one the grid is chosen on (default: the bundled "
        f"reference, {BUNDLED_RUNS.name})",
    )
    parser.add_argument(
        "--other",
        type=Path,
        required=True,
        help="runs of profile B, the check: a DuckDB file or a runs export",
    )
    parser.add_argument("--workload", default=DEFAULT_WORKLOAD, choices=list(workloads.WORKLOADS))
    parser.add_argument("--target", type=float, default=TARGET_MAPE_PCT, help="MAPE %% to reach")
    parser.add_argument("--write", action="store_true", help="store the choice")
    parser.add_argument("--calibration-file", type=Path, default=CALIBRATION_FILE)
    args = parser.parse_args(argv)
    command = shlex.join(["python", "-m", "benchmarks.calibration", *sys.argv[1:]])
    try:
        return _run(args, command)
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, command: str) -> int:
    started = time.perf_counter()
    a = profile_runs(read_runs(args.reference), args.workload, args.reference)
    b = profile_runs(read_runs(args.other), args.workload, args.other)
    if a.profile.key == b.profile.key:
        raise ConfigError(
            f"--reference and --other hold the same machine profile ({a.profile.label}); "
            "the check needs runs of another machine"
        )
    spec = least_squares_spec()
    ranked = rank_on(a, b, args.target, spec=spec)
    shown = ranked[:SHOWN]
    checks = [score(b, item.candidate, spec) for item in shown]
    elapsed_s = time.perf_counter() - started

    machine = machine_info()
    ram_gib = machine["total_ram_bytes"] / 2**30
    print(f"# Calibration grid of {args.workload}\n")
    print(
        f"Produced by `{command}` on {machine['cpu_model']}, {machine['cpu_cores']} cores, "
        f"{ram_gib:.1f} GiB RAM in {elapsed_s:.1f} s.\n"
    )
    print(f"- A (chosen on): {_who(a)}")
    print(f"- B (checked on): {_who(b)}\n")
    print(
        f"{len(ranked)} product grids of at least {MIN_POINTS} points that `memplan "
        "evaluate` can use (every split leaves symbolic regression "
        f"{MIN_SAMPLES} runs to fit on) were measured ok on both; "
        f"model {spec.title}, fitted on a profile's runs at the grid's points, MAPE on every ok "
        f"run of that profile. Best {len(shown)}, in the order chosen (on A only):\n"
    )
    print(markdown_table(table(shown, checks, "A", "B")), end="\n\n")
    chosen, checked = shown[0], checks[0]
    print(verdict(chosen, checked, args.target, "A", "B"))
    if args.write:
        calibration = Calibration(
            workload=args.workload,
            image_sizes=chosen.candidate.sides,
            batch_sizes=chosen.candidate.batches,
            target_mape_pct=args.target,
            model=MODEL,
            chosen_on=a.profile.label,
            chosen_mape_pct=round(chosen.mape_pct, 2),
            checked_on=b.profile.label,
            checked_mape_pct=round(checked.mape_pct, 2),
            minutes=round(checked.minutes, 2),
            command=command,
        )
        path = write_calibration(calibration, args.calibration_file)
        print(f"\nStored as the {args.workload} entry of {path}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
