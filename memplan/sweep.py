"""``memplan sweep``: profile a grid of configurations, resumably, here or on Slurm.

`sweep_here` is the sweep on this machine as a use case: `memplan.verify`
calls it to measure a sizing answer, with no process in between.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

import pandas as pd

from core import profiles, store, workloads
from core.commands import SIZE_HELP, open_db, positive_float, positive_int
from core.errors import ConfigError
from core.settings import read_settings_file
from core.units import parse_bytes
from memplan import options
from memplan.exitcodes import FAILED_EXIT_CODE, INTERRUPTED_EXIT_CODE, SUCCESS_EXIT_CODE
from presentation.sweep_guard import fitted_precheck
from profiling import pending
from profiling.cluster_sweep import run_cluster_sweep
from profiling.lifecycle import SweepPlan, SweepSummary
from profiling.local_sweep import run_sweep
from profiling.slurm_points import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    DEFAULT_POLL_S,
    SlurmOptions,
)
from profiling.slurm_workdir import default_work_dir
from profiling.sweep import GRID_KNOBS, Grid, grid_from_mapping

# What a sweep stores as its command line: `profiling.launcher` finds its job's sweep by it.
PROGRAM = "memplan"


def stored_command(argv: list[str]) -> str:
    """The command line a sweep stores: ``memplan sweep ...``."""
    return shlex.join([PROGRAM, *argv])


def prepare(parser: argparse.ArgumentParser) -> None:
    _prepare_grid(parser)
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
    options.add_measure_options(parser)
    _prepare_cluster(parser)


def _prepare_grid(parser: argparse.ArgumentParser) -> None:
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
    for name, knob in workloads.KNOBS.items():  # one list flag per declared knob
        choices = f"; of {', '.join(knob.choices)}" if knob.choices else ""
        parser.add_argument(
            knob.sweep_flag,
            nargs="+",
            type=knob.kind,
            help=f"{knob.help}{choices} ({', '.join(workloads.owners(name))})",
        )


def _prepare_cluster(parser: argparse.ArgumentParser) -> None:
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
    if args.run_over_bound:
        raise ConfigError(
            "--run-over-bound is for sweeps on this machine; on Slurm each job asks for the "
            "memory its point needs (give --mem to set it)"
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


def _grid(args: argparse.Namespace) -> Grid:
    """The grid of ``--config`` with the flags given on top; `ConfigError` for none."""
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
    return grid_from_mapping(values)


def run(args: argparse.Namespace) -> int:
    slurm = _slurm_options(args) if args.executor == "slurm" else None
    if slurm is None and (args.partition or args.machine):
        flag = "--partition" if args.partition else "--machine"
        raise ConfigError(
            f"{flag} is for Slurm sweeps: add --executor slurm (a sweep on this machine "
            "uses this machine's fitted models)"
        )
    settings = options.settings(args)
    grid = _grid(args)
    db_path = open_db(args)
    plan = SweepPlan(
        db_path,
        grid,
        settings,
        repeats=args.repeats,
        resume=args.resume,
        command=stored_command(sys.argv[1:]),
        show_progress=not args.quiet,
    )
    if slurm is None:
        return sweep_here(plan, run_over_bound=args.run_over_bound)
    try:
        precheck = _nodes_precheck(db_path, args.machine, grid.workload)
        summary = run_cluster_sweep(dataclasses.replace(plan, precheck=precheck), slurm)
    except KeyboardInterrupt:
        print(
            "interrupted: the sweep's jobs were cancelled and their points recorded as "
            f"interrupted (its work directory is {slurm.work_dir or default_work_dir(db_path)}); "
            "run the same command to measure them again",
            file=sys.stderr,
        )
        return INTERRUPTED_EXIT_CODE
    _print_summary(summary, db_path)
    return exit_code(summary)


def sweep_here(plan: SweepPlan, run_over_bound: bool = False) -> int:
    """Sweep ``plan`` on this machine, print what it stored; the exit code.

    Guarded by this machine's fitted models (`presentation.sweep_guard`) unless the
    plan brings its own pre-check; Ctrl-C or SIGTERM discards the point in flight and
    exits `INTERRUPTED_EXIT_CODE`.
    """
    if plan.precheck is None:
        precheck = fitted_precheck(plan.db_path, framework=plan.settings.framework)
        plan = dataclasses.replace(plan, precheck=precheck)
    try:
        summary = run_sweep(plan, run_over_bound=run_over_bound)
    except KeyboardInterrupt:
        print(
            "interrupted: the point in flight was discarded (a measured point not yet "
            f"stored waits in {pending.pending_dir(plan.db_path)}); run the same command to resume",
            file=sys.stderr,
        )
        return INTERRUPTED_EXIT_CODE
    _print_summary(summary, plan.db_path)
    return exit_code(summary)


def exit_code(summary: SweepSummary) -> int:
    """FAILED_EXIT_CODE when every point the sweep ran was killed: it measured nothing."""
    if not summary.counts or set(summary.counts) != {"killed"}:
        return SUCCESS_EXIT_CODE
    print(
        "every point was killed from outside memplan, so nothing was measured; run the same "
        "command to measure them again",
        file=sys.stderr,
    )
    return FAILED_EXIT_CODE


def _print_summary(summary: SweepSummary, db_path: Path) -> None:
    if summary.interrupted_before or summary.recovered:  # what earlier, dead sweeps left
        dead, kept = len(summary.interrupted_before), summary.recovered
        print(f"marked {dead} dead sweep(s) interrupted; stored {kept} run(s) left pending")
    counts = ", ".join(f"{n} {status}" for status, n in sorted(summary.counts.items()))
    print(
        f"sweep {summary.sweep_id}: {counts or 'nothing new'}"
        f"{f', {summary.already_measured} already measured' if summary.already_measured else ''}"
        f" (stored in {db_path})"
    )
