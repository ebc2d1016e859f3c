"""The sidebar every page shares: launch a sweep and watch it, import runs measured elsewhere.

The sweep runs as a detached job (`profiling.launcher`): this code only starts
it, reads its state from disk every few seconds and can cancel it, so a reload,
a second tab or a closed browser neither stops nor duplicates it. Any sweep
writing to the database shows here and can be cancelled, whoever started it (a
CLI sweep too); none can be launched meanwhile. When a point finishes, the
whole page reruns, and its charts read the new runs. A read-only
dashboard (``MEMPLAN_READ_ONLY``) shows neither section.

A sweep runs on this machine or on a Slurm partition ("Run on"): the points are
then Slurm jobs, submitted and watched by the detached job here, and the panel
shows each point's state and job (`profiling.launch_target` builds the command,
`profiling.jobstatus` counts the points).

The Models and Sizing pages launch through the same machinery (`launch_grid`):
the sweep that gives this machine's profile enough runs for models of its own.
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import streamlit as st

from core import workloads
from core.errors import ConfigError, MemplanError
from core.workloads import DEFAULT_WORKLOAD
from dashboard import data
from presentation import text, workload_labels
from profiling import (
    calibration,
    cluster_progress,
    joblog,
    jobstatus,
    launch_target,
    launcher,
    requests,
    uploads,
)
from profiling import job as jobs
from profiling.runner import DEFAULT_STEPS
from profiling.slurm_points import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    SlurmOptions,
)
from profiling.slurm_workdir import default_work_dir
from profiling.sweep import (
    DEFAULT_MEMORY_FRACTION,
    default_memory_limit_bytes,
    stable_memory_limit_bytes,
)

# How often the job panel re-reads the job's state: gentle on a 2-core machine,
# and still a fresh progress bar for points that take tens of seconds.
POLL_S = 2.0
# What "Refit models afterwards" offers, the quick refit first (the default): a sweep
# of a few points should not cost a quarter of an hour of models. Durations on the
# reference 2-core machine: the full evaluation takes 9-17 minutes
# (modeling/stored/bundle.py); the quick one, `memplan evaluate --workload
# unet3d --quick --no-store` on the bundled data/memplan.duckdb (40 ok U-Net runs),
# took 65 s wall clock (2026-11, on 2 cores shared with other work; docs/dashboard.md says ~1 min).
REFIT_QUICK = "quick (smoke-test settings, ~1 min on 2 cores)"
REFIT_FULL = "full evaluation (~17 min on 2 cores)"
REFIT_NO = "no"
REFIT_CHOICES = (REFIT_QUICK, REFIT_FULL, REFIT_NO)
UPLOAD_TYPES = ["csv", "parquet"]
# The knobs a sweep form offers a list box for: every workload's ``LABELS.form_knobs``.
FORM_KNOBS: tuple[str, ...] = tuple(
    dict.fromkeys(knob for module in workloads.REGISTERED for knob in module.LABELS.form_knobs)
)
KEYS = {
    "workload": "launch_workload",
    "sizes": "launch_image_sizes",
    "batches": "launch_batch_sizes",
    # one list box per knob some workload's sweep form offers: "launch_base_filters", ...
    **{knob: f"launch_{knob}" for knob in FORM_KNOBS},
    "steps": "launch_steps",
    "limit": "launch_memory_limit",
    "refit": "launch_refit",
    "submit": "launch_submit",
    "seen": "launch_seen_job",
    "runs_file": "import_runs_file",
    "timelines_file": "import_timelines_file",
    "remembered": "launch_remembered",
    "drawn": "launch_job_drawn",
    "run_on": "launch_run_on",
    "partition": "launch_partition",
    "account": "launch_account",
    "max_parallel": "launch_max_parallel",
    "cpus_per_task": "launch_cpus_per_task",
    "work_dir": "launch_work_dir",
}
DEFAULTS = {
    "workload": DEFAULT_WORKLOAD,
    "sizes": workloads.labels(DEFAULT_WORKLOAD).sweep_sizes or "",
    "batches": "1 2",
    **{knob: str(workloads.KNOBS[knob].default) for knob in FORM_KNOBS},
    "steps": DEFAULT_STEPS,
}
RUN_ON_HERE = "This machine"
RUN_ON_SLURM = "Slurm partition"
# Where a sweep runs, and the Slurm boxes, as a new session finds them.
TARGET_DEFAULTS = {
    "run_on": RUN_ON_HERE,
    "partition": "",
    "account": "",
    "max_parallel": DEFAULT_MAX_PARALLEL,
    "cpus_per_task": DEFAULT_CPUS_PER_TASK,
    "work_dir": "",
}
SLURM_MEMORY_NOTE = (
    f"Memory: each job asks Slurm for its point's estimate plus {DEFAULT_MEM_MARGIN:.0%}; "
    "a point needing more than the partition's nodes have is skipped."
)
CANCELLING_SLURM = "Cancelling the Slurm jobs…"
# What the image sizes box says each workload takes.
SIZES_HELP = {
    3: "Cube sides or D x H x W, separated by spaces, e.g. 32 64 96x96x64.",
    2: "Square sides or H x W, separated by spaces, e.g. 128 224 227x200.",
}
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
        job = _job_status(db)
        st.session_state[KEYS["seen"]] = _signature(job)
        # The panel draws this same snapshot now; on its own reruns it reads a fresh one.
        st.session_state[KEYS["drawn"]] = job
        if job.running and st.session_state.get(KEYS["submit"]):
            # Clicked in a tab that had not noticed the running sweep yet: the launcher
            # refuses, and its message says which sweep runs.
            _launch(db)
        _job_panel(db)
        if not job.running:
            _launch_form(db)
        st.subheader("Import runs")
        _import_form(db)


def refit_command(
    choice: str, db: Path, workload: str | None = None, machine: str | None = None
) -> list[str] | None:
    """The command that refits the models on ``db`` after the sweep, for a refit choice.

    workload : refit only that workload's models (the one swept); None: every workload's.
    machine : refit only that machine profile's models; None: every profile's.
    Only the profiles whose runs at their fitted step count changed are refit
    (``--only-changed``): a 1-step smoke sweep joins no 6-step fit and refits nothing.
    """
    if choice == REFIT_NO:
        return None
    command = [sys.executable, "-m", "memplan", "evaluate", "--db", str(db), "--only-changed"]
    if workload is not None:
        command += ["--workload", workload]
    if machine is not None:
        command += ["--machine", machine]
    return command + ["--quick"] if choice == REFIT_QUICK else command


def sweep_running(db: Path) -> bool:
    """Whether a sweep writes to ``db`` now (launched here or not): nothing else may start."""
    return _job_status(db).running


def launch_grid(
    db: Path,
    workload: str,
    image_sizes: tuple[int, ...],
    batch_sizes: tuple[int, ...],
    machine: str,
) -> None:
    """Launch a sweep of every side x batch of ``workload``'s default network, then fit it.

    What a page's "Launch" button starts: the sweep a machine profile lacks,
    then the fit a calibration runs (`profiling.calibration.fit_command`: minutes,
    with the bounds the answers need). A refused launch (a sweep
    already runs, a grid over the memory limit) is an error on the page;
    otherwise the page reruns and the sidebar shows the job.
    """
    defaults = workload_labels.knob_defaults(workload)
    form_knobs = workloads.labels(workload).form_knobs
    limit_bytes = default_memory_limit_bytes()
    try:
        request = requests.parse_request(
            " ".join(map(str, image_sizes)),
            " ".join(map(str, batch_sizes)),
            {knob: str(defaults[knob]) for knob in form_knobs},
            DEFAULT_STEPS,
            requests.memory_limit_text(limit_bytes) if limit_bytes > 0 else "",
            workload=workload,
        )
        launcher.launch(db, request, calibration.fit_command(workload, machine, db))
    except MemplanError as error:
        st.error(text.plain(error))
        return
    st.rerun()


def _job_status(db: Path) -> jobstatus.JobStatus:
    # The cached sweeps table: re-read only when the database changed.
    return launcher.status(db, sweeps=data.sweeps(db, data.version(db)))


def _signature(job: jobstatus.JobStatus) -> tuple:
    """What, when it changes, means the page should redraw: a point done, a phase passed."""
    return (job.running, job.phase, job.points_done)


@st.fragment(run_every=POLL_S)
def _job_panel(db: Path) -> None:
    # Set only by a whole-page run, which has just read the job: draw what it read, so
    # the page is one consistent picture (and a message it showed is not rerun away).
    job = st.session_state.pop(KEYS["drawn"], None)
    if job is None:
        job = _job_status(db)
        if st.session_state.get(KEYS["seen"]) != _signature(job):
            # New runs, or the job ended: the whole page redraws (charts, this form).
            st.session_state[KEYS["seen"]] = _signature(job)
            st.rerun()
    if job.running:
        _progress(db, job)
    elif job.phase != jobstatus.PHASE_IDLE:
        _outcome(job)


def _progress(db: Path, job: jobstatus.JobStatus) -> None:
    if job.point_states:
        points = cluster_progress.cluster_progress(job.point_states)
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
    elif job.phase == jobstatus.PHASE_REFITTING:
        st.write("Refitting the models on every stored run…")
    elif job.on_slurm:
        _cluster_points(job)
    elif job.current_point:
        st.write(f"Now measuring **{text.plain(job.current_point)}**")
    else:
        st.write("Starting the sweep…")
    # Jobs waiting in a queue make a cluster sweep's rate no guide to the time left.
    if job.phase == jobstatus.PHASE_SWEEPING and job.elapsed_s is not None and not job.on_slurm:
        # The sweep has no estimate until its first point has given it a rate.
        points_left = None
        if job.points_total is not None:
            points_left = job.points_total - (job.points_done or 0)
        eta = joblog.eta_caption(job.eta_s, job.elapsed_s, points_left, bool(job.current_point))
        if eta:
            st.caption(eta)
    if job.refit and job.phase != jobstatus.PHASE_REFITTING:
        st.caption(f"Then: {text.plain(job.refit)}.")
    if not job.external:  # a sweep started elsewhere writes its log where it was started
        st.code("\n".join(job.log_tail) or "(no output yet)", language=None, wrap_lines=True)
    if not cancelling and st.button("Cancel sweep", key="cancel_sweep"):
        # LauncherError: it ended on its own meanwhile, and the page shows how.
        with (
            st.spinner(CANCELLING_SLURM if job.on_slurm else "Cancelling…"),
            contextlib.suppress(launcher.LauncherError),
        ):
            launcher.cancel(db)
        st.rerun()


def _cluster_points(job: jobstatus.JobStatus) -> None:
    """Where a cluster sweep runs and each point's state and Slurm job."""
    st.caption(f"On {text.plain(job.executor or 'Slurm')}: each point is one Slurm job.")
    if not job.point_states:
        st.write("Submitting the points to Slurm…")
        return
    # A dataframe shows its cells as text: a label or job id is never read as Markdown.
    st.dataframe(
        cluster_progress.point_table(job.point_states),
        hide_index=True,
        placeholder=text.MISSING_CELL,
    )


