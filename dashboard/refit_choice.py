"""The sidebar form's "Refit models afterwards": the choices, their measured durations,
and the refit job a choice launches after the sweep.

Every choice refits only the machine profile the sweep measures
(`application.sweep_job.launch` names the sweep to `application.refit`), with the full
evaluation's settings unless a quicker choice is picked. What each choice says it takes
is measured (`application.refit_estimate`: the fitting a stored evaluation recorded, or
a refit timed with its command), and the box's help says what from.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from application import calibrate, refit_estimate
from application.evaluate import DEFAULT_EXTRAPOLATION_SEEDS, DEFAULT_SEEDS
from application.refit import RefitJob
from application.refit_estimate import RefitEstimate, duration_text
from core import frameworks
from core.machine import this_profile
from dashboard import data

# What "Refit models afterwards" offers: the full evaluation's settings by default (the
# models the answers rest on), quicker ones if asked. Each refits only the machine
# profile the sweep measures (`application.sweep_job.launch`). The choice is a key; what
# the box says, with its measured duration, is drawn by `box`.
REFIT_FULL = "full"
REFIT_FEWER = "fewer"
REFIT_QUICK = "quick"
REFIT_NO = "no"
REFIT_CHOICES = (REFIT_FULL, REFIT_FEWER, REFIT_QUICK, REFIT_NO)
# (random seeds, extrapolation seeds, quick) of each refit choice.
REFIT_SETTINGS = {
    REFIT_FULL: (DEFAULT_SEEDS, DEFAULT_EXTRAPOLATION_SEEDS, False),
    REFIT_FEWER: (calibrate.FIT_SEEDS, calibrate.FIT_EXTRAPOLATION_SEEDS, False),
    REFIT_QUICK: (DEFAULT_SEEDS, DEFAULT_EXTRAPOLATION_SEEDS, True),
}
REFIT_TITLES = {
    REFIT_FULL: f"full evaluation, {DEFAULT_SEEDS} seeds",
    REFIT_FEWER: f"fewer seeds ({calibrate.FIT_SEEDS}, as a calibration)",
    REFIT_QUICK: "smoke test (--quick)",
    REFIT_NO: "no",
}


def refit_job(
    choice: str,
    db: Path,
    workload: str | None = None,
    machine: str | None = None,
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> RefitJob | None:
    """The job that refits the models on ``db`` after the sweep, for a refit choice.

    workload : refit only that workload's models (the one swept); None: every workload's.
    machine : refit only that machine profile's models; None: the profiles the sweep
        measures (`application.sweep_job.launch` names the sweep), never another's.
    framework : the framework swept, whose profiles are refit.
    Only a profile whose runs at its fitted step count changed is refit
    (``only_changed``): a 1-step smoke sweep joins no 6-step fit and refits nothing.
    """
    if choice == REFIT_NO:
        return None
    seeds, extrapolation_seeds, quick = REFIT_SETTINGS[choice]
    return RefitJob(
        db,
        workload,
        machine,
        framework,
        seeds=seeds,
        extrapolation_seeds=extrapolation_seeds,
        only_changed=True,
        quick=quick,
    )


@st.cache_data(show_spinner=False, max_entries=16)
def refit_estimates(
    db: Path, db_version: object, workload: str, profile: str | None
) -> dict[str, RefitEstimate]:
    """Each refit choice's measured duration (`application.refit_estimate`), read once per
    version of the database."""
    return refit_estimate.estimates(db, workload, profile, REFIT_SETTINGS)


def box(db: Path, workload: str, on_slurm: bool, key: str, framework_key: str) -> None:
    """The "Refit models afterwards" box (session key ``key``): each choice with its
    measured duration, and what from; ``framework_key`` holds the framework swept."""
    framework = st.session_state.get(framework_key, frameworks.DEFAULT_FRAMEWORK)
    # The profile a sweep here measures; a Slurm node's is not known before its runs.
    profile = None if on_slurm else this_profile(framework=framework).key
    estimates = refit_estimates(db, data.version(db), workload, profile)

    def label(choice: str) -> str:
        estimate = estimates.get(choice)
        if estimate is None or estimate.seconds is None:
            return REFIT_TITLES[choice]
        return f"{REFIT_TITLES[choice]} (~{duration_text(estimate.seconds)})"

    sources = " ".join(
        f"{REFIT_TITLES[choice].capitalize()}: {estimate.text()}."
        for choice, estimate in estimates.items()
    )
    st.selectbox(
        "Refit models afterwards",
        REFIT_CHOICES,
        key=key,
        format_func=label,
        help="Refits only the machine profile this sweep measures, and only if its runs "
        f"changed. {sources}",
    )
