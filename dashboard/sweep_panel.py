"""The sidebar's sweep panel: the running sweep's progress, log and Cancel button, or how
the last one ended.

It reads the detached job's state from disk every POLL_S seconds (`application.jobs`)
in a fragment of its own, and reruns the whole page when a point is done or a phase
passed, so the page's charts read the new runs. A sweep on a Slurm partition shows each
point's state and job (`application.jobs`).
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import streamlit as st

from application import jobs
from dashboard import data
from presentation import text

# How often the job panel re-reads the job's state: gentle on a 2-core machine,
# and still a fresh progress bar for points that take tens of seconds.
POLL_S = 2.0
# The log's box, scrolled inside: the panel stays short enough that a sidebar scrolled
# down to the Launch button still shows the progress above (issue 42: a 15-line log
# pushed the progress out of view).
LOG_HEIGHT_PX = 160
CANCELLING_SLURM = "Cancelling the Slurm jobs…"
# The job as the page last drew it, and its snapshot for the panel of this same run.
SEEN_KEY = "launch_seen_job"
DRAWN_KEY = "launch_job_drawn"


def job_status(db: Path) -> jobs.JobStatus:
    """The sweep writing to ``db`` now, or the last one."""
    # The cached sweeps table: re-read only when the database changed.
    return jobs.status(db, sweeps=data.sweeps(db, data.version(db)))


def _signature(job: jobs.JobStatus) -> tuple:
    """What, when it changes, means the page should redraw: a point done, a phase passed."""
    return (job.running, job.phase, job.points_done)


def remember(job: jobs.JobStatus) -> None:
    """Note ``job``, just read by a whole-page run, as what the page and the panel draw."""
    st.session_state[SEEN_KEY] = _signature(job)
    # The panel draws this same snapshot now; on its own reruns it reads a fresh one.
    st.session_state[DRAWN_KEY] = job


@st.fragment(run_every=POLL_S)
def panel(db: Path) -> None:
    """The running sweep's progress, or the last one's outcome; nothing before any."""
    # Set only by a whole-page run, which has just read the job: draw what it read, so
    # the page is one consistent picture (and a message it showed is not rerun away).
    job = st.session_state.pop(DRAWN_KEY, None)
    if job is None:
        job = job_status(db)
        if st.session_state.get(SEEN_KEY) != _signature(job):
            # New runs, or the job ended: the whole page redraws (charts, this form).
            st.session_state[SEEN_KEY] = _signature(job)
            st.rerun()
    if job.running:
        _progress(db, job)
    elif job.phase != jobs.PHASE_IDLE:
        _outcome(job)


def _progress(db: Path, job: jobs.JobStatus) -> None:
    if job.point_states:
        points = jobs.cluster_progress(job.point_states)
        st.progress(points.fraction_done, text=points.text)
    else:
        total = f"{job.points_total}" if job.points_total is not None else "?"
        st.progress(job.fraction_done, text=f"{job.points_done or 0} / {total} points")
    if job.external:
        st.info(
            "A sweep this dashboard did not launch is writing to the database: "
            + text.code(job.command or "")
        )
        st.caption(f"pid {job.pid}, started {_clock(job.started_at or '')}.")
    elif job.message:
        st.warning(text.plain(job.message[0].upper() + job.message[1:] + "."))
    # A second SIGTERM would interrupt the submitter while it cancels its jobs.
    cancelling = job.on_slurm and job.cancelling
    if cancelling:
        st.info(CANCELLING_SLURM)
    elif job.phase == jobs.PHASE_REFITTING:
        st.write("Refitting the models of the machine profile this sweep measured…")
    elif job.on_slurm:
        _cluster_points(job)
    elif job.current_point:
        st.write(f"Now measuring **{text.plain(job.current_point)}**")
    elif job.points_total and (job.points_done or 0) >= job.points_total:
        st.write("Every point measured; finishing the sweep…")
    else:
        st.write("Starting the sweep…")
    # Jobs waiting in a queue make a cluster sweep's rate no guide to the time left.
    if job.phase == jobs.PHASE_SWEEPING and job.elapsed_s is not None and not job.on_slurm:
        # The sweep has no estimate until its first point has given it a rate.
        points_left = None
        if job.points_total is not None:
            points_left = job.points_total - (job.points_done or 0)
        eta = jobs.eta_caption(job.eta_s, job.elapsed_s, points_left, bool(job.current_point))
        if eta:
            st.caption(eta)
    if job.refit and job.phase != jobs.PHASE_REFITTING:
        st.caption(f"Then: {text.plain(job.refit)}.")
    if not job.external:  # a sweep started elsewhere writes its log where it was started
        st.code(
            "\n".join(job.log_tail) or "(no output yet)",
            language=None,
            wrap_lines=True,
            height=LOG_HEIGHT_PX,
        )
    if not cancelling and st.button("Cancel sweep", key="cancel_sweep"):
        # LauncherError: it ended on its own meanwhile, and the page shows how.
        with (
            st.spinner(CANCELLING_SLURM if job.on_slurm else "Cancelling…"),
            contextlib.suppress(jobs.LauncherError),
        ):
            jobs.cancel(db)
        st.rerun()


def _cluster_points(job: jobs.JobStatus) -> None:
    """Where a cluster sweep runs and each point's state and Slurm job."""
    st.caption(f"On {text.plain(job.executor or 'Slurm')}: each point is one Slurm job.")
    if not job.point_states:
        st.write("Submitting the points to Slurm…")
        return
    # A dataframe shows its cells as text: a label or job id is never read as Markdown.
    st.dataframe(
        jobs.point_table(job.point_states),
        hide_index=True,
        placeholder=text.MISSING_CELL,
    )


def _outcome(job: jobs.JobStatus) -> None:
    points = (
        f"{job.points_done} / {job.points_total} points"
        if job.points_total is not None
        else "no points recorded"
    )
    when = f" (finished {_clock(job.finished_at)})" if job.finished_at else ""
    if job.phase == jobs.PHASE_FINISHED:
        st.success(f"Done: the last sweep finished, {points}{when}.")
    elif job.phase == jobs.PHASE_CANCELLED:
        st.info(f"Last sweep was cancelled at {points}; launching it again resumes it.")
    elif job.phase == jobs.PHASE_FAILED:
        st.error(f"Last sweep failed at {points}: {text.plain(job.message)}")
    else:
        st.error(f"Last sweep crashed at {points}: {text.plain(job.message)}")
    if job.refit and job.refit.startswith(jobs.MODELS_REFIT):
        # What the refit said it refit (which profile, which settings), where it says so.
        said = text.plain(job.refit[0].upper() + job.refit[1:])
        st.success(f"{said}: the Models and Sizing pages use them.")
    elif job.refit:
        st.warning(text.plain(job.refit[0].upper() + job.refit[1:] + "."))
    with st.expander("Log of the last sweep"):
        st.code("\n".join(job.log_tail) or "(empty)", language=None, wrap_lines=True)


def _clock(iso: str) -> str:
    """``2025-01-02T03:04:05+00:00`` as ``2025-01-02 03:04 UTC``."""
    return iso[:16].replace("T", " ") + " UTC"