def _outcome(job: jobstatus.JobStatus) -> None:
    points = (
        f"{job.points_done} / {job.points_total} points"
        if job.points_total is not None
        else "no points recorded"
    )
    when = f" (finished {_clock(job.finished_at)})" if job.finished_at else ""
    if job.phase == jobs.PHASE_FINISHED:
        st.success(f"Last sweep finished: {points}{when}.")
    elif job.phase == jobs.PHASE_CANCELLED:
        st.info(f"Last sweep was cancelled at {points}; launching it again resumes it.")
    elif job.phase == jobs.PHASE_FAILED:
        st.error(f"Last sweep failed at {points}: {text.plain(job.message)}")
    else:
        st.error(f"Last sweep crashed at {points}: {text.plain(job.message)}")
    if job.refit == "models refit":
        st.success("Models refit: the Models and Sizing pages use them.")
    elif job.refit:
        st.warning(text.plain(job.refit[0].upper() + job.refit[1:] + "."))
    with st.expander("Log of the last sweep"):
        st.code("\n".join(job.log_tail) or "(empty)", language=None, wrap_lines=True)


def _clock(iso: str) -> str:
    """``2025-01-02T03:04:05+00:00`` as ``2025-01-02 03:04 UTC``."""
    return iso[:16].replace("T", " ") + " UTC"


