"""``memplan sweep``: profile a grid of configurations, resumably, here or on Slurm.

The flags describe a `profiling.jobspec.SweepJob` (`job_of`), run as every sweep is
(`application.sweep_job.run`); `command_of` is a job as the flags that give it.
`sweep_here` is the sweep on this machine as a use case: `memplan.verify`
calls it to measure a sizing answer, with no process in between.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
import sys
from pathlib import Path

from application import sweep_job
from application.sweep_guard import fitted_precheck
from application.sweeps import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    DEFAULT_POLL_S,
    GRID_KNOBS,
    Grid,
    SlurmOptions,
    SweepJob,
    SweepPlan,
    grid_from_mapping,
    run_here,
)
from core import workloads
from core.errors import ConfigError
from core.settings import read_settings_file
from core.units import parse_bytes
from memplan import options
from memplan.commands import SIZE_HELP, open_db, positive_float, positive_int

# What a sweep stores as its command line: `profiling.launcher` finds its job's sweep by it.
PROGRAM = "memplan"


def stored_command(argv: list[str]) -> str:
    """The command line a sweep stores: ``memplan sweep ...``."""
    return shlex.join([PROGRAM, *argv])


def command_of(job: SweepJob) -> str:
    """The ``memplan sweep`` command that runs ``job`` on this machine (what verifying an
    answer shows and stores)."""
    args = ["sweep"]
    for knob, values in job.grid.to_dict().items():
        listed = [values] if isinstance(values, str) else values
        args += [f"--{knob.replace('_', '-')}", *map(str, listed)]
    args += ["--framework", job.framework, "--steps", str(job.steps)]
    if job.memory_limit_bytes is not None:
        args += ["--memory-limit", str(job.memory_limit_bytes)]
    if job.run_over_bound:
        args.append("--run-over-bound")
    if job.device != "cpu":
        args += ["--device", job.device]
    return stored_command([*args, "--db", str(job.db_path)])


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
    options.add_device_option(parser)
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


def job_of(args: argparse.Namespace, db_path: Path) -> SweepJob:
    """The sweep job the flags describe, against ``db_path``; `ConfigError` for a clash."""
    slurm = _slurm_options(args) if args.executor == "slurm" else None
    if slurm is None and (args.partition or args.machine):
        flag = "--partition" if args.partition else "--machine"
        raise ConfigError(
            f"{flag} is for Slurm sweeps: add --executor slurm (a sweep on this machine "
            "uses this machine's fitted models)"
        )
    options.settings(args)  # a framework this Python lacks, a limit above its RAM: refused
    return SweepJob(
        db_path=db_path,
        grid=_grid(args),
        framework=args.framework,
        steps=args.steps,
        memory_limit_bytes=args.memory_limit,
        seed=args.seed,
        sample_interval_s=args.interval,
        timeout_s=args.timeout,
        repeats=args.repeats,
        resume=args.resume,
        run_over_bound=args.run_over_bound,
        show_progress=not args.quiet,
        slurm=slurm,
        machine=args.machine,
        origin=stored_command(sys.argv[1:]),
        device=args.device,
    )


def run(args: argparse.Namespace) -> int:
    job = job_of(args, Path())  # checked before the database is touched
    return sweep_job.run(dataclasses.replace(job, db_path=open_db(args)))


def sweep_here(plan: SweepPlan, run_over_bound: bool = False) -> int:
    """Sweep ``plan`` on this machine, print what it stored; the exit code.

    Guarded by this machine's fitted models (`application.sweep_guard`) unless the
    plan brings its own pre-check; Ctrl-C or SIGTERM discards the point in flight and
    exits `INTERRUPTED_EXIT_CODE`.
    """
    if plan.precheck is None:
        precheck = fitted_precheck(plan.db_path, framework=plan.settings.framework)
        plan = dataclasses.replace(plan, precheck=precheck)
    return run_here(plan, run_over_bound=run_over_bound)
