"""``python -m profiling``: measure, calibrate, list, show, export and import runs.

Library first, thin CLI: each subcommand parses its flags, calls one function
of `profiling`, and prints the result. Every `MemplanError` becomes one line on
stderr and exit code 2; an interrupted sweep exits 130 and resumes next time.
"""

from __future__ import annotations

import argparse
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from core import profiles, store, workloads
from core.commands import (
    SIZE_HELP,
    add_commands,
    add_db_option,
    add_knob_options,
    add_workload_option,
    config_from_args,
    open_db,
    positive_float,
    positive_int,
    run_handler,
    seed,
)
from core.errors import ConfigError
from core.machine import this_profile
from core.plausibility import MAX_SEED
from core.records import STATUSES
from core.settings import read_settings_file
from core.units import check_memory_limit, format_gib, parse_bytes
from core.workloads.base import PRECISIONS
from presentation import machines as machines_view
from presentation.report import markdown_table
from presentation.summary import PEAK_COLUMNS, networks, peak_table, to_markdown
from presentation.sweep_guard import fitted_precheck
from profiling import exchange, pending
from profiling.calibration import (
    CALIBRATION_FILE,
    Calibration,
    calibration_for,
    fit_command,
    missing_points,
    profile_table,
)
from profiling.cluster_sweep import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    DEFAULT_POLL_S,
    SlurmOptions,
    default_work_dir,
    run_cluster_sweep,
)
from profiling.runner import (
    DEFAULT_SAMPLE_INTERVAL_S,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    RunSettings,
    run_point,
)
from profiling.sweep import (
    GRID_KNOBS,
    default_memory_limit_bytes,
    grid_from_mapping,
    run_sweep,
)

INTERRUPTED_EXIT_CODE = 130
# What an evaluation needs (`modeling.evaluation.protocol.MIN_POINTS`, which profiling may
# not import; tests/unit/test_profiling_cli_calibration.py checks they agree).
MIN_FIT_CONFIGURATIONS = 10
REPO_ROOT = Path(__file__).resolve().parent.parent
# The budget and batch of the sizing command `calibrate` ends with (an example to edit).
EXAMPLE_BUDGET = "64GiB"
EXAMPLE_BATCH = 2
# Columns `list` prints; `--all-columns` prints every stored one.
LIST_COLUMNS = [
    "run_id",
    "sweep_id",
    "status",
    "workload",
    "depth",
    "height",
    "width",
    "batch_size",
    "base_filters",
    "precision",
    "peak_sampled_bytes",
    "peak_hwm_bytes",
    "wall_s",
    "hostname",
]


def _add_measure_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=DEFAULT_STEPS,
        help=f"training steps per point (default {DEFAULT_STEPS}; docs/steps.md)",
    )
    parser.add_argument(
        "--interval",
        type=positive_float,
        default=DEFAULT_SAMPLE_INTERVAL_S,
        help=f"sampling interval in seconds (default {DEFAULT_SAMPLE_INTERVAL_S})",
    )
    parser.add_argument(
        "--timeout",
        type=positive_float,
        default=DEFAULT_TIMEOUT_S,
        help=f"wall-clock limit per point in seconds (default {DEFAULT_TIMEOUT_S:g})",
    )
    parser.add_argument(
        "--memory-limit",
        type=parse_bytes,
        default=None,
        help="kill a child above this resident memory, at most the machine's RAM "
        f"(default: 75%% of RAM, never within 2 GiB of what is available); {SIZE_HELP}",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help=f"seed of the synthetic data (0 to {MAX_SEED})"
    )
    add_db_option(parser)


def _settings(args: argparse.Namespace) -> RunSettings:
    """The measuring flags; `ConfigError` for a memory limit above this machine's RAM."""
    if args.memory_limit is not None:
        check_memory_limit(args.memory_limit)
    return RunSettings(
        memory_limit_bytes=args.memory_limit or default_memory_limit_bytes(),
        steps=args.steps,
        seed=args.seed,
        sample_interval_s=args.interval,
        timeout_s=args.timeout,
    )


