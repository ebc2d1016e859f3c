"""``memplan calibrate``: give this machine's profile a model of its own.

By default its points are chosen one at a time (`memplan.calibrate_points`); ``--grid``
measures the fixed grid of ``data/calibration.json`` and fits the model catalogue
with ``memplan evaluate`` instead (kept for one release).
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import time
from pathlib import Path

from application import sweeps as pending
from application.calibrate import (
    CALIBRATION_FILE,
    Calibration,
    calibration_for,
    fit_job,
    missing_points,
)
from application.refit import RefitJob
from application.sweeps import RunSettings, SweepPlan, run_sweep
from core import frameworks, workloads
from core.errors import ConfigError
from core.machine import this_profile
from core.profiles import MachineProfile
from memplan import options
from memplan.commands import (
    add_knob_value_list_options,
    add_workload_option,
    given_knob_values,
    open_db,
)
from memplan.exitcodes import INTERRUPTED_EXIT_CODE
from memplan.sweep import stored_command

REPO_ROOT = Path(__file__).resolve().parent.parent
# The budget and batch of the sizing command `calibrate` ends with (an example to edit).
EXAMPLE_BUDGET = "64GiB"
EXAMPLE_BATCH = 2


def prepare(parser: argparse.ArgumentParser) -> None:
    add_workload_option(parser)
    parser.add_argument(
        "--grid",
        action="store_true",
        help="measure the fixed calibration grid and fit every model on it (the mode before "
        "0.2.0, kept for one release); default: at most 6 points, chosen one at a time",
    )
    options.add_json_option(parser)
    parser.add_argument(
        "--calibration-file",
        type=Path,
        default=CALIBRATION_FILE,
        help=f"the calibration grids (default {CALIBRATION_FILE.relative_to(REPO_ROOT)})",
    )
    parser.add_argument(
        "--no-fit",
        dest="fit",
        action="store_false",
        help="with --grid: only measure the grid; fit this machine's models later",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    options.add_measure_options(parser)
    add_knob_value_list_options(
        parser,
        "this machine's answers are to cover besides the network's default (points are "
        "chosen across them; not with --grid)",
    )


def _no_calibration(workload: str, path: Path) -> ConfigError:
    return ConfigError(
        f"no calibration grid for workload {workload!r} in {path}. Choose one from runs of two "
        f"machine profiles with `python -m benchmarks.calibration --workload {workload} "
        "--other RUNS_FILE_OR_DB --write`, or measure a grid of your own with "
        f"`memplan sweep --workload {workload} ...` and fit it with "
        f"`memplan evaluate --workload {workload} --machine KEY`"
    )


def _describe(calibration: Calibration) -> str:
    sizes = " ".join(map(str, calibration.image_sizes))
    batches = " ".join(map(str, calibration.batch_sizes))
    took = f", {calibration.minutes:g} min there" if calibration.minutes is not None else ""
    return (
        f"{calibration.points} points (sides {sizes} x batches {batches}); chosen on "
        f"{calibration.chosen_on} ({calibration.model} {calibration.chosen_mape_pct:g}% MAPE), "
        f"checked on {calibration.checked_on} ({calibration.checked_mape_pct:g}%{took})"
    )


def run(args: argparse.Namespace) -> int:
    if not args.grid:
        from memplan.calibrate_points import run_points

        return run_points(args)
    given = given_knob_values(args, args.workload)
    if given:
        flags = ", ".join(workloads.KNOBS[knob].flag for knob in given)
        raise ConfigError(
            f"{flags} chooses points across knob values, which --grid does not: leave out "
            "--grid, or measure them with `memplan sweep` and fit with `memplan evaluate`"
        )
    calibration = calibration_for(args.workload, args.calibration_file)
    if calibration is None:
        raise _no_calibration(args.workload, args.calibration_file)
    settings = options.settings(args)
    db_path = open_db(args)
    here = this_profile(framework=settings.framework)
    started = time.perf_counter()
    print(f"This machine: {here.label} (profile {here.key})")
    print(f"Calibration grid of {args.workload}: {_describe(calibration)}")
    missing = missing_points(db_path, calibration, here.key)
    print(f"{len(missing)} of {calibration.points} point(s) to measure here", flush=True)
    if missing:
        try:
            _measure(args, calibration, settings, db_path, here.key)
        except KeyboardInterrupt:
            print(
                "interrupted: run the same command to measure the rest "
                f"(a measured point not yet stored waits in {pending.pending_dir(db_path)})",
                file=sys.stderr,
            )
            return INTERRUPTED_EXIT_CODE
    print(f"measuring took {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    if args.fit:
        code = _fit(args.workload, here, db_path)
        if code != 0:
            return code
    _print_next_steps(args, here, db_path)
    return 0


def _measure(
    args: argparse.Namespace,
    calibration: Calibration,
    settings: RunSettings,
    db_path: Path,
    here_key: str,
) -> None:
    """Sweep the grid's points still missing here; say which still have no ok run."""
    plan = SweepPlan(
        db_path,
        calibration.grid(),
        settings,
        command=stored_command(sys.argv[1:]),
        show_progress=not args.quiet,
    )
    summary = run_sweep(plan)
    counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
    print(f"measured: {counts or 'nothing new'} (sweep {summary.sweep_id}, in {db_path})")
    still = missing_points(db_path, calibration, here_key)
    if still:
        listed = ", ".join(f"{size} batch {batch}" for size, batch in still)
        print(
            f"{len(still)} point(s) still have no ok run here ({listed}); "
            f"`memplan list --status skipped --db {db_path}` says why",
            file=sys.stderr,
        )


