"""The stored knob-split evidence of a workload, every fitted profile's, read without fitting.

`load_knob_evidence` reads each fitted profile's latest held-out predictions (its
stored evaluation, else its bundle: `modeling.stored.bundle`) and the runs they
name, and keeps each knob split's result (`modeling.unmeasured.held_out_results`),
all from one snapshot of the database (`core.snapshot`).
"""

from __future__ import annotations

from core.snapshot import Snapshot
from modeling import machines
from modeling.errors import NoModelsError
from modeling.features import KNOB_COLUMNS
from modeling.stored import bundle
from modeling.unmeasured import HeldOut, KnobEvidence, held_out_results


def load_knob_evidence(snapshot: Snapshot) -> KnobEvidence:
    """Every fitted profile's knob split results for the snapshot's workload."""
    found: list[HeldOut] = []
    for profile in machines.fitted_machines(snapshot):
        if profile is None:  # an evaluation of several profiles' runs: no one profile measured
            continue
        try:
            predictions = bundle.load_predictions(snapshot, profile)
        except NoModelsError:
            continue
        found += held_out_results(profile, predictions, snapshot.runs, KNOB_COLUMNS)
    return KnobEvidence(tuple(found))
