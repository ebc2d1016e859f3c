"""Options more than one subcommand takes, so a flag means the same everywhere.

The most basic ones (``--db``, ``--workload``, the knob flags, value parsers)
are `memplan.commands`'; these add the measuring flags (`run`, `sweep`,
`calibrate`), the filters of the listings and ``--json``. The flags of the
answers, which need `modeling`, are `memplan.model_options`'.
"""

from __future__ import annotations

import argparse

import pandas as pd

from application.sweeps import (
    DEFAULT_SAMPLE_INTERVAL_S,
    DEFAULT_STEPS,
    DEFAULT_TIMEOUT_S,
    RunSettings,
    check_device,
    default_memory_limit_bytes,
)
from core import frameworks, profiles, workloads
from core.plausibility import MAX_SEED
from core.units import check_memory_limit, format_gib, parse_bytes
from memplan.commands import (
    SIZE_HELP,
    add_db_option,
    positive_float,
    positive_int,
    seed,
)


def add_json_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead (stable keys, sizes in bytes: keys ending in _bytes)",
    )


# --- measuring ---------------------------------------------------------------------------


def add_measure_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--framework",
        choices=frameworks.FRAMEWORKS,
        default=frameworks.DEFAULT_FRAMEWORK,
        help="what trains each point: the workload's Keras model on TensorFlow, or its "
        f"native PyTorch model on torch ({frameworks.INSTALL_HINTS[frameworks.TORCH]}); "
        f"default {frameworks.DEFAULT_FRAMEWORK}",
    )
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


def add_device_option(parser: argparse.ArgumentParser) -> None:
    """``--device`` of `run` and `sweep` (calibrating is of host RAM only)."""
    parser.add_argument(
        "--device",
        default="cpu",
        help="where each point trains: cpu (default), or cuda / cuda:N, that GPU, recording "
        "its allocator peaks, NVML used memory and facts (docs/gpu.md)",
    )


def settings(args: argparse.Namespace) -> RunSettings:
    """The measuring flags; `ConfigError` for a memory limit above this machine's RAM, or
    a framework this Python does not have (saying how to install it)."""
    frameworks.check_installed(args.framework)
    device = getattr(args, "device", "cpu")
    check_device(device, args.framework)
    if args.memory_limit is not None:
        check_memory_limit(args.memory_limit)
    return RunSettings(
        memory_limit_bytes=args.memory_limit or default_memory_limit_bytes(),
        steps=args.steps,
        seed=args.seed,
        sample_interval_s=args.interval,
        timeout_s=args.timeout,
        framework=args.framework,
        device=device,
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
