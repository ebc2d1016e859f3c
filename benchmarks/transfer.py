"""Answers for a machine from another profile's models, checked leave-one-profile-out.

    python -m benchmarks.transfer [--db FILE] > table.md

For each bundled U-Net profile in turn, held out: the nearest *other* bundled
profile answers its configurations (`modeling.transfer.nearest_profile`) with its
stored best model and bound, and the bound is widened by the spread measured
between the *remaining* profiles (`modeling.transfer.widening_for`, the held-out
profile excluded): no figure of the held-out profile chooses the answer or its
widening. Prints, per held-out profile, the answering profile, the configurations
answered, the MAPE of the answering model's point predictions, the coverage of its
bound as it is and widened, and the widening with its evidence. Stores nothing.
Seconds: it fits nothing (the bundled models answer).
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from core import database, profiles, store, workloads
from core.machine import machine_info
from modeling import transfer
from modeling.stored import bundle
from modeling.stored.tables import best_model_name
from presentation.report import markdown_table

WORKLOAD = "unet3d"


def _answering_model(db: Path, key: str):
    """The model `memplan size` answers with for profile ``key``: its best, bundled or stored."""
    name = best_model_name(bundle.load_scores(db, WORKLOAD, key))
    [predictor] = bundle.load_predictors(db, WORKLOAD, key, names=[name])
    return predictor


def held_out_row(db: Path, runs: pd.DataFrame, known: dict, key: str) -> dict[str, object]:
    """One held-out profile answered by its nearest other profile, as a table row."""
    nearest = transfer.nearest_profile(known[key], {k: p for k, p in known.items() if k != key})
    widening = transfer.widening_for(runs, known, nearest, excluded={key})
    ok = transfer.measured_runs(profiles.runs_of(runs, key))
    peaks = ok.groupby("point")["peak_hwm_bytes"].median().astype(float)
    firsts = ok.drop_duplicates("point").set_index("point").loc[peaks.index]
    configs = [workloads.config_from_row(row) for row in firsts.to_dict("records")]
    model = _answering_model(db, nearest.key)
    predicted, upper = model.point_bytes(configs), model.upper_bytes(configs)
    measured = peaks.to_numpy()
    factor = widening.factor if widening is not None else float("nan")
    return {
        "held out": f"{key} ({known[key].label})",
        "answered by": f"{nearest.key} ({nearest.profile.label})",
        "model": model.name,
        "configurations": len(configs),
        "MAPE %": float(np.mean(np.abs(predicted - measured) / measured) * 100),
        "bound covers %": float(np.mean(measured <= upper) * 100),
        "widening": factor,
        "widened covers %": float(np.mean(measured <= upper * factor) * 100),
        "needed for 90%": float(np.quantile(measured / upper, transfer.TRANSFER_COVERAGE)),
        "why": "; ".join(nearest.reasons),
        "evidence": widening.sentence()
        if widening is not None
        else "no pair shares a configuration",
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.transfer", description=__doc__)
    parser.add_argument(
        "--db", type=Path, help="a database (default: a fresh one of the bundled runs)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or database.ensure_database(Path(scratch) / "bundled.duckdb", seed_new=True)
        runs = profiles.with_keys(store.load_runs(db, workload=WORKLOAD))
        bundled = [b.machine for b in bundle.bundled_evaluations(WORKLOAD)]
        known = {k: p for k, p in profiles.profiles_in(runs).items() if k in bundled}
        rows = [held_out_row(db, runs, known, key) for key in known]
    table = pd.DataFrame(rows)
    facts = machine_info()
    print("# Leave-one-profile-out: answers from the nearest other profile, widened\n")
    command = shlex.join(["python", "-m", "benchmarks.transfer", *(argv or sys.argv[1:])])
    print(
        f"Command: `{command}`; computed on {facts['cpu_model']} ({facts['cpu_cores']} CPUs); "
        "the runs and models are the bundled ones (data/REFERENCE.md).\n"
    )
    shown = table.drop(columns=["why", "evidence"])
    print(markdown_table(shown, decimals=3))
    print()
    for row in rows:
        answer = f"answered by {row['answered by']} ({row['why']})"
        print(f"- **{row['held out']}**: {answer}; {row['evidence']}.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