def _launch_form(db: Path) -> None:
    # The form is not drawn while a sweep runs, and Streamlit then forgets its values:
    # what was launched last in this session comes back, so it can be launched again.
    remembered = st.session_state.get(KEYS["remembered"], {})
    for name, value in (DEFAULTS | TARGET_DEFAULTS).items():
        st.session_state.setdefault(KEYS[name], remembered.get(name, value))
    # Of the total RAM, not the memory available now, which moves between visits.
    limit_bytes = stable_memory_limit_bytes()
    default_limit = requests.memory_limit_text(limit_bytes) if limit_bytes > 0 else ""
    st.session_state.setdefault(KEYS["limit"], remembered.get("limit", default_limit))
    st.session_state.setdefault(KEYS["refit"], remembered.get("refit", REFIT_CHOICES[0]))
    # Outside the form, so choosing a workload redraws the form with that workload's fields.
    workload = st.selectbox(
        "Workload",
        workload_labels.names(),
        key=KEYS["workload"],
        format_func=workload_labels.title,
        on_change=_workload_changed,
    )
    # Outside the form too: the Slurm boxes appear, and are checked, as soon as they are chosen.
    on_slurm = (
        st.radio(
            "Run on",
            (RUN_ON_HERE, RUN_ON_SLURM),
            key=KEYS["run_on"],
            horizontal=True,
            on_change=_run_on_changed,
        )
        == RUN_ON_SLURM
    )
    can_launch = _slurm_fields(db) if on_slurm else True
    module = workloads.get(workload)
    with st.form("launch_sweep", border=False):
        st.text_input(
            "Image sizes",
            key=KEYS["sizes"],
            help=f"{SIZES_HELP.get(module.DIMS, 'Sides separated by spaces.')} "
            f"{module.LABELS.sides_help}".strip(),
        )
        st.text_input("Batch sizes", key=KEYS["batches"], help="e.g. 1 2 4")
        for knob in module.KNOBS:  # the workload's own list boxes, as it declares them
            if knob.name in module.LABELS.form_knobs:
                st.text_input(
                    knob.label,
                    key=KEYS[knob.name],
                    help=f"{knob.help[:1].upper()}{knob.help[1:]}; {knob.default} is the "
                    "reference network. Values separated by spaces.",
                )
        st.number_input(
            "Steps",
            min_value=1,
            step=1,
            key=KEYS["steps"],
            help=f"Training steps per point (default {DEFAULT_STEPS}: the peak settles "
            "after about 5; docs/steps.md).",
        )
        if on_slurm:
            st.caption(SLURM_MEMORY_NOTE)
        else:
            st.text_input(
                "Memory limit",
                key=KEYS["limit"],
                help="The most one point may use, e.g. 12GiB: a point estimated above it is "
                "skipped, a child crossing it is killed and recorded as out of memory. Default: "
                f"{DEFAULT_MEMORY_FRACTION:.0%} of this machine's total RAM, the same on every "
                "visit; a point is also skipped when its estimate is above the memory available "
                "as it starts, less 2 GiB kept free.",
            )
        st.selectbox("Refit models afterwards", REFIT_CHOICES, key=KEYS["refit"])
        launch = st.form_submit_button(
            "Launch sweep", type="primary", key=KEYS["submit"], disabled=not can_launch
        )
    if launch:
        _launch(db)


