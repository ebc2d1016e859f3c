"""The sidebar every page shares: launch a sweep and watch it, import runs measured elsewhere.

The sweep runs as a detached job (`application.sweep_job.launch`, `profiling.launcher`):
this code only starts it, reads its state from disk every few seconds and can cancel
it, so a reload, a second tab or a closed browser neither stops nor duplicates it. Any sweep
writing to the database shows here and can be cancelled, whoever started it (a
CLI sweep too); none can be launched meanwhile. When a point finishes, the
whole page reruns, and its charts read the new runs. A read-only
dashboard (``MEMPLAN_READ_ONLY``) shows neither section.

A sweep runs on this machine or on a Slurm partition ("Run on"): the points are
then Slurm jobs, submitted and watched by the detached job here, and the panel
shows each point's state and job (`profiling.launch_target` reads the Slurm boxes into
the sweep's typed job, `profiling.jobstatus` counts the points).

The parts: the panel of the running or last sweep (`dashboard.sweep_panel`), the
sweep form (`dashboard.launch_form`), the import (`dashboard.import_form`).
The Models and Sizing pages launch through the same machinery (`launch_grid`):
the sweep that gives this machine's profile enough runs for models of its own.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import streamlit as st

from application import calibrate, sweep_job, sweeps
from application.sweeps import DEFAULT_STEPS, default_memory_limit_bytes
from core import frameworks, workloads
from core.errors import MemplanError
from dashboard import data, import_form, launch_form, sweep_panel
from presentation import text, workload_labels

READ_ONLY_NOTE = (
    f"This dashboard is read-only ({data.READ_ONLY_ENV_VAR} is set): launching sweeps and "
    "importing runs are switched off, so everyone it is shared with sees the same data."
)


def render() -> None:
    """Draw the sidebar."""
    with st.sidebar:
        if data.read_only():
            st.caption(READ_ONLY_NOTE)
            return
        db = data.database()
        st.subheader("Launch a sweep")
        job = sweep_panel.job_status(db)
        sweep_panel.remember(job)
        if job.running and launch_form.submitted():
            # Clicked in a tab that had not noticed the running sweep yet: the launcher
            # refuses, and its message says which sweep runs.
            launch_form.launch(db)
        sweep_panel.panel(db)
        if not job.running:
            launch_form.draw(db)
        st.subheader("Import runs")
        import_form.draw(db)


def sweep_running(db: Path) -> bool:
    """Whether a sweep writes to ``db`` now (launched here or not): nothing else may start."""
    return sweep_panel.job_status(db).running


def launch_grid(
    db: Path,
    workload: str,
    grid: tuple[tuple[int, ...], tuple[int, ...]],
    machine: str,
    framework: str = frameworks.DEFAULT_FRAMEWORK,
) -> None:
    """Launch a sweep of every side x batch (``grid``: the sides, the batches) of
    ``workload``'s default network on ``framework``, then fit profile ``machine``.

    What a page's "Launch" button starts: the sweep a machine profile lacks,
    then the fit a calibration runs (`application.calibrate.fit_job`: minutes,
    with the bounds the answers need). A refused launch (a sweep
    already runs, a grid over the memory limit, a framework not installed here, with
    how to install it) is an error on the page; otherwise the page reruns and the
    sidebar shows the job.
    """
    image_sizes, batch_sizes = grid
    defaults = workload_labels.knob_defaults(workload)
    form_knobs = workloads.labels(workload).form_knobs
    limit_bytes = default_memory_limit_bytes()
    try:
        request = sweeps.parse_request(
            " ".join(map(str, image_sizes)),
            " ".join(map(str, batch_sizes)),
            {knob: str(defaults[knob]) for knob in form_knobs},
            DEFAULT_STEPS,
            sweeps.memory_limit_text(limit_bytes) if limit_bytes > 0 else "",
            workload=workload,
        )
        frameworks.check_installed(framework)
        request = replace(request, framework=framework)
        fit = calibrate.fit_job(workload, machine, db, framework)
        sweep_job.launch(db, request, fit)
    except MemplanError as error:
        st.error(text.plain(error))
        return
    st.rerun()