def fit_command(job: RefitJob) -> list[str]:
    """The ``memplan evaluate`` that runs calibration fit ``job`` (`calibrate.fit_job`)."""
    return [
        sys.executable,
        "-m",
        "memplan",
        "evaluate",
        "--workload",
        str(job.workload),
        "--machine",
        str(job.machine),
        "--db",
        str(job.db_path),
        "--seeds",
        str(job.seeds),
        "--extrapolation-seeds",
        str(job.extrapolation_seeds),
        *frameworks.flag(job.framework),
    ]


def _fit(workload: str, here: MachineProfile, db_path: Path) -> int:
    """Fit profile ``here``'s models with ``memplan evaluate``; its exit code."""
    fitting = fit_command(fit_job(workload, here.key, db_path, here.framework))
    print(f"fitting: {shlex.join(['python', *fitting[1:]])}", flush=True)
    fit_started = time.perf_counter()
    # A process of its own, as when the dashboard launches a calibration (`fit_job`).
    code = subprocess.run(fitting, cwd=REPO_ROOT, check=False).returncode
    if code != 0:
        print(f"error: fitting failed (exit code {code}); see above", file=sys.stderr)
        return code
    print(f"fitting took {(time.perf_counter() - fit_started) / 60:.1f} min")
    return 0


def _print_next_steps(args: argparse.Namespace, here: MachineProfile, db_path: Path) -> None:
    print(f"\nMachine profile: {here.label}, key {here.key}")
    db_flag = f" --db {db_path}" if args.db else ""
    sizing = (
        f"memplan size image --workload {args.workload} --budget {EXAMPLE_BUDGET} "
        f"--batch-size {EXAMPLE_BATCH} --machine {here.key}{db_flag}"
    )
    sizing = " ".join([sizing, *frameworks.flag(here.framework)])
    if args.fit:
        print(f"Size for this machine: {sizing}")
    else:
        fitting = fit_command(fit_job(args.workload, here.key, db_path, here.framework))
        fit = shlex.join(["memplan", *fitting[3:]])
        print(f"Fit its models with `{fit}`, then size with: {sizing}")