def _gib(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else format_gib(value)


# --- run ---------------------------------------------------------------------------------


def _prepare_run(parser: argparse.ArgumentParser) -> None:
    add_workload_option(parser)
    parser.add_argument(
        "--image-size",
        required=True,
        help="one side (144) or every side: DxHxW for the U-Net (240x240x144), HxW for AlexNet",
    )
    parser.add_argument("--batch-size", type=int, default=1)
    add_knob_options(parser)
    _add_measure_options(parser)


def _run(args: argparse.Namespace) -> int:
    settings = _settings(args)
    config = config_from_args(args, args.image_size, args.batch_size)
    db_path = open_db(args, writes="`run`")
    record = run_point(config, settings)
    store.insert_run(db_path, record)
    print(
        f"{record.status}: {config.image_label} batch {config.batch_size}, "
        f"sampled peak {_gib(record.peak_sampled_bytes)}, "
        f"high-water mark {_gib(record.peak_hwm_bytes)}, {record.wall_s:.1f} s "
        f"(run {record.run_id[:12]} in {db_path})"
    )
    if record.message:
        print(record.message)
    return 0 if record.status == "ok" else 1


# --- sweep -------------------------------------------------------------------------------


def _prepare_sweep(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        type=Path,
        help="a .toml or .json grid (keys: "
        f"{', '.join(GRID_KNOBS)}); flags given too override its keys",
    )
    parser.add_argument(
        "--workload",
        choices=list(workloads.WORKLOADS),
        help=f"the network (default {workloads.DEFAULT_WORKLOAD})",
    )
    parser.add_argument("--image-sizes", nargs="+", help="sides or DxHxW, e.g. 32 64 96x96x64")
    parser.add_argument("--batch-sizes", nargs="+", type=int)
    parser.add_argument("--base-filters", nargs="+", type=int)
    parser.add_argument("--levels", nargs="+", type=int)
    parser.add_argument("--in-channels", nargs="+", type=int)
    parser.add_argument("--classes", nargs="+", type=int)
    parser.add_argument("--precisions", nargs="+")
    parser.add_argument("--upsamplings", nargs="+")
    parser.add_argument(
        "--repeats",
        type=positive_int,
        default=1,
        help="measure each point this many times (a noise figure)",
    )
    parser.add_argument(
        "--resume",
        dest="resume",
        action="store_true",
        default=True,
        help="(the default) skip what is already measured; on Slurm also ingest what the "
        "jobs of a killed earlier run of this command measured and wait for those still running",
    )
    parser.add_argument(
        "--no-resume",
        dest="resume",
        action="store_false",
        help="measure again points this machine profile already measured (see `machines`)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument(
        "--run-over-bound",
        action="store_true",
        help="launch a point even when its bound exceeds --memory-limit and let the limit "
        "stop it (what verifying a sizing answer does for the next size up)",
    )
    _add_measure_options(parser)
    cluster = parser.add_argument_group(
        "on a Slurm cluster (--executor slurm; docs/slurm.md)",
        "each point is one job of a job array on the partition's nodes; this process "
        "submits them, stores what they measure and cancels them on Ctrl-C",
    )
    cluster.add_argument(
        "--executor",
        choices=["local", "slurm"],
        default="local",
        help="where the points run: this machine (default) or Slurm jobs",
    )
    cluster.add_argument("--partition", help="the Slurm partition (required with slurm)")
    cluster.add_argument("--account", help="the Slurm account to charge, if the cluster wants one")
    cluster.add_argument(
        "--max-parallel",
        type=positive_int,
        default=DEFAULT_MAX_PARALLEL,
        help=f"jobs of one array running at once (default {DEFAULT_MAX_PARALLEL})",
    )
    cluster.add_argument(
        "--cpus-per-task",
        type=positive_int,
        default=DEFAULT_CPUS_PER_TASK,
        help=f"CPUs per job, recorded with each run (default {DEFAULT_CPUS_PER_TASK})",
    )
    cluster.add_argument(
        "--mem",
        type=parse_bytes,
        help=f"--mem of every job instead of each point's estimate plus --mem-margin; {SIZE_HELP}",
    )
    cluster.add_argument(
        "--mem-margin",
        type=float,
        default=DEFAULT_MEM_MARGIN,
        help="share added to each point's conservative estimate for its --mem "
        f"(default {DEFAULT_MEM_MARGIN:g})",
    )
    cluster.add_argument(
        "--machine",
        help="the machine profile of the partition's nodes (a key or unique prefix, see "
        "`machines`): where its fitted models cover a point, their upper bound, not the "
        "closed form, gives the job's --mem",
    )
    cluster.add_argument(
        "--work-dir",
        type=Path,
        help="where jobs read their points and write their records, shared with the nodes "
        "(default: beside the database, <db stem>.slurm)",
    )
    cluster.add_argument(
        "--poll",
        type=positive_float,
        default=DEFAULT_POLL_S,
        help=f"seconds between looks at the jobs (default {DEFAULT_POLL_S:g})",
    )


def _slurm_options(args: argparse.Namespace) -> SlurmOptions:
    if not args.partition:
        raise ConfigError(
            "--executor slurm needs --partition NAME (the partitions are listed by `sinfo`)"
        )
    if args.memory_limit is not None:
        raise ConfigError(
            "--memory-limit is for this machine; on Slurm each point's limit is its job's "
            "--mem (set it with --mem, or --mem-margin on top of the estimate)"
        )
    return SlurmOptions(
        partition=args.partition,
        account=args.account,
        max_parallel=args.max_parallel,
        cpus_per_task=args.cpus_per_task,
        mem_margin=args.mem_margin,
        mem_bytes=args.mem,
        work_dir=args.work_dir,
        poll_s=args.poll,
    )


def _nodes_precheck(db_path: Path, requested: str | None, workload: str):
    """The fitted bounds of the nodes' machine profile, if ``--machine`` names one."""
    if requested is None:
        return None
    runs = store.load_runs(db_path, workload=workload) if db_path.exists() else pd.DataFrame()
    known = profiles.profiles_in(runs) if not runs.empty else {}
    return fitted_precheck(db_path, profiles.resolve(requested, known).key)


def _sweep(args: argparse.Namespace) -> int:
    options = _slurm_options(args) if args.executor == "slurm" else None
    if options is not None and args.run_over_bound:
        raise ConfigError(
            "--run-over-bound is for sweeps on this machine; on Slurm each job asks for the "
            "memory its point needs (give --mem to set it)"
        )
    if options is None and (args.partition or args.machine):
        flag = "--partition" if args.partition else "--machine"
        raise ConfigError(
            f"{flag} is for Slurm sweeps: add --executor slurm (a sweep on this machine "
            "uses this machine's fitted models)"
        )
    settings = _settings(args)
    values: dict = {}
    if args.config:
        # Types checked here (`read_settings_file`), meaning by grid_from_mapping below.
        values = read_settings_file(args.config)
    for knob in GRID_KNOBS:
        if getattr(args, knob) is not None:
            values[knob] = getattr(args, knob)
    if not values:
        raise ConfigError(
            "nothing to sweep: give --image-sizes and --batch-sizes, or --config FILE"
        )
    grid = grid_from_mapping(values)
    db_path = open_db(args)
    command = shlex.join(["python", "-m", "profiling", *sys.argv[1:]])
    common = dict(
        repeats=args.repeats, resume=args.resume, command=command, show_progress=not args.quiet
    )
    try:
        if options is not None:
            precheck = _nodes_precheck(db_path, args.machine, grid.workload)
            summary = run_cluster_sweep(
                db_path, grid, settings, options, precheck=precheck, **common
            )
        else:
            precheck = fitted_precheck(db_path)
            summary = run_sweep(
                db_path,
                grid,
                settings,
                precheck=precheck,
                run_over_bound=args.run_over_bound,
                **common,
            )
    except KeyboardInterrupt:
        if options is not None:
            work_dir = options.work_dir or default_work_dir(db_path)
            print(
                "interrupted: the sweep's jobs were cancelled and their points recorded as "
                f"interrupted (its work directory is {work_dir}); run the same command to "
                "measure them again",
                file=sys.stderr,
            )
        else:
            print(
                "interrupted: the point in flight was discarded (a measured point not yet "
                f"stored waits in {pending.pending_dir(db_path)}); run the same command to resume",
                file=sys.stderr,
            )
        return INTERRUPTED_EXIT_CODE
    if summary.interrupted_before or summary.recovered:  # what earlier, dead sweeps left
        dead, kept = len(summary.interrupted_before), summary.recovered
        print(f"marked {dead} dead sweep(s) interrupted; stored {kept} run(s) left pending")
    counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
    print(
        f"sweep {summary.sweep_id}: {counts or 'nothing new'}"
        f"{f', {summary.already_measured} already measured' if summary.already_measured else ''}"
        f" (stored in {db_path})"
    )
    return 0


# --- list / show -------------------------------------------------------------------------


def _add_workload_filter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload", choices=list(workloads.WORKLOADS), help="only runs of this network"
    )


