"""The sidebar's sweep form: its boxes, what it remembers between sweeps, and the launch.

The workload and where it runs ("This machine" or a Slurm partition) are chosen
above the form, so the form redraws with that workload's own boxes and the Slurm
boxes are checked as they are typed (`application.sweeps`). The launch parses
what the boxes say (`application.sweeps.parse_request`) and starts the detached job
(`application.sweep_job.launch`), then the refit chosen in "Refit models afterwards"
(an `application.refit.RefitJob`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import ModuleType

import streamlit as st

from application import sweep_job, sweeps
from application.sweeps import (
    DEFAULT_CPUS_PER_TASK,
    DEFAULT_MAX_PARALLEL,
    DEFAULT_MEM_MARGIN,
    DEFAULT_MEMORY_FRACTION,
    DEFAULT_STEPS,
    SlurmOptions,
    default_work_dir,
    stable_memory_limit_bytes,
)
from core import frameworks, workloads
from core.errors import ConfigError, MemplanError
from core.workloads import DEFAULT_WORKLOAD
from dashboard import refit_choice
from dashboard.refit_choice import REFIT_CHOICES, REFIT_NO
from presentation import text, workload_labels

# The knobs a sweep form offers a list box for: every workload's ``LABELS.form_knobs``.
FORM_KNOBS: tuple[str, ...] = tuple(
    dict.fromkeys(knob for module in workloads.REGISTERED for knob in module.LABELS.form_knobs)
)
KEYS = {
    "workload": "launch_workload",
    "framework": "launch_framework",
    "sizes": "launch_image_sizes",
    "batches": "launch_batch_sizes",
    # one list box per knob some workload's sweep form offers: "launch_base_filters", ...
    **{knob: f"launch_{knob}" for knob in FORM_KNOBS},
    "steps": "launch_steps",
    "limit": "launch_memory_limit",
    "refit": "launch_refit",
    "submit": "launch_submit",
    "remembered": "launch_remembered",
    "run_on": "launch_run_on",
    "partition": "launch_partition",
    "account": "launch_account",
    "max_parallel": "launch_max_parallel",
    "cpus_per_task": "launch_cpus_per_task",
    "work_dir": "launch_work_dir",
}
DEFAULTS = {
    "workload": DEFAULT_WORKLOAD,
    "framework": frameworks.DEFAULT_FRAMEWORK,
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
FRAMEWORK_HELP = (
    "What trains each point: the workload's Keras model on TensorFlow, or its native "
    f"torch.nn model on PyTorch (not in what scripts/start.sh installs: "
    f"{frameworks.INSTALL_HINTS[frameworks.TORCH]}). Each framework's runs get models of "
    "their own."
)
# What the image sizes box says each workload takes.
SIZES_HELP = {
    3: "Cube sides or D x H x W, separated by spaces, e.g. 32 64 96x96x64.",
    2: "Square sides or H x W, separated by spaces, e.g. 128 224 227x200.",
}


def submitted() -> bool:
    """Whether "Launch sweep" was clicked in the run now drawing."""
    return bool(st.session_state.get(KEYS["submit"]))


def draw(db: Path) -> None:
    """The workload, where it runs, and the sweep form; launches when its button is clicked."""
    _restore_boxes()
    # Outside the form, so choosing a workload redraws the form with that workload's fields.
    workload = st.selectbox(
        "Workload",
        workload_labels.names(),
        key=KEYS["workload"],
        format_func=workload_labels.title,
        on_change=_workload_changed,
    )
    on_slurm = _run_on_box()
    can_launch = _slurm_fields(db) if on_slurm else True
    with st.form("launch_sweep", border=False):
        st.selectbox(
            "Framework",
            frameworks.FRAMEWORKS,
            key=KEYS["framework"],
            format_func=_framework_title,
            help=FRAMEWORK_HELP,
        )
        _grid_boxes(workloads.get(workload))
        _run_boxes(db, workload, on_slurm)
        clicked = st.form_submit_button(
            "Launch sweep", type="primary", key=KEYS["submit"], disabled=not can_launch
        )
    if clicked:
        launch(db)


def _framework_title(framework: str) -> str:
    """``TensorFlow``, ``PyTorch (not installed here)``: what the selector offers."""
    title = frameworks.TITLES[framework]
    installed = frameworks.version(framework) != frameworks.NOT_INSTALLED
    return title if installed else f"{title} (not installed here)"


def _restore_boxes() -> None:
    """Fill the boxes Streamlit forgot with what was launched last, else the defaults."""
    # The form is not drawn while a sweep runs, and Streamlit then forgets its values:
    # what was launched last in this session comes back, so it can be launched again.
    remembered = st.session_state.get(KEYS["remembered"], {})
    for name, value in (DEFAULTS | TARGET_DEFAULTS).items():
        st.session_state.setdefault(KEYS[name], remembered.get(name, value))
    # Of the total RAM, not the memory available now, which moves between visits.
    limit_bytes = stable_memory_limit_bytes()
    default_limit = sweeps.memory_limit_text(limit_bytes) if limit_bytes > 0 else ""
    st.session_state.setdefault(KEYS["limit"], remembered.get("limit", default_limit))
    st.session_state.setdefault(KEYS["refit"], remembered.get("refit", REFIT_CHOICES[0]))


def _run_on_box() -> bool:
    """The "Run on" choice; whether it is a Slurm partition."""
    # Outside the form too: the Slurm boxes appear, and are checked, as soon as they are chosen.
    choice = st.radio(
        "Run on",
        (RUN_ON_HERE, RUN_ON_SLURM),
        key=KEYS["run_on"],
        horizontal=True,
        on_change=_run_on_changed,
    )
    return choice == RUN_ON_SLURM


def _grid_boxes(module: ModuleType) -> None:
    """The boxes of the grid to sweep: image sizes, batch sizes, the workload's own knobs."""
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


