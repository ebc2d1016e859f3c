"""Options more than one subcommand takes, so a flag means the same everywhere.

The most basic ones (``--db``, ``--workload``, the knob flags, value parsers)
are `core.commands`'; these add the measuring flags (`run`, `sweep`,
`calibrate`), the filters of the listings, the model flags of the answers and
``--json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pandas as pd

from core import database, profiles, workloads
from core.commands import (
    SIZE_HELP,
    add_db_option,
    add_knob_options,
    add_workload_option,
    given_knobs,
    open_db,
    positive_float,
    positive_int,
    seed,
)
from core.plausibility import MAX_SEED
from core.units import check_memory_limit, format_gib, parse_bytes
from modeling.stored import readonly
from modeling.stored import tables as results
from profiling.runner import (
    DEFAULT_SAMPLE_INTERVAL_S,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    RunSettings,
)
from profiling.sweep import default_memory_limit_bytes

BUDGET_HELP = "memory available, e.g. 256GiB, 256GB or 64G; every unit is binary (GB = GiB = 2^30)"


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead (stable keys, sizes in bytes: keys ending in _bytes)",
    )


# --- measuring ---------------------------------------------------------------------------


def add_measure_options(parser: argparse.ArgumentParser) -> None:
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


def settings(args: argparse.Namespace) -> RunSettings:
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


def gib(value: float | None) -> str:
    return "-" if value is None or pd.isna(value) else format_gib(value)


# --- filters of the listings -------------------------------------------------------------


def add_workload_filter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload", choices=list(workloads.WORKLOADS), help="only runs of this network"
    )


def add_machine_filter(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--machine",
        help="only runs of this machine profile: a key or a unique prefix (see `machines`)",
    )


def runs_of_machine(runs: pd.DataFrame, requested: str | None) -> pd.DataFrame:
    """``runs`` of the profile ``requested`` names (all when None); refuses an unknown one."""
    runs = profiles.with_keys(runs)
    if requested is None:
        return runs
    wanted = profiles.resolve(requested, profiles.profiles_in(runs)).key
    return profiles.runs_of(runs, wanted)


# --- the models the answers use ----------------------------------------------------------


def add_machine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--machine",
        help="the machine profile to answer for: a key or a unique prefix (default: this "
        "machine's if it has fitted models, else the bundled reference's)",
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    parser.add_argument(
        "--model",
        default=results.BEST,
        help="a stored model (see `evaluate`); default: best, the lowest "
        "mean error on its weakest split (random, extrapolation or knob)",
    )
    add_workload_option(parser)
    add_machine_option(parser)
    add_knob_options(parser)


def knobs(args: argparse.Namespace) -> dict:
    return given_knobs(args, args.workload)


def precision(args: argparse.Namespace) -> str:
    """The precision asked for, else the workload network's own."""
    return knobs(args).get("precision", workloads.get(args.workload).Config.precision)


def db_for_reading(args: argparse.Namespace) -> Path:
    """The database to read; in read-only mode only an existing one, opened for nothing else."""
    if readonly.read_only():
        return readonly.existing(args.db or database.default_db_path())
    return open_db(args)


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (e.g. 0.9), got {text}")
    return value
