"""What an answer rests on: the evaluation behind a workload and profile's models.

`load_evidence` reads the evaluation the loaders answer from (the database's
latest of that workload and profile, else the bundled one that applies,
`modeling.stored.bundle`) as a `FitEvidence`: when it was fitted, on how many
runs and configurations, at how many training steps, and how many runs at other
step counts it left out. The pages and ``memplan size`` show it beside an answer
(`presentation.evidence`), ``memplan evaluate --only-changed`` compares its
fingerprint with the runs there are now, and `check_steps` refuses a question
about a step count the models were not fitted on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core.snapshot import Snapshot
from modeling.errors import ModelingError
from modeling.stored import bundle, tables

# The flag of a smoke-test evaluation (tiny symbolic-regression settings).
QUICK_FLAG = "--quick"


@dataclass(frozen=True)
class FitEvidence:
    """One stored evaluation's facts: what its models were fitted on, and when.

    steps : training steps of every run it fit; None where an older evaluation's
        runs did not say.
    other_steps : step count -> usable runs at it left out; None: not recorded.
    bundled : read from the bundled results (`modeling.stored.bundle`), not the
        database's own evaluations.
    """

    workload: str
    machine: str | None
    evaluation_id: str
    fitted_at: str  # ISO 8601, UTC
    n_runs: int
    n_points: int
    steps: int | None
    other_steps: Mapping[int, int] | None
    data_fingerprint: str
    command: str = ""  # the command that stored it
    bundled: bool = False

    @property
    def smoke_test(self) -> bool:
        """Whether it was fitted with smoke-test settings (``memplan evaluate --quick``)."""
        return QUICK_FLAG in self.command.split()


def _other_steps(text: Any) -> dict[int, int] | None:
    if text is None or (isinstance(text, float) and pd.isna(text)):
        return None
    return {int(steps): int(n) for steps, n in json.loads(text).items()}


def _known_int(value: Any) -> int | None:
    return None if value is None or pd.isna(value) else int(value)


def evidence_from_row(row: Mapping[str, Any], bundled: bool = False) -> FitEvidence:
    """An ``evaluations`` row (column -> value) as a `FitEvidence`."""
    return FitEvidence(
        workload=str(row["workload"]),
        machine=None if pd.isna(row["machine_profile"]) else str(row["machine_profile"]),
        evaluation_id=str(row["evaluation_id"]),
        fitted_at=str(row["created_at"]),
        n_runs=int(row["n_runs"]),
        n_points=int(row["n_points"]),
        steps=_known_int(row.get("steps")),
        other_steps=_other_steps(row.get("other_steps_json")),
        data_fingerprint=str(row["data_fingerprint"]),
        command="" if pd.isna(row.get("command")) else str(row.get("command")),
        bundled=bundled,
    )


def load_evidence(snapshot: Snapshot, machine: str | None = None) -> FitEvidence:
    """The evaluation `bundle.load_predictors` answers from for ``workload`` and ``machine``.

    Raises `NoModelsError` (saying what to run) when there is none.
    """
    workload = snapshot.workload
    stored = tables.load_evaluations(snapshot, machine)
    if not stored.empty:
        return evidence_from_row(stored.iloc[0].to_dict())
    for candidate in bundle.bundled_evaluations(workload):
        if machine not in (None, candidate.machine):
            continue
        applied = bundle.applies(snapshot, candidate.directory)
        if applied is None:
            continue
        row = bundle.bundled_frame(candidate.directory, "evaluations").iloc[0].to_dict()
        # A bundle from before schema 6 records no step count: the runs it matched say it.
        row["steps"] = applied.steps
        return evidence_from_row(row, bundled=True)
    raise tables.no_models_error(snapshot.source, workload, machine)


def check_steps(evidence: FitEvidence, steps: int | None) -> None:
    """Refuse a question about ``steps`` training steps when the models fit another count.

    steps : None asks about the step count the models were fitted on, and passes.
    Raises `ModelingError` naming both step counts and the command that fits the other.
    """
    if steps is None or evidence.steps is None or steps == evidence.steps:
        return
    flags = f"--workload {evidence.workload}"
    if evidence.machine:
        flags += f" --machine {evidence.machine}"
    raise ModelingError(
        f"the {evidence.workload} models were fitted on runs of {evidence.steps} training "
        f"steps, not {steps}; measure runs of {steps} steps and fit them with "
        f"`memplan evaluate {flags} --steps {steps}`, or ask about {evidence.steps} steps"
    )