def _run_boxes(db: Path, workload: str, on_slurm: bool) -> None:
    """The boxes of how each point runs: steps, memory limit (here), the refit after."""
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
    refit_choice.box(db, workload, on_slurm, KEYS["refit"], KEYS["framework"])


def _slurm_fields(db: Path) -> bool:
    """The Slurm partition's boxes, checked as typed; whether a sweep can be launched there."""
    missing = sweeps.slurm_missing()
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
    return sweeps.slurm_options(
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


def launch(db: Path) -> None:
    """Launch the sweep the boxes describe; a refused launch is an error in the sidebar."""
    state = st.session_state
    remembered = (*DEFAULTS, "limit", "refit", *TARGET_DEFAULTS)
    state[KEYS["remembered"]] = state.get(KEYS["remembered"], {}) | {
        name: state[KEYS[name]] for name in remembered if KEYS[name] in state
    }
    workload = state.get(KEYS["workload"], DEFAULT_WORKLOAD)
    # A workload gets only its own knob boxes, whatever a hidden one last said.
    form_knobs = workloads.labels(workload).form_knobs
    on_slurm = state.get(KEYS["run_on"]) == RUN_ON_SLURM
    framework = state.get(KEYS["framework"], frameworks.DEFAULT_FRAMEWORK)
    try:
        # Before anything else: without the framework nothing can train (says how to add it).
        frameworks.check_installed(framework)
        target = _slurm_target(db) if on_slurm else None
        request = sweeps.parse_request(
            state.get(KEYS["sizes"], ""),
            state.get(KEYS["batches"], ""),
            {knob: state.get(KEYS[knob], "") for knob in form_knobs},
            int(state.get(KEYS["steps"], DEFAULT_STEPS)),
            sweeps.SLURM_FORM_MEMORY_LIMIT if on_slurm else state.get(KEYS["limit"], ""),
            workload=workload,
        )
        request = replace(request, framework=framework)
        refit = refit_choice.refit_job(
            state.get(KEYS["refit"], REFIT_NO), db, workload, framework=framework
        )
        # No refit after a sweep that stored nothing new: it would change nothing.
        sweep_job.launch(db, request, refit, refit_needs_new_runs=True, target=target)
    except MemplanError as error:
        st.error(text.plain(error))
        return
    st.rerun()
