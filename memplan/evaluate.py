"""``memplan evaluate``: score every model on the stored runs and store the fitted models.

Each workload and machine profile is evaluated on its own, on the usable runs of
one step count (`modeling.evaluation.steps`: ``--steps``, else the count with
the most configurations); runs at other step counts are left out and the stored
evaluation says how many. ``--only-changed`` (the dashboard's refit after a
sweep) re-evaluates only the pairs whose runs at the step count their latest
evaluation fit differ from the runs it fit. ``--models`` scores some models and
adds them to the latest evaluation: its other models are kept in the new one
(`application.carry`), so answers and pages never lose them.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

import pandas as pd

from application import readonly, stored
from application.results_store import EvaluationFacts, store_results
from core import database, frameworks, profiles, store, workloads
from core.profile_frameworks import check_framework, of_framework, other_frameworks_note
from memplan import model_options
from memplan.commands import add_db_option, positive_int
from modeling.errors import ModelingError, NoModelsError
from modeling.estimators.catalogue import catalogue, pick, spec_names
from modeling.evaluation.bounds import DEFAULT_COVERAGE
from modeling.evaluation.fitting import checked_coverage, fit_predictors, with_calibration
from modeling.evaluation.protocol import (
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    data_fingerprint,
    evaluate,
    summarise,
)
from modeling.evaluation.splits import SPLIT_KINDS
from modeling.evaluation.steps import StepsChoice, choose_steps, describe_steps
from modeling.features import measured_frame
from modeling.stored.evidence import FitEvidence
from presentation import report


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
        f"{', '.join(spec_names(catalogue()))}",
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
    runs, groups = _runs_and_groups(args, db_path)
    frame = measured_frame(runs)
    steps_of = runs.set_index("run_id")["steps"]
    evaluated = unchanged = 0
    for workload, machine in groups:
        name = f"{workload} on {machine.label} (profile {machine.key})"
        if not machine.determined:
            # Never fitted together with anything: the runs did not say which CPU they had.
            _progress(f"skipped {name}: its runs did not record their machine")
            continue
        key = profiles.KEY_COLUMN
        chosen = runs[(runs["workload"] == workload) & (runs[key] == machine.key)]
        group = frame.loc[frame.index.intersection(chosen["run_id"])]
        try:
            fitted = _latest_fit(db_path, workload, machine.key) if args.only_changed else None
            requested = args.steps if args.steps or fitted is None else fitted.steps
            choice = choose_steps(group, steps_of, requested)
            if fitted is not None and _same_runs(fitted, group, choice):
                _progress(f"unchanged {name}: {_unchanged_reason(fitted, choice)}")
                unchanged += 1
                continue
            _evaluate_group(
                args, db_path, (workload, machine), specs, group.loc[list(choice.run_ids)], choice
            )
        except ModelingError as error:
            # Evaluating every group: one with too few runs must not stop the others.
            if len(groups) == 1 and not args.only_changed:
                raise ModelingError(f"{name}: {error}") from error
            _progress(f"skipped {name}: {error}")
        else:
            evaluated += 1
    if args.only_changed and not evaluated:
        # The refit after a sweep whose runs join no fit (a smoke test at other steps).
        _progress(
            f"re-evaluated nothing: {unchanged} workload and profile pair(s) unchanged since "
            "their latest evaluation"
        )
        return 0
    if not evaluated:
        raise ModelingError(
            "no workload and machine profile has enough runs to evaluate; measure more "
            "(memplan sweep, or memplan calibrate for this machine)"
        )
    return 0


def _runs_and_groups(
    args: argparse.Namespace, db_path: Path
) -> tuple[pd.DataFrame, list[tuple[str, profiles.MachineProfile]]]:
    """The ok runs of ``args.workload`` (keyed by profile) and the (workload, profile) pairs
    to evaluate; says which profiles of another framework are left out, and refuses a
    database without runs of ``args.framework``."""
    runs = profiles.with_keys(store.load_runs(db_path, status="ok", workload=args.workload))
    groups = _evaluation_groups(runs, args.machine, args.framework)
    left_out = other_frameworks_note(profiles.profiles_in(runs), args.framework)
    if left_out and args.machine is None:
        _progress(f"left out:{left_out}")
    if not groups:
        flag = " ".join(["", *frameworks.flag(args.framework)])
        raise ModelingError(
            f"{db_path} has no ok {frameworks.TITLES[args.framework]} runs to evaluate; "
            f"measure some with `memplan sweep{flag}`"
        )
    return runs, groups


def _evaluation_groups(
    runs: pd.DataFrame, requested: str | None, framework: str
) -> list[tuple[str, profiles.MachineProfile]]:
    """(workload, profile) pairs to evaluate, each on its own runs (keyed: `with_keys`), of
    the profiles of ``framework`` (one of another framework asked by name is refused)."""
    every = profiles.profiles_in(runs)
    known = of_framework(every, framework)
    if requested is not None:
        wanted = profiles.resolve(requested, every)
        check_framework(wanted, framework)
        known = {wanted.key: wanted}
    pairs = runs[["workload", profiles.KEY_COLUMN]].drop_duplicates()
    chosen = [(str(w), known[key]) for w, key in pairs.itertuples(index=False) if key in known]
    return sorted(chosen, key=lambda pair: (pair[0], pair[1].label, pair[1].key))


def _latest_fit(db_path: Path, workload: str, machine: str) -> FitEvidence | None:
    """The evaluation ``workload`` on ``machine`` answers from now; None when there is none."""
    try:
        return stored.load_evidence(db_path, workload, machine)
    except NoModelsError:
        return None


def _same_runs(fitted: FitEvidence, group: pd.DataFrame, choice: StepsChoice) -> bool:
    """Whether ``choice``'s runs are exactly the ones ``fitted`` fit (same ids and peaks)."""
    kept = group.loc[list(choice.run_ids)]
    return fitted.steps in (None, choice.steps) and (
        data_fingerprint(kept) == fitted.data_fingerprint
    )


