"""The fitted models the pages and commands show, read from a `core.snapshot.Snapshot`.

A typed door to `modeling.stored`: the predictors a profile answers from, the
evaluation they rest on, its scores and held-out predictions, the knob values a
profile never measured, and the stored results tables `memplan results` writes.
Each is modeling's own function, already a use case with typed inputs (a
snapshot and a profile key), named here so the dashboard and `memplan` import
`application`, never `modeling`.
"""

from __future__ import annotations

from modeling.stored.bundle import load_predictions, load_predictors, load_scores
from modeling.stored.codec import decode, import_readers
from modeling.stored.evidence import FitEvidence, load_evidence
from modeling.stored.knob_splits import load_knob_evidence
from modeling.stored.predictor import Predictor
from modeling.stored.tables import BEST, RESULT_TABLES
from modeling.unmeasured import KnobEvidence

__all__ = [
    "BEST",
    "RESULT_TABLES",
    "FitEvidence",
    "KnobEvidence",
    "Predictor",
    "decode",
    "import_readers",
    "load_evidence",
    "load_knob_evidence",
    "load_predictions",
    "load_predictors",
    "load_scores",
]
