"""Command-line pieces every subcommand shares: value parsers, the --db and workload options,
dispatch.

`memplan`'s subcommands (`memplan.cli`) are built and turn a `MemplanError` into
one ``error: ...`` line (exit 2) with these, so a flag means the same in each.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core import database, workloads
from core.dbnames import DB_FLAG
from core.errors import ERROR_EXIT_CODE, ConfigError, MemplanError
from core.plausibility import MAX_SEED
from core.units import SIZE_UNITS_HELP
from core.workloads.base import WorkloadConfig

SIZE_HELP = f"e.g. 16GiB, 1500M or 2T; {SIZE_UNITS_HELP}"


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seed(text: str) -> int:
    """A seed of the synthetic data: what NumPy and Keras take, 0 to MAX_SEED."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"a seed is from 0 to {MAX_SEED} (what NumPy and Keras take), got {value}"
        )
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        DB_FLAG,
        type=Path,
        default=None,
        help="DuckDB file (default: $MEMPLAN_DB, else data/memplan.duckdb). A new file "
        "starts empty, named here or by $MEMPLAN_DB alike; only the repository's "
        "data/memplan.duckdb starts with the bundled reference runs",
    )


def open_db(args: argparse.Namespace, writes: str | None = None) -> Path:
    """The database ``--db`` or the default names, made ready; ``writes`` names a command that
    stores, refused up front under ``MEMPLAN_READ_ONLY`` (`core.database.check_writable`).
    """
    path = args.db or database.default_db_path()
    if writes:
        database.check_writable(path, writes)
    return database.ensure_database(path)


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]


def add_commands(subparsers: Any, commands: dict[str, Command]) -> None:
    """One subcommand per ``name: (prepare, handler, summary)`` entry of ``commands``."""
    for name, (prepare, run, summary) in commands.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        prepare(sub)
        sub.set_defaults(handler=run)


def run_handler(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; a `MemplanError` becomes one ``error: ...`` line, exit 2."""
    try:
        return args.handler(args)
    except MemplanError as error:
        print(f"error: {error}", file=sys.stderr)
        return ERROR_EXIT_CODE


# The network knobs a flag can set, with their type (every workload's `Knob` declarations);
# a workload takes those it has.
KNOB_FLAGS: dict[str, type] = {name: knob.kind for name, knob in workloads.KNOBS.items()}


def add_workload_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload",
        default=workloads.DEFAULT_WORKLOAD,
        choices=list(workloads.WORKLOADS),
        help=f"the network (default {workloads.DEFAULT_WORKLOAD})",
    )


def add_knob_options(parser: argparse.ArgumentParser) -> None:
    """One flag per network knob (default: the workload's own default)."""
    for name, knob in workloads.KNOBS.items():
        choices = f"; one of {', '.join(knob.choices)}" if knob.choices else ""
        parser.add_argument(
            knob.flag,
            type=knob.kind,
            default=None,
            help=f"{knob.help}{choices} ({', '.join(workloads.owners(name))}; "
            "default: the network's own)",
        )


def add_knob_value_list_options(parser: argparse.ArgumentParser, purpose: str) -> None:
    """One repeatable flag per network knob (``--precision mixed_bfloat16``), each value
    one for ``purpose``; `given_knob_values` reads them."""
    for name, knob in workloads.KNOBS.items():
        choices = f"; one of {', '.join(knob.choices)}" if knob.choices else ""
        parser.add_argument(
            knob.flag,
            type=knob.kind,
            action="append",
            default=None,
            help=f"{knob.help}: a value {purpose}{choices}; repeatable "
            f"({', '.join(workloads.owners(name))})",
        )


def given_knob_values(args: argparse.Namespace, workload: str) -> dict[str, list[Any]]:
    """The values of `add_knob_value_list_options`' flags given, each checked against its
    knob (`Knob.check`); `ConfigError` for a knob ``workload`` lacks or a value it refuses."""
    given = given_knobs(args, workload)
    for knob, values in given.items():
        for value in values:
            workloads.KNOBS[knob].check(value)
    return {knob: list(dict.fromkeys(values)) for knob, values in given.items()}


def given_knobs(args: argparse.Namespace, workload: str) -> dict[str, Any]:
    """The knob flags given on the command line; `ConfigError` for one ``workload`` lacks."""
    given = {knob: getattr(args, knob) for knob in KNOB_FLAGS if getattr(args, knob) is not None}
    module = workloads.get(workload)
    foreign = [knob for knob in given if knob not in module.NETWORK_KNOBS]
    if foreign:
        flags = ", ".join(f"--{knob.replace('_', '-')}" for knob in foreign)
        raise ConfigError(
            f"the {workload} workload has no {flags}; its knobs are "
            f"{', '.join(module.NETWORK_KNOBS)}"
        )
    return given


def config_from_args(args: argparse.Namespace, image_size: str, batch_size: int) -> WorkloadConfig:
    """The configuration that ``--workload``, the knob flags, an image size and a batch name."""
    module = workloads.get(args.workload)
    shape = module.parse_image_shape(image_size)
    return module.Config(shape, batch_size, **given_knobs(args, args.workload))


# --- settings files ----------------------------------------------------------------------
