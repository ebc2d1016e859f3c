"""Evaluating the models as a use case: an `EvaluateRequest` in, the scored, fitted and
stored models out, for `memplan evaluate` and for the refit a launched job runs
(`application.refit`).

Each workload and machine profile is evaluated on its own, on the usable runs of
one step count (`modeling.evaluation.steps`: ``steps``, else the count with the
most configurations); runs at other step counts are left out and the stored
evaluation says how many. ``only_changed`` (the dashboard's refit after a sweep)
re-evaluates only the pairs whose runs at the step count their latest evaluation
fit differ from the runs it fit. ``models`` scores some models and adds them to
the latest evaluation: its other models are kept in the new one
(`application.carry`), so answers and pages never lose them. The catalogue and
the protocol's defaults are named here too, for the command's flags.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from application import stored
from application.results_store import EvaluationFacts, store_results
from core import database, frameworks, profiles, store, workloads
from core.errors import ModelingError, NoModelsError
from core.profile_frameworks import check_framework, of_framework, other_frameworks_note
from modeling.estimators.catalogue import catalogue, pick, spec_names
from modeling.evaluation import report_text as report
from modeling.evaluation.bounds import DEFAULT_COVERAGE
from modeling.evaluation.fitting import checked_coverage, fit_predictors, with_calibration
from modeling.evaluation.protocol import (
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    Evaluation,
    data_fingerprint,
    evaluate,
    summarise,
)
from modeling.evaluation.splits import SPLIT_KINDS
from modeling.evaluation.steps import StepsChoice, choose_steps, describe_steps
from modeling.features import measured_frame
from modeling.stored.evidence import FitEvidence

__all__ = [
    "DEFAULT_COVERAGE",
    "DEFAULT_EXTRAPOLATION_SEEDS",
    "DEFAULT_SEEDS",
    "SPLIT_KINDS",
    "EvaluateRequest",
    "Outcome",
    "catalogue",
    "evaluate_pairs",
    "run",
    "spec_names",
]


@dataclass(frozen=True)
class EvaluateRequest:
    """One evaluation: which runs (database, workload, profile, framework, steps), how they
    are scored (seeds, models, splits, coverage) and where the fitted models go."""

    db_path: Path  # read, ready (made and migrated by the caller)
    workload: str | None = None  # None: every workload with ok runs, each on its own
    machine: str | None = None  # a profile key or unique prefix; None: every profile
    framework: str = frameworks.DEFAULT_FRAMEWORK
    seeds: int = DEFAULT_SEEDS
    extrapolation_seeds: int = DEFAULT_EXTRAPOLATION_SEEDS
    models: Sequence[str] | None = None  # None: the whole catalogue
    splits: Sequence[str] = SPLIT_KINDS
    coverage: float = DEFAULT_COVERAGE
    steps: int | None = None  # None: the step count with the most configurations
    only_changed: bool = False
    quick: bool = False  # tiny symbolic-regression settings: a smoke test
    store: bool = True
    store_db: Path | None = None  # None: store in db_path
    command: str = ""  # what the stored evaluation records as the command that ran it


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Outcome:
    """What an evaluation did with each (workload, profile) pair it looked at, in words:
    ``"unet3d on <machine> (profile <key>)"``, then for the pairs not evaluated, why."""

    evaluated: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()  # "<pair>: no new usable runs at 6 steps since ..."
    skipped: tuple[str, ...] = ()  # "<pair>: only 1 distinct measured configuration ..."


def run(request: EvaluateRequest) -> int:
    """Evaluate every (workload, profile) pair ``request`` names; 0, or `ModelingError`
    when none has enough runs (one pair asked alone: its own reason)."""
    outcome = evaluate_pairs(request)
    if request.only_changed and not outcome.evaluated:
        # The refit after a sweep whose runs join no fit (a smoke test at other steps).
        _progress(
            f"re-evaluated nothing: {len(outcome.unchanged)} workload and profile pair(s) "
            "unchanged since their latest evaluation"
        )
        return 0
    if not outcome.evaluated:
        raise ModelingError(
            "no workload and machine profile has enough runs to evaluate; measure more "
            "(memplan sweep, or memplan calibrate for this machine)"
        )
    return 0


def evaluate_pairs(request: EvaluateRequest) -> Outcome:
    """Evaluate, fit and store each (workload, profile) pair ``request`` names; what was
    done with each. One pair asked alone (not ``only_changed``) that cannot be evaluated
    raises its `ModelingError`; among several, it is skipped and said."""
    models = None if request.models is None else list(request.models)
    specs = pick(catalogue(quick=request.quick), models)
    runs, groups = _runs_and_groups(request)
    frame = measured_frame(runs)
    steps_of = runs.set_index("run_id")["steps"]
    done: dict[str, list[str]] = {"evaluated": [], "unchanged": [], "skipped": []}
    for workload, machine in groups:
        name = f"{workload} on {machine.label} (profile {machine.key})"
        if not machine.determined:
            # Never fitted together with anything: the runs did not say which CPU they had.
            _progress(f"skipped {name}: its runs did not record their machine")
            done["skipped"].append(f"{name}: its runs did not record their machine")
            continue
        key = profiles.KEY_COLUMN
        chosen = runs[(runs["workload"] == workload) & (runs[key] == machine.key)]
        group = frame.loc[frame.index.intersection(chosen["run_id"])]
        try:
            fitted = (
                _latest_fit(request.db_path, workload, machine.key)
                if request.only_changed
                else None
            )
            requested = request.steps if request.steps or fitted is None else fitted.steps
            choice = choose_steps(group, steps_of, requested)
            if fitted is not None and _same_runs(fitted, group, choice):
                _progress(f"unchanged {name}: {_unchanged_reason(fitted, choice)}")
                done["unchanged"].append(f"{name}: {_unchanged_reason(fitted, choice)}")
                continue
            _evaluate_group(request, (workload, machine), specs, group, choice)
        except ModelingError as error:
            # Evaluating every group: one with too few runs must not stop the others.
            if len(groups) == 1 and not request.only_changed:
                raise ModelingError(f"{name}: {error}") from error
            _progress(f"skipped {name}: {error}")
            done["skipped"].append(f"{name}: {error}")
        else:
            done["evaluated"].append(name)
    return Outcome(**{what: tuple(names) for what, names in done.items()})


def _runs_and_groups(
    request: EvaluateRequest,
) -> tuple[pd.DataFrame, list[tuple[str, profiles.MachineProfile]]]:
    """The ok runs of ``request.workload`` (keyed by profile) and the (workload, profile)
    pairs to evaluate; says which profiles of another framework are left out, and refuses
    a database without runs of ``request.framework``."""
    db_path, framework = request.db_path, request.framework
    runs = profiles.with_keys(
        store.load_runs(db_path, store.RunFilter(status="ok", workload=request.workload))
    )
    groups = _evaluation_groups(runs, request.machine, framework)
    left_out = other_frameworks_note(profiles.profiles_in(runs), framework)
    if left_out and request.machine is None:
        _progress(f"left out:{left_out}")
    if not groups:
        flag = " ".join(["", *frameworks.flag(framework)])
        raise ModelingError(
            f"{db_path} has no ok {frameworks.TITLES[framework]} runs to evaluate; "
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


def _evaluate_group(
    request: EvaluateRequest,
    pair: tuple[str, profiles.MachineProfile],
    specs: list,
    group: pd.DataFrame,
    choice: StepsChoice,
) -> None:
    """Score, fit and store one workload's models on one machine profile's runs of one
    step count only."""
    workload, machine = pair
    frame = group.loc[list(choice.run_ids)]
    _progress(f"evaluating {workloads.get(workload).TITLE} on {machine.label}")
    evaluation = evaluate(
        frame,
        specs,
        seeds=range(request.seeds),
        kinds=list(request.splits),
        progress=_progress,
        extrapolation_seeds=range(request.extrapolation_seeds),
    )
    seeds = f"seeds: {request.seeds} random split(s), {request.extrapolation_seeds} extrapolation"
    left_out = (
        f"; left out, at other step counts: {describe_steps(choice.left_out)}"
        if choice.left_out
        else ""
    )
    print(
        f"{workload} on {machine.label} (profile {machine.key}): {evaluation.n_runs} ok run(s), "
        f"{evaluation.n_points} configuration(s) at {choice.steps} steps from {request.db_path}"
        f"{left_out}; {seeds}\n"
    )
    print(report.markdown_table(summarise(evaluation, specs)))
    if request.store:
        _fit_and_store(request, pair, specs, (frame, evaluation), choice)


def _fit_and_store(
    request: EvaluateRequest,
    pair: tuple[str, profiles.MachineProfile],
    specs: list,
    scored: tuple[pd.DataFrame, Evaluation],
    choice: StepsChoice,
) -> None:
    """Fit the final models on all of the group's runs (``scored``: its frame and
    evaluation), with their bounds' evidence, and store them."""
    workload, machine = pair
    frame, evaluation = scored
    coverage = request.coverage
    # The bounds' evidence: held-out predictions counted by configuration, stored with the rest.
    evaluation = with_calibration(evaluation, frame, specs, progress=_progress)
    _progress(f"fitting the final {workload} models on all its runs")
    predictors = fit_predictors(specs, frame, evaluation, coverage)
    print("\n" + report.formulas_table(predictors))
    checked = {p.name: checked_coverage(evaluation, frame, p.name, coverage) for p in predictors}
    print("\n" + report.bounds_table(predictors, checked))
    target = database.ensure_database(request.store_db) if request.store_db else request.db_path
    # A models subset adds to the latest evaluation's models, never drops the others.
    subset = request.models is not None
    facts = EvaluationFacts(
        request.command, workload, machine.key, choice.steps, choice.left_out, subset=subset
    )
    evaluation_id = store_results(target, evaluation, predictors, facts)
    kept = " (and kept the latest evaluation's other models)" if subset else ""
    print(
        f"\nstored {workload} evaluation {evaluation_id[:12]} and {len(predictors)} "
        f"model(s) in {target}{kept}\n"
    )
