"""How well every model predicts peak memory: the evaluation table, as Markdown.

    python -m benchmarks.accuracy [--db FILE] [--seeds 10] > docs/accuracy.md

Runs the same evaluation as ``python -m modeling evaluate`` (random 70/30
splits and the extrapolation split, settings chosen on validation data only)
on the stored ``ok`` runs — by default the bundled reference data — then fits
each model on all runs for its formula and bounds. Prints the machine and the
command that produced the figures; stores nothing unless ``--store-db`` is
given. Progress goes to stderr.
Takes minutes: symbolic regression is fit hundreds of times.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from importlib import metadata
from pathlib import Path

import pandas as pd

from core import database, profiles, store, workloads
from core.machine import machine_info
from modeling.estimators.catalogue import ModelSpec, catalogue, pick
from modeling.evaluation.fitting import cross_seed_coverage, fit_predictors
from modeling.evaluation.protocol import (
    DEFAULT_EXTRAPOLATION_SEEDS,
    DEFAULT_SEEDS,
    Evaluation,
    evaluate,
    summarise,
)
from modeling.evaluation.splits import EXTRAPOLATION, RANDOM, make_split
from modeling.features import measured_frame
from modeling.stored import bundle
from modeling.stored.tables import store_results
from presentation.report import PAPER_SR_MAPE_PCT, bounds_table, formulas_table, markdown_table

# The aim for symbolic regression: the order of the measurement noise.
AIM_MAPE_PCT = 2.0
LIBRARIES = ("scikit-learn", "gplearn", "xgboost", "sympy", "numpy")


def _mean_mape(evaluation: Evaluation, model: str, split: str) -> float | None:
    scores = evaluation.scores_frame()
    mine = scores[(scores["model"] == model) & (scores["split"] == split)]
    return None if mine.empty else float(mine["mape_pct"].mean())


def data_section(runs: pd.DataFrame, frame: pd.DataFrame, db_path: Path) -> str:
    ok = runs[runs["run_id"].isin(frame.index)]
    sides = sorted(frame["depth"].unique().tolist())
    batches = sorted(frame["batch_size"].unique().tolist())
    hosts = "; ".join(
        f"{profile.label} (profile {key})" for key, profile in profiles.profiles_in(ok).items()
    )
    extrapolation = make_split(frame, EXTRAPOLATION, 0)
    test_sides = sorted(frame.loc[list(extrapolation.test), "depth"].unique().tolist())
    return "\n".join(
        [
            "## Data",
            "",
            f"{len(frame)} `ok` runs of {db_path.name}, measured on "
            f"{hosts}. Image sides {', '.join(map(str, sides))}; batch sizes "
            f"{', '.join(map(str, batches))}. "
            "Target: the kernel's high-water mark (`peak_hwm_bytes`).",
            "",
            f"Extrapolation split: fit on sides below {test_sides[0]}, test on "
            f"{', '.join(map(str, test_sides))}.",
        ]
    )


def targets_section(evaluation: Evaluation) -> str:
    lines = ["## Against the targets", ""]
    symbolic = _mean_mape(evaluation, "symbolic", RANDOM)
    if symbolic is not None:
        verdict = "meets" if symbolic <= PAPER_SR_MAPE_PCT else "misses"
        aim = "meets" if symbolic <= AIM_MAPE_PCT else "misses"
        lines.append(
            f"- Symbolic regression, random split: {symbolic:.2f}% MAPE — {verdict} the paper's "
            f"{PAPER_SR_MAPE_PCT}% and {aim} the {AIM_MAPE_PCT:g}% aim."
        )
    for name in ("hybrid_ratio", "hybrid_terms"):
        hybrid = _mean_mape(evaluation, name, RANDOM)
        if hybrid is not None:
            lines.append(f"- {name}, random split: {hybrid:.2f}% MAPE.")
    refined, paper = (_mean_mape(evaluation, name, RANDOM) for name in ("refined", "paper"))
    if refined is not None and paper is not None:
        lines.append(
            f"- Refined analytical model (nothing fitted but the measured framework baseline): "
            f"{refined:.2f}% MAPE, against {paper:.2f}% for the paper's Eq. 1 + Eq. 2."
        )
    return "\n".join(lines)


def _default_machine(workload: str, known: dict[str, profiles.MachineProfile]) -> str:
    """The workload's bundled reference profile when its runs are here, else the most runs."""
    bundled = [b.machine for b in bundle.bundled_evaluations(workload) if b.machine in known]
    return bundled[0] if bundled else next(iter(known))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--workload", default=workloads.DEFAULT_WORKLOAD)
    parser.add_argument(
        "--machine",
        default=None,
        help="the machine profile whose runs to use (key or prefix; default: the bundled "
        "reference's, else the one with the most runs): a model never fits two machines' runs",
    )
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS)
    parser.add_argument("--extrapolation-seeds", type=int, default=DEFAULT_EXTRAPOLATION_SEEDS)
    parser.add_argument("--models", nargs="+", default=None)
    parser.add_argument("--quick", action="store_true", help="tiny symbolic regression")
    parser.add_argument(
        "--store-db", type=Path, default=None, help="also store the results in this database"
    )
    args = parser.parse_args()
    db_path = database.ensure_database(args.db or database.default_db_path())
    runs = profiles.with_keys(store.load_runs(db_path, status="ok", workload=args.workload))
    known = profiles.profiles_in(runs)
    if not known:
        raise SystemExit(f"{db_path} has no ok {args.workload} runs")
    machine_key = (
        profiles.resolve(args.machine, known).key
        if args.machine
        else _default_machine(args.workload, known)
    )
    runs = profiles.runs_of(runs, machine_key)
    frame = measured_frame(runs)
    specs: tuple[ModelSpec, ...] = pick(catalogue(quick=args.quick), args.models)

    started = time.perf_counter()
    evaluation = evaluate(
        frame,
        specs,
        seeds=range(args.seeds),
        extrapolation_seeds=range(args.extrapolation_seeds),
        progress=lambda message: print(message, file=sys.stderr, flush=True),
    )
    predictors = fit_predictors(specs, frame, evaluation)
    elapsed_s = time.perf_counter() - started

    machine = machine_info()
    versions = ", ".join(f"{name} {metadata.version(name)}" for name in LIBRARIES)
    command = shlex.join(["python", "-m", "benchmarks.accuracy", *sys.argv[1:]])
    print("# Accuracy of the peak-memory models\n")
    ram_gib = machine["total_ram_bytes"] / 2**30
    print(
        f"Produced by `{command}` on {machine['cpu_model']}, {machine['cpu_cores']} cores, "
        f"{ram_gib:.1f} GiB RAM ({versions}) in {elapsed_s / 60:.1f} min. "
        "Regenerate it with the same command; do not edit by hand.\n"
    )
    print(data_section(runs, frame, db_path), end="\n\n")
    print("## Protocol\n")
    print(
        f"Random split: {args.seeds} seeds, 70% of the configurations to fit and 30% to test "
        "(repeats of a configuration stay together). Extrapolation split: "
        f"{args.extrapolation_seeds} seed(s) of the models' own randomness. Every model's "
        "settings are chosen on a validation split carved from the training rows only "
        "(random quarter, or the largest training size for extrapolation). MAPE: mean over "
        "seeds, with its standard deviation (sd); R²: mean over seeds; worst: the largest "
        "single-point error over all seeds.\n"
    )
    print("## Results\n")
    print(markdown_table(summarise(evaluation, specs)), end="\n\n")
    print(targets_section(evaluation), end="\n\n")
    print("## Formulas (fit on all runs, target in GiB)\n")
    print(formulas_table(predictors), end="\n\n")
    print("## Upper bounds\n")
    print(
        "Split-conformal multipliers from held-out residuals; sizing answers use the "
        "extrapolation one, when larger, beyond the measured range. 'Coverage on unseen "
        "seeds': each seed's test points checked against a bound calibrated on the other "
        "seeds' residuals, leaving those points out.\n"
    )
    checked = {p.name: cross_seed_coverage(evaluation, p.name) for p in predictors}
    print(bounds_table(predictors, checked))
    if args.store_db:
        target = database.ensure_database(args.store_db)
        store_results(
            target, evaluation, predictors, command, workload=args.workload, machine=machine_key
        )


if __name__ == "__main__":
    main()
