"""The flags of the commands that answer from stored models (`size`, `report`,
`evaluate`, `export-results`): the model, the machine profile, the database to read.

Apart from `memplan.options` because they load `modeling` (and so scikit-learn),
which the commands that only measure or list runs do without.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from application import models as results
from application import readonly
from application.sizing import DEFAULT_HEADROOM_PCT
from core import database, frameworks, workloads
from memplan.commands import (
    add_db_option,
    add_knob_options,
    add_workload_option,
    given_knobs,
    open_db,
)

BUDGET_HELP = (
    "host RAM available, with its unit, e.g. 256GiB, 256GB or 64G; every unit is binary "
    "(GB = GiB = 2^30)"
)


def add_machine_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--machine",
        help="the machine profile to answer for: a key or a unique prefix (default: this "
        "machine's if it has fitted models, else the bundled reference's)",
    )


def add_framework_option(parser: argparse.ArgumentParser, what: str) -> None:
    """``--framework``: which framework's runs and models ``what`` (TensorFlow by default)."""
    parser.add_argument(
        "--framework",
        choices=frameworks.FRAMEWORKS,
        default=frameworks.DEFAULT_FRAMEWORK,
        help=f"{what}: {' or '.join(frameworks.FRAMEWORKS)} (default "
        f"{frameworks.DEFAULT_FRAMEWORK}); never another framework's, whose peaks differ 2x "
        "and more",
    )


def add_model_options(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    add_framework_option(parser, "answer from the runs and models of this framework")
    parser.add_argument(
        "--model",
        default=results.BEST,
        help="a stored model (see `evaluate`); default: best, the lowest "
        "mean error on its weakest split (random, extrapolation or knob)",
    )
    add_workload_option(parser)
    add_machine_option(parser)
    add_knob_options(parser)


def headroom_pct(text: str) -> float:
    """A ``--headroom`` in percent, ``20`` or ``20%``; its range is the question's to check
    (`application.sizing.SizingQuestion`: one error line, exit code 2)."""
    try:
        return float(text.strip().removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of percent") from None


def add_headroom_option(parser: argparse.ArgumentParser) -> None:
    """``--headroom PCT``: memory kept free on top of the bound, the Sizing page's default."""
    parser.add_argument(
        "--headroom",
        type=headroom_pct,
        default=DEFAULT_HEADROOM_PCT,
        metavar="PCT",
        help="percent of the bound kept free on top of it for the OS and the data pipeline "
        f"(default {DEFAULT_HEADROOM_PCT:g}, as on the Sizing page); a budget leaves "
        "budget / (1 + PCT/100) for training",
    )


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