def _slurm_fields(db: Path) -> bool:
    """The Slurm partition's boxes, checked as typed; whether a sweep can be launched there."""
    missing = launch_target.slurm_missing()
    if missing:
        st.warning(text.plain(missing))
    st.text_input(
        "Partition",
        key=KEYS["partition"],
        placeholder="e.g. debug",
        help="The Slurm partition the points run on, one job each (`sinfo` lists them).",
    )
    problem = None
    try:
        _slurm_target(db)
    except ConfigError as error:
        problem = text.plain(error)
        st.error(problem)
    st.text_input(
        "Account (optional)",
        key=KEYS["account"],
        help="The Slurm account to charge, if the cluster wants one.",
    )
    st.number_input(
        "Max parallel jobs",
        min_value=1,
        step=1,
        key=KEYS["max_parallel"],
        help="Jobs of the sweep running at once on the partition.",
    )
    st.number_input(
        "CPUs per job",
        min_value=1,
        step=1,
        key=KEYS["cpus_per_task"],
        help="CPUs each job gets, recorded with its run.",
    )
    default_dir = default_work_dir(db)
    st.text_input(
        "Work directory (optional)",
        key=KEYS["work_dir"],
        placeholder=str(default_dir),
        help=f"Where the jobs read their points and write their records; the nodes must see "
        f"it. Default: {default_dir.name} beside the database. A relative path is taken from "
        "the database's folder.",
    )
    return missing is None and problem is None


