"""Answers for a machine from another profile's models, checked leave-one-profile-out.

    python -m benchmarks.transfer [--db FILE] > table.md

For each bundled U-Net profile in turn, held out: a machine of that profile without
models of its own asks `memplan size`, and gets the answer production gives it. The
same functions answer: `modeling.machines.default_for` chooses the answering profile
(the bundled reference, or the next bundled profile where the reference is the one held
out) with its `modeling.transfer.Transfer`, the held-out profile's models left out of the
fitted ones; `application.sizing.models_of` builds the models, widened for another
machine, for the answering profile's other hosts (`modeling.host_spread`) and, through
the stored knob splits (`modeling.unmeasured`), for knob values the answering profile
never measured; the bound of a configuration is the one every answer uses
(`modeling.closed_form_floor.replace_below_floor`). A transfer without a bound is
refused, as `memplan size` refuses it (`Transfer.bounded`).

No figure of the held-out profile chooses the answer or a widening: its models are not
fitted ones, its runs are left out of the pairs the widening is measured on (`transfer_for`),
and its own knob splits are left out of the knob-split evidence (the AVX2 EPYC with oneDNN
on would otherwise widen its own 32-base-filter configurations by its own ratio). The kept
runs of other hosts (data/hosts) widen only the answering profile's bounds, by runs of a
host of that profile.

Prints, per held-out profile, the answering profile, the configurations answered, the MAPE
of the answering model's point predictions, the coverage of its own bound and of the
answer's, the widenings, and the transfer in words. Stores nothing. Seconds: it fits nothing.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from application import sizing, widening
from core import database, frameworks, profiles, snapshot, workloads
from core.machine import machine_info
from core.profile_frameworks import keys_of_framework, of_framework
from core.profiles import MachineProfile
from core.snapshot import Snapshot
from core.workloads.base import WorkloadConfig
from modeling import machines, trainable, transfer
from modeling.closed_form_floor import replace_below_floor
from modeling.stored import bundle, evidence, knob_splits, tables
from modeling.stored.predictor import Predictor
from modeling.unmeasured import KnobEvidence
from presentation.report import markdown_table

WORKLOAD = "unet3d"
FRAMEWORK = frameworks.TENSORFLOW


@dataclass(frozen=True)
class Bundled:
    """What every held-out profile's answer is read from: one database of the bundled runs."""

    db: Path
    snap: Snapshot  # the database's one read (`core.snapshot`)
    runs: pd.DataFrame  # every run of WORKLOAD, keyed by profile (`core.profiles.with_keys`)
    known: dict[str, MachineProfile]  # the profiles of FRAMEWORK with runs, most runs first
    fitted: list[str | None]  # those with models, as `choose_machine` lists them
    knob_evidence: KnobEvidence  # every fitted profile's stored knob splits

    @classmethod
    def read(cls, db: Path) -> Bundled:
        read = snapshot.read(db, WORKLOAD)
        runs = profiles.with_keys(read.runs)
        every = profiles.profiles_in(runs[runs["status"] == "ok"])
        fitted = keys_of_framework(machines.fitted_machines(read), every, FRAMEWORK)
        evidence_ = knob_splits.load_knob_evidence(read)
        return cls(db, read, runs, of_framework(every, FRAMEWORK), fitted, evidence_)


@dataclass(frozen=True)
class Answer:
    """What `memplan size` answers a machine of a held-out profile with."""

    choice: machines.MachineChoice
    own: Predictor  # the answering profile's default model, as stored
    answering: Predictor | None  # that model as the answer widens it; None: refused
    refusal: str  # why refused ("" when answered)


def answer_for(bundled: Bundled, key: str) -> Answer:
    """The answer for a machine of profile ``key``, its models left out (module docstring)."""
    fitted = [found for found in bundled.fitted if found != key]
    here = bundled.known[key]
    choice = machines.default_for(bundled.snap, here, bundled.known, fitted, FRAMEWORK)
    assert choice.key is not None and choice.key != key
    own = bundle.load_predictor(bundled.snap, tables.BEST, choice.key)
    others = KnobEvidence(tuple(h for h in bundled.knob_evidence.held_out if h.profile != key))
    ok = bundled.runs[bundled.runs["status"] == "ok"]
    try:
        loaded = sizing.Loaded(
            widening.with_knob_evidence([own], others),
            bundle.load_scores(bundled.snap, choice.key),
            bundled.db,
            evidence.load_evidence(bundled.snap, choice.key).steps,
            ok.drop(columns=[profiles.KEY_COLUMN]),
        )
        models = sizing.models_of(WORKLOAD, choice, loaded)
    except sizing.SizingError as error:
        return Answer(choice, own, None, str(error))
    return Answer(choice, own, models.pick(None), "")


