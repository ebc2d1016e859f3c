"""The stored knob-split evidence of a workload, every fitted profile's, read without fitting.

`load_knob_evidence` reads each fitted profile's latest held-out predictions (its
database evaluation, else its bundle: `modeling.stored.bundle`) and the runs they
name, and keeps each knob split's result (`modeling.unmeasured.held_out_results`).
Cached per database file state: the Sizing page asks on every rerun.
"""

from __future__ import annotations

import functools
from pathlib import Path

from core import store
from modeling import machines
from modeling.errors import NoModelsError
from modeling.features import KNOB_COLUMNS
from modeling.stored import bundle
from modeling.unmeasured import HeldOut, KnobEvidence, held_out_results


def load_knob_evidence(db_path: Path, workload: str) -> KnobEvidence:
    """Every fitted profile's knob split results for ``workload`` in ``db_path``."""
    stat = db_path.stat() if db_path.exists() else None
    stamp = (stat.st_size, stat.st_mtime_ns) if stat else (0, 0)
    return _load(db_path, workload, stamp)


@functools.lru_cache(maxsize=8)
def _load(db_path: Path, workload: str, stamp: tuple[int, int]) -> KnobEvidence:
    runs = store.load_runs(db_path, workload=workload)
    found: list[HeldOut] = []
    for profile in machines.fitted_machines(db_path, workload):
        if profile is None:  # an evaluation of several profiles' runs: no one profile measured
            continue
        try:
            predictions = bundle.load_predictions(db_path, workload, profile)
        except NoModelsError:
            continue
        found += held_out_results(profile, predictions, runs, KNOB_COLUMNS)
    return KnobEvidence(tuple(found))