def _slurm_target(db: Path) -> SlurmOptions:
    """What the Slurm boxes say; `ConfigError` naming the box that is wrong."""
    state = st.session_state
    return launch_target.slurm_options(
        db,
        partition=state.get(KEYS["partition"], ""),
        account=state.get(KEYS["account"], ""),
        max_parallel=int(state.get(KEYS["max_parallel"], DEFAULT_MAX_PARALLEL)),
        cpus_per_task=int(state.get(KEYS["cpus_per_task"], DEFAULT_CPUS_PER_TASK)),
        work_dir=state.get(KEYS["work_dir"], ""),
    )


def _run_on_changed() -> None:
    """Streamlit forgets what hidden boxes said: the Slurm ones say it again when shown again."""
    state = st.session_state
    remembered = state.get(KEYS["remembered"], {})
    boxes = [name for name in TARGET_DEFAULTS if name != "run_on"]
    if state[KEYS["run_on"]] == RUN_ON_SLURM:
        for name in boxes:
            state[KEYS[name]] = remembered.get(name, TARGET_DEFAULTS[name])
    else:  # drawn until now: what they say is current
        kept = {name: state[KEYS[name]] for name in boxes if KEYS[name] in state}
        state[KEYS["remembered"]] = remembered | kept


def _workload_changed() -> None:
    """A workload just chosen: its own example sizes, since the last one's may not suit it."""
    workload = st.session_state[KEYS["workload"]]
    st.session_state[KEYS["sizes"]] = workloads.labels(workload).sweep_sizes or ""


def _launch(db: Path) -> None:
    state = st.session_state
    remembered = (*DEFAULTS, "limit", "refit", *TARGET_DEFAULTS)
    state[KEYS["remembered"]] = state.get(KEYS["remembered"], {}) | {
        name: state[KEYS[name]] for name in remembered if KEYS[name] in state
    }
    workload = state.get(KEYS["workload"], DEFAULT_WORKLOAD)
    # A workload gets only its own knob boxes, whatever a hidden one last said.
    form_knobs = workloads.labels(workload).form_knobs
    on_slurm = state.get(KEYS["run_on"]) == RUN_ON_SLURM
    try:
        target = _slurm_target(db) if on_slurm else None
        request = requests.parse_request(
            state.get(KEYS["sizes"], ""),
            state.get(KEYS["batches"], ""),
            {knob: state.get(KEYS[knob], "") for knob in form_knobs},
            int(state.get(KEYS["steps"], DEFAULT_STEPS)),
            launch_target.SLURM_FORM_MEMORY_LIMIT if on_slurm else state.get(KEYS["limit"], ""),
            workload=workload,
        )
        refit = refit_command(state.get(KEYS["refit"], REFIT_NO), db, workload)
        # No refit after a sweep that stored nothing new: it would change nothing.
        launcher.launch(db, request, refit, refit_needs_new_runs=True, target=target)
    except MemplanError as error:
        st.error(text.plain(error))
        return
    st.rerun()


def _import_form(db: Path) -> None:
    st.caption("Runs measured on another machine, as `memplan export` writes them.")
    runs_file = st.file_uploader(
        "Runs file (CSV or Parquet)", type=UPLOAD_TYPES, key=KEYS["runs_file"]
    )
    timelines_file = st.file_uploader(
        "Timelines file (optional)", type=UPLOAD_TYPES, key=KEYS["timelines_file"]
    )
    if not st.button("Import", disabled=runs_file is None):
        return
    runs = uploads.Upload(runs_file.name, runs_file.getvalue())
    timelines = (
        uploads.Upload(timelines_file.name, timelines_file.getvalue()) if timelines_file else None
    )
    try:
        count = uploads.import_uploads(db, runs, timelines)
    except MemplanError as error:
        st.error(f"Nothing was imported. {text.plain(error)}")
    else:
        st.success(f"Imported {count} run(s) from {text.plain(runs_file.name)}.")