def _knobs(config: WorkloadConfig) -> dict[str, object]:
    return {knob: getattr(config, knob) for knob in workloads.of(config).NETWORK_KNOBS}


def _bounds(model: Predictor, configs: list[WorkloadConfig]) -> np.ndarray:
    """The bound every answer gives each of ``configs`` (`modeling.sizing`'s)."""
    bounds, _raised = replace_below_floor(model, configs, model.upper_bytes(configs))
    return bounds


def _knob_widening(model: Predictor, configs: list[WorkloadConfig]) -> str:
    """How the stored knob splits widened ``configs`` whose knob values ``model``'s profile
    never measured: "x1.06 on 6" (factors, how many configurations); "-" where none."""
    found = [
        float(np.prod([w.factor for w in model.training_range.widenings(config)]))
        for config in configs
        if model.training_range.unmeasured(config)
    ]
    if not found:
        return "-"
    low, high = min(found), max(found)
    factors = f"x{low:.3f}" if high - low < 5e-4 else f"x{low:.3f}-{high:.3f}"
    return f"{factors} on {len(found)}"


def held_out_row(bundled: Bundled, key: str) -> dict[str, object]:
    """One held-out profile answered as production answers a machine of it, as a table row."""
    found = answer_for(bundled, key)
    ok = transfer.measured_runs(profiles.runs_of(bundled.runs, key))
    peaks = ok.groupby("point")["peak_hwm_bytes"].median().astype(float)
    firsts = ok.drop_duplicates("point").set_index("point").loc[peaks.index]
    configs = [workloads.config_from_row(row) for row in firsts.to_dict("records")]
    answering_runs = profiles.runs_of(bundled.runs, found.choice.key)
    trains = np.array(
        [trainable.untrainable(answering_runs, WORKLOAD, _knobs(c)) is None for c in configs]
    )
    measured, own = peaks.to_numpy(), _bounds(found.own, configs)
    moved = found.choice.transfer
    assert moved is not None
    row: dict[str, object] = {
        "held out": f"{key} ({bundled.known[key].label})",
        "answered by": f"{found.choice.key} ({found.choice.label})",
        "model": found.own.name,
        "configurations": len(configs),
        "MAPE %": float(np.mean(np.abs(found.own.point_bytes(configs) - measured) / measured))
        * 100,
        "own bound covers %": float(np.mean(measured <= own) * 100),
        "machine widening": f"x{moved.factor:.3f}" if moved.bounded else "none: no bound",
        "knob widening": "-",
        "host widening": "-",
        "answer covers %": "refused: no bound",
        "needed for 90%": float(np.quantile(measured / own, transfer.TRANSFER_COVERAGE)),
        "words": moved.sentence(),
        "refusal": found.refusal,
    }
    if found.answering is not None:
        bounds = np.where(trains, _bounds(found.answering, configs), 0.0)
        row["knob widening"] = _knob_widening(found.answering, configs)
        row["host widening"] = f"x{found.answering.training_range.host_widening:.3f}"
        row["answer covers %"] = f"{np.mean(measured <= bounds) * 100:.3f}"
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.transfer", description=__doc__)
    parser.add_argument(
        "--db", type=Path, help="a database (default: a fresh one of the bundled runs)"
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as scratch:
        db = args.db or database.ensure_database(Path(scratch) / "bundled.duckdb", seed_new=True)
        bundled = Bundled.read(db)
        held_out = [b.machine for b in bundle.bundled_evaluations(WORKLOAD)]
        rows = [held_out_row(bundled, key) for key in held_out if key in bundled.known]
    facts = machine_info()
    print("# Leave-one-profile-out: the answer `memplan size` gives a machine without models\n")
    command = shlex.join(["python", "-m", "benchmarks.transfer", *(argv or sys.argv[1:])])
    print(
        f"Command: `{command}`; computed on {facts['cpu_model']} ({facts['cpu_cores']} CPUs); "
        "the runs and models are the bundled ones (data/REFERENCE.md).\n"
    )
    shown = pd.DataFrame(rows).drop(columns=["words", "refusal"])
    print(markdown_table(shown, decimals=3))
    print()
    for row in rows:
        print(f"- **{row['held out']}**: {row['words']}.")
        if row["refusal"]:
            print(f"  Refused: {row['refusal']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
