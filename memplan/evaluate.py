"""``memplan evaluate``: score every model on the stored runs and store the fitted models.

Each workload and machine profile is evaluated on its own, on the usable runs of
one step count (`modeling.evaluation.steps`: ``--steps``, else the count with
the most configurations); runs at other step counts are left out and the stored
evaluation says how many. ``--only-changed`` (the dashboard's refit after a
sweep) re-evaluates only the pairs whose runs at the step count their latest
evaluation fit differ from the runs it fit. ``--models`` scores some models and
adds them to the latest evaluation: its other models are kept in the new one
(`application.carry`), so answers and pages never lose them. The flags become one
`application.evaluate.EvaluateRequest`, which `application.evaluate.run` evaluates.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from application import evaluate, readonly
from application.evaluate import (
    DEFAULT_COVERAGE,
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    SPLIT_KINDS,
    spec_names,
)
from core import workloads
from core.errors import ModelingError
from memplan import model_options
from memplan.commands import add_db_option, positive_int


def prepare(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
    _add_scope(parser)
    _add_scoring(parser)
    _add_fitting(parser)
    _add_storing(parser)


def _add_scope(parser: argparse.ArgumentParser) -> None:
    """Which workloads and machine profiles to evaluate."""
    parser.add_argument(
        "--workload",
        choices=list(workloads.WORKLOADS),
        help="evaluate only this network (default: every workload with ok runs, each on its own)",
    )
    parser.add_argument(
        "--machine",
        help="evaluate only this machine profile: a key or a unique prefix (default: every "
        "profile with enough runs, each on its own; `memplan machines` lists them)",
    )
    model_options.add_framework_option(parser, "evaluate the profiles of this framework")


def _add_scoring(parser: argparse.ArgumentParser) -> None:
    """How the models are scored: the repeated splits, the models, the bounds."""
    parser.add_argument(
        "--seeds",
        type=positive_int,
        default=DEFAULT_SEEDS,
        help=f"random 70/30 splits to repeat (default {DEFAULT_SEEDS})",
    )
    parser.add_argument(
        "--extrapolation-seeds",
        type=positive_int,
        default=DEFAULT_EXTRAPOLATION_SEEDS,
        help="repeats of the fixed extrapolation split, with other model seeds "
        f"(default {DEFAULT_EXTRAPOLATION_SEEDS})",
    )
    parser.add_argument(
        "--models",
        nargs="+",
        metavar="MODEL",
        help=f"only these (default all), kept beside the latest evaluation's other models: "
        f"{', '.join(spec_names(evaluate.catalogue()))}",
    )
    parser.add_argument(
        "--splits",
        nargs="+",
        choices=SPLIT_KINDS,
        default=list(SPLIT_KINDS),
        help="which split kinds to score (default all; the knob split only where a knob varies)",
    )
    parser.add_argument(
        "--coverage",
        type=model_options.fraction,
        default=DEFAULT_COVERAGE,
        help=f"coverage of the stored upper bounds (default {DEFAULT_COVERAGE})",
    )


def _add_fitting(parser: argparse.ArgumentParser) -> None:
    """Which runs are fitted, and with which settings."""
    parser.add_argument(
        "--steps",
        type=positive_int,
        default=None,
        help="fit only runs of this many training steps (default: the step count with the "
        "most distinct configurations; runs at other step counts are left out)",
    )
    parser.add_argument(
        "--only-changed",
        action="store_true",
        help="re-evaluate only the workloads and profiles whose usable runs, at the step "
        "count their latest evaluation fit, changed since it (the refit after a sweep)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny symbolic-regression settings: a smoke test, not a result",
    )


def _add_storing(parser: argparse.ArgumentParser) -> None:
    """Where the results go."""
    parser.add_argument(
        "--store-db", type=Path, default=None, help="store results in this database instead of --db"
    )
    parser.add_argument(
        "--no-store", dest="store", action="store_false", help="print only; store nothing"
    )


def run(args: argparse.Namespace) -> int:
    if args.store and readonly.read_only():
        raise ModelingError(
            f"{readonly.READ_ONLY_ENV_VAR} is set, so nothing is stored: pass --no-store to "
            "score the models without storing them, or unset it"
        )
    request = evaluate.EvaluateRequest(
        db_path=model_options.db_for_reading(args),
        workload=args.workload,
        machine=args.machine,
        framework=args.framework,
        seeds=args.seeds,
        extrapolation_seeds=args.extrapolation_seeds,
        models=args.models,
        splits=args.splits,
        coverage=args.coverage,
        steps=args.steps,
        only_changed=args.only_changed,
        quick=args.quick,
        store=args.store,
        store_db=args.store_db,
        command=shlex.join(["memplan", *sys.argv[1:]]),
    )
    return evaluate.run(request)
