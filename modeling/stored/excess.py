"""Closed-form excess and least for models stored before `TrainingRange` kept them.

A model's training range records how far the measured peaks rose above the
closed-form estimate on the runs it was fitted on (`closed_form_excess`), and the
least they reached relative to it (`closed_form_least`). Models stored before
these were kept lack them; `modeling.stored.bundle.load_predictors`
gives them from the profile's ok runs in the database (the runs they were
fitted on, or more since) at the step count they were fitted on (a 1-step smoke
test is not one of them).
"""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from core.snapshot import Snapshot
from modeling.features import measured_frame
from modeling.stored import tables
from modeling.stored.predictor import Predictor, closed_form_excess, closed_form_least


def _known(predictor: Predictor) -> bool:
    known = predictor.training_range
    return known.closed_form_excess is not None and known.closed_form_least is not None


def all_known(predictors: list[Predictor]) -> bool:
    """Whether every one of ``predictors`` already has its closed-form excess and least."""
    return all(_known(p) for p in predictors)


def stored_steps(snapshot: Snapshot, machine: str | None) -> int | None:
    """The step count the snapshot's latest evaluation of ``machine`` fitted; None where not
    recorded."""
    stored = tables.load_evaluations(snapshot, machine)
    steps = None if stored.empty else stored["steps"].iloc[0]
    return None if steps is None or pd.isna(steps) else int(steps)


def fill_closed_form_excess(
    predictors: list[Predictor], runs: pd.DataFrame, steps: int | None
) -> list[Predictor]:
    """``predictors``, each lacking them given its closed-form excess and least over the ok
    runs.

    runs : the ok runs of the workload and machine profile the predictors were fit for; those
    at ``steps`` count (None: at every step count); with none, ``predictors`` as they are.
    """
    if steps is not None:
        runs = runs[runs["steps"] == steps]
    frame = measured_frame(runs) if not runs.empty else pd.DataFrame()
    if frame.empty:
        return predictors
    filled = []
    for predictor in predictors:
        known = predictor.training_range
        if known.closed_form_excess is None:
            excess = closed_form_excess(frame, known.framework_bytes)
            known = replace(known, closed_form_excess=excess, excess_runs=len(frame))
        if known.closed_form_least is None:
            least = closed_form_least(frame, known.framework_bytes)
            known = replace(known, closed_form_least=least)
        filled.append(replace(predictor, training_range=known))
    return filled
