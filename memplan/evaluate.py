"""``memplan evaluate``: score every model on the stored runs and store the fitted models."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from core import database, profiles, store, workloads
from core.commands import add_db_option, positive_int
from memplan import model_options
from modeling.errors import ModelingError
from modeling.estimators.catalogue import catalogue, pick, spec_names
from modeling.evaluation.bounds import DEFAULT_COVERAGE
from modeling.evaluation.fitting import checked_coverage, fit_predictors, with_calibration
from modeling.evaluation.protocol import (
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    evaluate,
    summarise,
)
from modeling.evaluation.splits import SPLIT_KINDS
from modeling.features import measured_frame
from modeling.stored import readonly
from modeling.stored import tables as results
from presentation import report


def prepare(parser: argparse.ArgumentParser) -> None:
    add_db_option(parser)
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
        help=f"only these (default all): {', '.join(spec_names(catalogue()))}",
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
    parser.add_argument(
        "--quick",
        action="store_true",
        help="tiny symbolic-regression settings: a smoke test, not a result",
    )
    parser.add_argument(
        "--store-db", type=Path, default=None, help="store results in this database instead of --db"
    )
    parser.add_argument(
        "--no-store", dest="store", action="store_false", help="print only; store nothing"
    )


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    if args.store and readonly.read_only():
        raise ModelingError(
            f"{readonly.READ_ONLY_ENV_VAR} is set, so nothing is stored: pass --no-store to "
            "score the models without storing them, or unset it"
        )
    db_path = model_options.db_for_reading(args)
    specs = pick(catalogue(quick=args.quick), args.models)
    runs = store.load_runs(db_path, status="ok", workload=args.workload)
    runs = profiles.with_keys(runs)
    groups = _evaluation_groups(runs, args.machine)
    if not groups:
        raise ModelingError(
            f"{db_path} has no ok runs to evaluate; measure some with `memplan sweep`"
        )
    frame = measured_frame(runs)
    evaluated = 0
    for workload, machine in groups:
        name = f"{workload} on {machine.label} (profile {machine.key})"
        if not machine.determined:
            # Never fitted together with anything: the runs did not say which CPU they had.
            _progress(f"skipped {name}: its runs did not record their machine")
            continue
        key = profiles.KEY_COLUMN
        chosen = runs[(runs["workload"] == workload) & (runs[key] == machine.key)]
        try:
            _evaluate_group(args, db_path, workload, machine, specs, frame.loc[chosen["run_id"]])
        except ModelingError as error:
            # Evaluating every group: one with too few runs must not stop the others.
            if len(groups) == 1:
                raise ModelingError(f"{name}: {error}") from error
            _progress(f"skipped {name}: {error}")
        else:
            evaluated += 1
    if not evaluated:
        raise ModelingError(
            "no workload and machine profile has enough runs to evaluate; measure more "
            "(memplan sweep, or memplan calibrate for this machine)"
        )
    return 0


def _evaluation_groups(
    runs: pd.DataFrame, requested: str | None
) -> list[tuple[str, profiles.MachineProfile]]:
    """(workload, profile) pairs to evaluate, each on its own runs (keyed: `with_keys`)."""
    known = profiles.profiles_in(runs)
    if requested is not None:
        wanted = profiles.resolve(requested, known).key
        known = {wanted: known[wanted]}
    pairs = runs[["workload", profiles.KEY_COLUMN]].drop_duplicates()
    chosen = [(str(w), known[key]) for w, key in pairs.itertuples(index=False) if key in known]
    return sorted(chosen, key=lambda pair: (pair[0], pair[1].label, pair[1].key))


# The command's flags, then the group (its workload, profile, models and runs): 6 parameters.
def _evaluate_group(
    args: argparse.Namespace,
    db_path: Path,
    workload: str,
    machine: profiles.MachineProfile,
    specs: list,
    frame: pd.DataFrame,
) -> None:
    """Score, fit and store one workload's models on one machine profile's runs only."""
    _progress(f"evaluating {workloads.get(workload).TITLE} on {machine.label}")
    evaluation = evaluate(
        frame,
        specs,
        seeds=range(args.seeds),
        kinds=args.splits,
        progress=_progress,
        extrapolation_seeds=range(args.extrapolation_seeds),
    )
    seeds = f"seeds: {args.seeds} random split(s), {args.extrapolation_seeds} extrapolation"
    print(
        f"{workload} on {machine.label} (profile {machine.key}): {evaluation.n_runs} ok run(s), "
        f"{evaluation.n_points} configuration(s) from {db_path}; {seeds}\n"
    )
    print(report.markdown_table(summarise(evaluation, specs)))
    if not args.store:
        return
    # The bounds' evidence: held-out predictions counted by configuration, stored with the rest.
    evaluation = with_calibration(evaluation, frame, specs, progress=_progress)
    _progress(f"fitting the final {workload} models on all its runs")
    predictors = fit_predictors(specs, frame, evaluation, args.coverage)
    print("\n" + report.formulas_table(predictors))
    checked = {
        p.name: checked_coverage(evaluation, frame, p.name, args.coverage) for p in predictors
    }
    print("\n" + report.bounds_table(predictors, checked))
    target = database.ensure_database(args.store_db) if args.store_db else db_path
    command = shlex.join(["memplan", *sys.argv[1:]])
    evaluation_id = results.store_results(
        target, evaluation, predictors, command, workload=workload, machine=machine.key
    )
    print(
        f"\nstored {workload} evaluation {evaluation_id[:12]} and {len(predictors)} "
        f"model(s) in {target}\n"
    )