def _unchanged_reason(fitted: FitEvidence, choice: StepsChoice) -> str:
    which = "bundled evaluation" if fitted.bundled else "evaluation"
    reason = (
        f"no new usable runs at {choice.steps} steps since its {which} "
        f"{fitted.evaluation_id[:12]} of {fitted.fitted_at}"
    )
    if choice.left_out:
        reason += f"; not fitted with them: {describe_steps(choice.left_out)}"
    return reason


# The command's flags, then the group (its workload and profile, models, runs, steps).
def _evaluate_group(
    args: argparse.Namespace,
    db_path: Path,
    pair: tuple[str, profiles.MachineProfile],
    specs: list,
    frame: pd.DataFrame,
    choice: StepsChoice,
) -> None:
    """Score, fit and store one workload's models on one machine profile's runs of one
    step count only."""
    workload, machine = pair
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
    left_out = (
        f"; left out, at other step counts: {describe_steps(choice.left_out)}"
        if choice.left_out
        else ""
    )
    print(
        f"{workload} on {machine.label} (profile {machine.key}): {evaluation.n_runs} ok run(s), "
        f"{evaluation.n_points} configuration(s) at {choice.steps} steps from {db_path}"
        f"{left_out}; {seeds}\n"
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
    # A --models subset adds to the latest evaluation's models, never drops the others.
    subset = args.models is not None
    facts = EvaluationFacts(
        command, workload, machine.key, choice.steps, choice.left_out, subset=subset
    )
    evaluation_id = store_results(target, evaluation, predictors, facts)
    kept = " (and kept the latest evaluation's other models)" if subset else ""
    print(
        f"\nstored {workload} evaluation {evaluation_id[:12]} and {len(predictors)} "
        f"model(s) in {target}{kept}\n"
    )
