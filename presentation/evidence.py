"""What an answer rests on, in one line: the models, their runs, their step count, their date.

`evidence_line` words a `modeling.stored.evidence.FitEvidence` for the Sizing
page (escaped there with `presentation.text.plain`) and ``memplan size``, so both
say which models an answer comes from, how many runs and configurations at how
many training steps they were fitted on, which runs at other step counts were
left out, when, and whether that was a smoke-test fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from modeling.evaluation.steps import describe_steps
from modeling.stored.evidence import FitEvidence

# How long an evaluation id is shown: enough to find it, short enough to read.
SHORT_ID_CHARS = 12


def fitted_when(iso: str) -> str:
    """An ISO 8601 time as "2026-11-24 02:43 UTC"; the text itself when it is not one."""
    try:
        moment = datetime.fromisoformat(iso)
    except ValueError:
        return iso
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def evidence_line(evidence: FitEvidence, models: Sequence[str] = ()) -> str:
    """One sentence: which models, fitted when, on how many runs at how many steps.

    models : the display names of the models the answer used (none: not named).
    """
    which = "the bundled evaluation" if evidence.bundled else "evaluation"
    kind = " (smoke-test settings, --quick)" if evidence.smoke_test else ""
    steps = (
        f"at {_plural(evidence.steps, 'training step')}"
        if evidence.steps is not None
        else "at a step count its runs did not record"
    )
    named = ", ".join(f"“{name}”" for name in models)
    subject = (
        f"Rests on {'the model' if len(models) == 1 else 'the models'} {named}, from "
        if models
        else "Rests on "
    )
    line = (
        f"{subject}{which} {evidence.evaluation_id[:SHORT_ID_CHARS]}{kind}, fitted "
        f"{fitted_when(evidence.fitted_at)} on {_plural(evidence.n_runs, 'run')}, "
        f"{_plural(evidence.n_points, 'configuration')}, {steps}"
    )
    if evidence.other_steps:
        line += f"; left out: {describe_steps(evidence.other_steps)}"
    return line + "."