def _prepare_list(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", help="only this sweep id")
    parser.add_argument("--status", choices=STATUSES)
    parser.add_argument("--host", help="only runs measured on this hostname")
    _add_workload_filter(parser)
    parser.add_argument("--csv", action="store_true", help="CSV on stdout instead of a table")
    parser.add_argument("--all-columns", action="store_true")
    add_db_option(parser)


def _list(args: argparse.Namespace) -> int:
    db_path = open_db(args)
    runs = store.load_runs(
        db_path, sweep_id=args.sweep, status=args.status, hostname=args.host, workload=args.workload
    )
    if not args.all_columns:
        runs = runs[LIST_COLUMNS]
    if args.csv:
        runs.to_csv(sys.stdout, index=False)
        return 0
    if runs.empty:
        print("no runs match")
        return 0
    shown = runs.copy()
    for column in ("peak_sampled_bytes", "peak_hwm_bytes"):
        if column in shown:
            shown[column.replace("_bytes", "_gib")] = shown.pop(column).map(
                lambda v: "" if pd.isna(v) else f"{v / 2**30:.3f}"
            )
    if "run_id" in shown:
        shown["run_id"] = shown["run_id"].str[:12]
    print(shown.to_string(index=False))
    print(f"{len(shown)} run(s)")
    return 0


def _prepare_show(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_id", help="a run id or a unique prefix of one (see `list`)")
    parser.add_argument("--timeline", action="store_true", help="print the samples as CSV too")
    add_db_option(parser)


def _show(args: argparse.Namespace) -> int:
    db_path = open_db(args)
    run = store.get_run(db_path, args.run_id)
    width = max(len(name) for name in run)
    for name, value in run.items():
        if name.endswith("_bytes") and isinstance(value, int):
            value = f"{value} ({_gib(value)})"
        print(f"{name:<{width}}  {value}")
    samples = store.load_samples(db_path, [run["run_id"]])
    print(f"{'samples':<{width}}  {len(samples)}")
    if args.timeline:
        samples[["t_s", "rss_bytes"]].to_csv(sys.stdout, index=False)
    return 0


def _prepare_summary(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sweep", help="only this sweep id")
    parser.add_argument("--host", help="only runs measured on this hostname")
    parser.add_argument(
        "--metric",
        choices=tuple(PEAK_COLUMNS),
        default="hwm",
        help="kernel high-water mark (default) or the sampled peak",
    )
    _add_workload_filter(parser)
    _add_machine_filter(parser)
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    add_db_option(parser)


def _add_machine_filter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--machine",
        help="only runs of this machine profile: a key or a unique prefix (see `machines`)",
    )


def _runs_of_machine(runs: pd.DataFrame, requested: str | None) -> pd.DataFrame:
    """``runs`` of the profile ``requested`` names (all when None); refuses an unknown one."""
    runs = profiles.with_keys(runs)
    if requested is None:
        return runs
    wanted = profiles.resolve(requested, profiles.profiles_in(runs)).key
    return profiles.runs_of(runs, wanted)


def _summary(args: argparse.Namespace) -> int:
    runs = store.load_runs(
        open_db(args), sweep_id=args.sweep, hostname=args.host, workload=args.workload
    )
    runs = _runs_of_machine(runs, args.machine)
    if runs.empty:
        print("no runs match")
        return 0
    found = profiles.profiles_in(runs)
    # A median over two machines' (or networks') runs would be no one's peak: one table each.
    for key, profile in found.items():
        mine = networks(profiles.runs_of(runs, key))
        if len(found) > 1:
            print(f"{'## ' if args.markdown else ''}{profile.label} (profile {key})\n")
        for label, network_runs in mine:
            if len(mine) > 1:
                print(f"{'### ' if args.markdown else ''}{label}\n")
            table = peak_table(network_runs, args.metric)
            print(to_markdown(table) if args.markdown else table.to_string())
            print()
    print(
        f"Peak {args.metric} in GiB (median over repeats, xN = N runs); other cells "
        "show why a point has no measurement."
    )
    return 0


# --- export / import ---------------------------------------------------------------------


def _prepare_export(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", type=Path, help="runs file, .csv or .parquet")
    parser.add_argument("--timelines", type=Path, help="also write the samples to this file")
    parser.add_argument("--sweep", help="only this sweep id")
    _add_workload_filter(parser)
    add_db_option(parser)


def _export(args: argparse.Namespace) -> int:
    count = exchange.export_runs(
        open_db(args), args.out, args.timelines, sweep_id=args.sweep, workload=args.workload
    )
    print(
        f"exported {count} run(s) to {args.out}"
        f"{f' and their timelines to {args.timelines}' if args.timelines else ''}"
    )
    return 0


def _prepare_import(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", type=Path, help="runs file, .csv or .parquet (as `export` writes)")
    parser.add_argument("--timelines", type=Path, help="the matching samples file")
    add_db_option(parser)


def _import(args: argparse.Namespace) -> int:
    db_path = open_db(args)
    count = exchange.import_runs(db_path, args.runs, args.timelines)
    print(f"imported {count} run(s) into {db_path}")
    return 0


# --- calibrate / machines ----------------------------------------------------------------


def _prepare_calibrate(parser: argparse.ArgumentParser) -> None:
    add_workload_option(parser)
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
        help="only measure the grid; fit this machine's models later",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    _add_measure_options(parser)


def _no_calibration(workload: str, path: Path) -> ConfigError:
    return ConfigError(
        f"no calibration grid for workload {workload!r} in {path}. Choose one from runs of two "
        f"machine profiles with `python -m benchmarks.calibration --workload {workload} "
        "--other RUNS_FILE_OR_DB --write`, or measure a grid of your own with "
        f"`python -m profiling sweep --workload {workload} ...` and fit it with "
        f"`python -m modeling evaluate --workload {workload} --machine KEY`"
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


def _calibrate(args: argparse.Namespace) -> int:
    calibration = calibration_for(args.workload, args.calibration_file)
    if calibration is None:
        raise _no_calibration(args.workload, args.calibration_file)
    settings = _settings(args)
    db_path = open_db(args)
    here = this_profile()
    started = time.perf_counter()
    print(f"This machine: {here.label} (profile {here.key})")
    print(f"Calibration grid of {args.workload}: {_describe(calibration)}")
    missing = missing_points(db_path, calibration, here.key)
    print(f"{len(missing)} of {calibration.points} point(s) to measure here", flush=True)
    if missing:
        command = shlex.join(["python", "-m", "profiling", *sys.argv[1:]])
        try:
            summary = run_sweep(
                db_path,
                calibration.grid(),
                settings,
                command=command,
                show_progress=not args.quiet,
            )
        except KeyboardInterrupt:
            print(
                "interrupted: run the same command to measure the rest "
                f"(a measured point not yet stored waits in {pending.pending_dir(db_path)})",
                file=sys.stderr,
            )
            return INTERRUPTED_EXIT_CODE
        counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
        print(f"measured: {counts or 'nothing new'} (sweep {summary.sweep_id}, in {db_path})")
        still = missing_points(db_path, calibration, here.key)
        if still:
            listed = ", ".join(f"{size} batch {batch}" for size, batch in still)
            print(
                f"{len(still)} point(s) still have no ok run here ({listed}); "
                f"`python -m profiling list --status skipped --db {db_path}` says why",
                file=sys.stderr,
            )
    print(f"measuring took {(time.perf_counter() - started) / 60:.1f} min", flush=True)
    if args.fit:
        fitting = fit_command(args.workload, here.key, db_path)
        print(f"fitting: {shlex.join(['python', *fitting[1:]])}", flush=True)
        fit_started = time.perf_counter()
        # A subprocess, not an import: profiling never imports modeling (tests/unit/test_layers).
        code = subprocess.run(fitting, cwd=REPO_ROOT, check=False).returncode
        if code != 0:
            print(f"error: fitting failed (exit code {code}); see above", file=sys.stderr)
            return code
        print(f"fitting took {(time.perf_counter() - fit_started) / 60:.1f} min")
    print(f"\nMachine profile: {here.label}, key {here.key}")
    db_flag = f" --db {db_path}" if args.db else ""
    sizing = (
        f"python -m modeling size image --workload {args.workload} --budget {EXAMPLE_BUDGET} "
        f"--batch-size {EXAMPLE_BATCH} --machine {here.key}{db_flag}"
    )
    if args.fit:
        print(f"Size for this machine: {sizing}")
    else:
        fit = shlex.join(["python", *fit_command(args.workload, here.key, db_path)[1:]])
        print(f"Fit its models with `{fit}`, then size with: {sizing}")
    return 0


def _prepare_machines(parser: argparse.ArgumentParser) -> None:
    _add_workload_filter(parser)
    parser.add_argument(
        "--compare",
        action="store_true",
        help="instead, every configuration measured on two or more profiles, side by side",
    )
    parser.add_argument(
        "--reference",
        help="with --compare: the profile the ratios are against (default: most runs)",
    )
    parser.add_argument("--markdown", action="store_true", help="with --compare: Markdown")
    add_db_option(parser)


def _compare_machines(args: argparse.Namespace) -> int:
    runs = store.load_runs(open_db(args), workload=args.workload)
    reference = None
    if args.reference:
        reference = profiles.resolve(args.reference, profiles.profiles_in(runs)).key
    frame = machines_view.compared(runs, reference)
    if frame.empty:
        print(
            "no configuration was measured on two machine profiles; "
            "`python -m profiling calibrate` on another machine measures one"
        )
        return 0
    table = machines_view.side_by_side(frame)
    print(markdown_table(table, decimals=3) if args.markdown else table.to_string(index=False))
    others = frame[~frame["reference"]]
    for machine, group in others.groupby("machine", sort=False):
        ratios = group["ratio"].dropna()
        print(
            f"\n{machine} over {frame.loc[frame['reference'], 'machine'].iloc[0]}: "
            f"{len(ratios)} configuration(s), ratio median {ratios.median():.3f}, "
            f"min {ratios.min():.3f}, max {ratios.max():.3f}"
        )
    print("\nPeak: median kernel high-water mark (GiB) of the ok runs on each profile.")
    return 0


def _machines(args: argparse.Namespace) -> int:
    if args.compare:
        return _compare_machines(args)
    db_path = open_db(args)
    here = this_profile()
    table = profile_table(db_path, here.key, args.workload)
    if table.empty:
        print("no runs match")
    else:
        print(table.to_string(index=False))
    if here.key not in set(table["profile"]):
        workload = args.workload or workloads.DEFAULT_WORKLOAD
        how = (
            f"`python -m profiling calibrate --workload {workload}` measures the few it needs"
            if calibration_for(workload) is not None
            else f"measure at least {MIN_FIT_CONFIGURATIONS} configurations "
            f"(`python -m profiling sweep --workload "
            f"{workload} ...`) and fit them (`python -m modeling evaluate --machine {here.key}`)"
        )
        print(f"\nThis machine ({here.label}, profile {here.key}) has no runs here; {how}.")
    if here.onednn_note:
        print(f"\nThis machine: {here.onednn_note}")
    # The precisions oneDNN does not take here train on another profile of this machine.
    elsewhere: dict[profiles.MachineProfile, list[str]] = {}
    for precision in PRECISIONS:
        if (other := this_profile(precision)) != here:
            elsewhere.setdefault(other, []).append(precision)
    for other, precisions in elsewhere.items():
        named = " and ".join(precisions)
        print(
            f"\nThis machine at {named}: profile {other.key} ({other.label}). "
            f"{other.onednn_note_for(named)}"
        )
    print(
        "\nruns: every status; ok and configurations: ok runs only; fitted: an evaluation of "
        "that workload on that profile is stored in this database (the bundled evaluations "
        "are stored on the dashboard's first start; `python -m modeling size --machine KEY` "
        "reads them either way)."
    )
    return 0


COMMANDS = {
    "run": (_prepare_run, _run, "profile one configuration in a fresh process"),
    "sweep": (_prepare_sweep, _sweep, "profile a grid of configurations, resumably"),
    "calibrate": (
        _prepare_calibrate,
        _calibrate,
        "measure the calibration grid on this machine and fit its models",
    ),
    "machines": (_prepare_machines, _machines, "list the machine profiles of the stored runs"),
    "list": (_prepare_list, _list, "list stored runs"),
    "show": (_prepare_show, _show, "show one run in full"),
    "summary": (_prepare_summary, _summary, "peak memory by image size and batch size"),
    "export": (_prepare_export, _export, "write runs (and timelines) to CSV or Parquet"),
    "import": (_prepare_import, _import, "store runs measured elsewhere from CSV or Parquet"),
}


# name -> (adds the subcommand's arguments, runs it and returns the exit code, summary)
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m profiling",
        description="Profile the peak memory of 3D U-Net training and keep it in DuckDB.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_commands(commands, COMMANDS)
    return parser


def _raise_keyboard_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # SIGTERM stops a sweep the same clean way as Ctrl-C.
    signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
    try:
        return run_handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return INTERRUPTED_EXIT_CODE
