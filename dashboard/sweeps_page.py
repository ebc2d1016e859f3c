"""The Sweeps page: what was measured, on which machine, and how memory moved during a run.

Filters narrow every section below them (the framework first, where the database has
runs of more than one: `dashboard.framework_panel`, kept in the URL; then the workload:
the 3D U-Net, the AlexNet-style 2D CNN; then the machine profile): the runs table (and its CSV)
with each run's two peaks side by side, one run's memory timeline, the machines
(one row per profile, never per host name: `core.profiles`) and their peaks at
one batch size, every configuration measured on two or more machines side by
side, then the sweeps themselves. The
frames come from `presentation.browse` and `presentation.machines_compared`, the charts
from `presentation.charts_sweeps`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import streamlit as st

from core import profiles
from core.machine import this_profile
from core.profile_frameworks import runs_of_framework
from core.workloads import DEFAULT_WORKLOAD
from dashboard import data, framework_panel, query_state
from presentation import (
    browse,
    charts_sweeps,
    frameworks_compared,
    machines,
    machines_compared,
    workload_labels,
)
from presentation.text import MISSING_CELL, code, plain

FILTER_ROWS = (
    ("Workload", "Machine", "Sweep", "Host", "Status"),
    ("Image size", "Batch size", *browse.KNOB_FILTERS),
)
# The columns a wide table shows first: what fits beside the sidebar at 1024 px. The
# others are one click away, in an expander whose label names them, so no column is
# hidden past the table's right edge unnamed. Both peaks of a run stand side by side.
# The workload is in the filter above and in the image's form (D×H×W or H×W), so it waits
# in "More columns": with steps beside the batch, the table ran 45 px past its edge at
# 1024 px (tests/e2e/test_pages_at_widths.py).
RUNS_FIRST = (
    "run",
    "status",
    "image (D×H×W or H×W)",
    "batch",
    "steps",  # a 1-step smoke test is not a 6-step measurement
    browse.HWM_HEADING,
    browse.SAMPLED_HEADING,
)
# A machine by name first; its profile key, which runs and models are filed under, waits in
# "More columns" (issue 42: at 1024 px the key beside the name put the table 117 px past
# its edge, and a hash is no name).
MACHINES_FIRST = ("machine", "this machine")
# Glide wraps a cell's text only in rows taller than 4rem (64 px): up to four lines here.
WRAPPED_ROW_PX = 88
# The comparisons' text columns (a configuration, a machine: up to ~100 characters) at a
# width beside which the numbers fit next to the sidebar at 1024 px, their text wrapped.
# Sized to their longest text, Machines compared ran 185 px past the table's edge at
# 1440 px (601 at 1024) and Frameworks compared 256 (672) (issue 42, point 8).
TEXT_COLUMN_PX = 160
NUMBER_COLUMN_PX = 76
COUNT_COLUMN_PX = 50
# When a sweep finished is in "More columns": with a grid summary that names every knob,
# the table ran 111 px past its edge at 1024 px (tests/e2e/test_pages_at_widths.py).
SWEEPS_FIRST = ("sweep", "status", "points done / total", "grid")
# Headers shortened where the values say the rest (the image's values show its form; the
# caption names the two peaks, a header's tooltip says what each is). "peak, HWM (GiB)" and
# "peak, sampled (GiB)" pushed the table 65 px past its edge at 1024 px.
SHORT_LABELS = {
    "image (D×H×W or H×W)": "image",
    browse.HWM_HEADING: "HWM (GiB)",
    browse.SAMPLED_HEADING: "sampled (GiB)",
}

st.title("Sweeps")
st.caption(
    "Every stored run — measured here, launched from the sidebar, or imported from another "
    "machine. Memory is host RAM (the machine's main memory, not a GPU's), in GiB (2^30 "
    "bytes)."
)

db = data.database()
version = data.version(db)
runs = browse.with_image(data.runs(db, version))
if runs.empty:
    st.info(
        "No runs stored yet: launch a sweep from the sidebar, or import runs measured elsewhere."
    )
    st.stop()

# One framework's runs at a time, where there are several (their peaks differ 2x and more).
framework = framework_panel.choose(db, version, query_state.current(), "sweeps_framework")
for problem in framework.problems:
    st.warning(query_state.plain(problem))
both_frameworks = runs  # for the frameworks compared
runs = runs_of_framework(runs, framework.framework)
here = this_profile(framework=framework.framework)
machine_names = machines.names(profiles.profiles_in(runs))


def machine_option(key: str) -> str:
    """A profile as the Machine filter offers it: by name (`presentation.machines.names`)."""
    return machine_names.get(key, key)


def table_in_two(
    table: pd.DataFrame, first: Sequence[str], config: Mapping[str, Any] | None = None
) -> None:
    """``table``'s ``first`` columns, then the others (beside the first of them) in an expander.

    A first column named "machine" holds a long label: it wraps, at `TEXT_COLUMN_PX`.
    """
    shown_first = [name for name in first if name in table.columns]
    rest = [name for name in table.columns if name not in shown_first]
    headers = {
        name: st.column_config.Column(SHORT_LABELS.get(name), help=browse.PEAK_HELP.get(name))
        for name in shown_first
        if name in SHORT_LABELS or name in browse.PEAK_HELP
    }
    wrapped = "machine" in shown_first
    if wrapped:
        headers["machine"] = st.column_config.TextColumn("machine", width=TEXT_COLUMN_PX)
    st.dataframe(
        table[shown_first],
        hide_index=True,
        placeholder=MISSING_CELL,
        column_config=headers | dict(config or {}),
        row_height=WRAPPED_ROW_PX if wrapped else None,
    )
    if rest:
        with st.expander(f"More columns: {plain(', '.join(rest))}"):
            st.dataframe(
                table[[shown_first[0], *rest]],
                hide_index=True,
                placeholder=MISSING_CELL,
                column_config=config,
            )


chosen: dict[str, list] = {}
for labels in FILTER_ROWS:
    for label, column in zip(labels, st.columns(len(labels)), strict=True):
        field, key = browse.FILTERS[label], f"sweeps_{browse.FILTERS[label]}"
        # The other filters offer what the chosen workloads measured.
        offered_from = browse.filter_runs(runs, {browse.WORKLOAD: chosen.get(browse.WORKLOAD)})
        options = browse.filter_options(offered_from, field)
        if key in st.session_state:  # a value the workloads chosen now never measured goes
            st.session_state[key] = [value for value in st.session_state[key] if value in options]
        # Workloads by name, as the runs table shows them (their titles are too long here).
        shown_as = machine_option if field == browse.MACHINE else str
        chosen[field] = column.multiselect(
            label, options, placeholder="all", key=key, format_func=shown_as
        )
shown = browse.filter_runs(runs, chosen)

st.subheader("Runs")
st.caption(
    f"{len(shown)} of {len(runs)} runs. Statuses other than ok say in *message* why. Two peaks "
    "per run: the kernel's high-water mark (HWM), which the models fit, and the largest "
    "memory_profiler sample (sampled), which a short spike can escape (hover a header)."
)
table_in_two(browse.runs_table(shown), RUNS_FIRST)
st.download_button(
    "Download CSV",
    data=lambda: browse.runs_csv(shown),
    file_name="memplan-runs.csv",
    mime="text/csv",
    help="The runs shown, in the export format: `memplan import` takes it back.",
    disabled=shown.empty,
)

st.subheader("Memory timeline")
measured = shown[shown["peak_sampled_bytes"].notna()].sort_values("created_at", ascending=False)
if measured.empty:
    st.info("None of the runs shown has a timeline (skipped points never ran).")
else:
    labels = {run["run_id"]: browse.run_label(run) for run in measured.to_dict("records")}
    run_id = st.selectbox("Run", list(labels), format_func=labels.get, key="sweeps_run")
    run = measured.set_index("run_id").loc[run_id].to_dict() | {"run_id": run_id}
    samples = data.samples(db, (run_id,), version)
    if samples.empty:
        st.info("This run was stored without its timeline (imported without a timelines file).")
    else:
        steps = browse.step_ends(run, samples)
        st.altair_chart(
            charts_sweeps.memory_timeline(browse.timeline(samples), browse.peak_marks(run), steps),
            width="stretch",
        )
        sampled, hwm = run["peak_sampled_bytes"], run["peak_hwm_bytes"]
        gap = ""
        if pd.notna(hwm) and pd.notna(sampled):
            gap = f" (here {100 * (hwm - sampled) / sampled:+.1f}% against the sampled peak)"
        st.caption(
            f"Resident memory of the profiled child every {run['sample_interval_s']:g} s "
            f"(memory_profiler). The kernel's high-water mark cannot miss a spike between "
            f"samples{gap}."
            + (
                " Shaded: the training steps, placed back from the end of the run by their "
                "measured durations (accurate to about one sampling interval)."
                if not steps.empty
                else ""
            )
        )

st.subheader("Machines")
st.caption(
    "One row per machine profile: the facts that change a run's peak (CPU, instruction set, "
    "cores, threads, RAM, framework versions, oneDNN), never the host name. *unknown*: a fact "
    "its runs did not record (runs measured before memplan recorded it)."
)
table_in_two(machines_compared.profiles_table(shown, here.key), MACHINES_FIRST)
ok_batches = sorted(shown.loc[shown["status"] == browse.OK, "batch_size"].unique().tolist())
if ok_batches:
    batch = st.selectbox("Batch size to compare", ok_batches, key="sweeps_compare_batch")
    at_batch = set(shown.loc[shown["batch_size"] == batch, browse.WORKLOAD])
    shown_workloads = [name for name in workload_labels.names() if name in at_batch]
    # One chart per workload: a 2D image's side and a 3D one's are not one axis (issue 26).
    for name in shown_workloads:
        peaks = browse.batch_peaks(workload_labels.runs_of(shown, name), batch, machine_names)
        if len(shown_workloads) > 1:
            st.markdown(f"**{plain(workload_labels.title(name))}**")
        side_title = workload_labels.side_title(workload_labels.dims(name))
        st.altair_chart(charts_sweeps.peaks_by_machine(peaks, side_title), width="stretch")
else:
    st.info("No measured (ok) run among those shown to compare machines on.")

st.subheader("Machines compared")
compared = machines_compared.compared(shown)
if compared.empty:
    workloads_shown = chosen.get(browse.WORKLOAD) or [DEFAULT_WORKLOAD]
    st.info(
        "No configuration among the runs shown was measured on two machine profiles yet. "
        "To compare this machine with the reference, calibrate it: "
        f"{code(f'memplan calibrate --workload {workloads_shown[0]}')} measures "
        "the calibration grid here (on the Models page, choosing this machine offers to "
        "launch it); runs measured on another machine can be imported from the sidebar."
    )
else:
    compared_keys = list(dict.fromkeys(compared[machines.PROFILE_COLUMN]))
    reference = st.selectbox(
        "Ratios against",
        compared_keys,
        key="sweeps_reference_machine",
        format_func=machine_option,
        help="The reference machine: every other machine's peak is divided by its peak.",
    )
    if reference != compared_keys[0]:
        compared = machines_compared.compared(shown, reference)
    configurations = compared["configuration"].nunique()
    st.caption(
        f"{configurations} configuration(s) measured ok on two or more machine profiles: the "
        "median kernel high-water mark of each machine's runs (GiB), and how many times the "
        f"reference's ({plain(machine_names.get(reference, reference))}) it is."
    )
    # One row per configuration and machine, the machine by name: a column per machine
    # was headed by its profile key (a name is ~60 characters) to fit (issue 42).
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    st.dataframe(
        machines_compared.by_machine(compared),
        hide_index=True,
        placeholder=MISSING_CELL,
        row_height=WRAPPED_ROW_PX,
        column_config={
            "configuration": text("configuration", width=TEXT_COLUMN_PX),
            "machine": text("machine", width=TEXT_COLUMN_PX),
            "runs": number("runs", width=COUNT_COLUMN_PX),
            "peak (GiB)": number("peak (GiB)", format="%.3f", width=NUMBER_COLUMN_PX),
            "x reference": number(
                "ratio",
                format="%.2fx",
                width=NUMBER_COLUMN_PX,
                help="This machine's peak over the reference machine's",
            ),
        },
    )
    st.altair_chart(charts_sweeps.machines_compared(compared), width="stretch")

st.subheader("Frameworks compared")
both = browse.filter_runs(
    both_frameworks,
    {name: chosen[name] for name in frameworks_compared.CONFIGURATION_FILTERS if name in chosen},
)
paired = frameworks_compared.compared(both)
if paired.empty:
    workload = (chosen.get(browse.WORKLOAD) or [DEFAULT_WORKLOAD])[0]
    st.info(
        "No configuration among the runs shown was measured in both TensorFlow and PyTorch on "
        "one machine yet. To compare them, run the same grid again with "
        f"{code('--framework torch')}: "
        f"{code(f'memplan sweep --workload {workload} --framework torch ...')} with the "
        "TensorFlow sweep's image and batch sizes (the sidebar's launcher has a Framework too)."
    )
else:
    pairs = frameworks_compared.pairs_of(paired)
    where = (
        f"on one machine ({plain(pairs[0])})"
        if len(pairs) == 1
        else f"on the same machine ({len(pairs)} pairs of profiles: see the machine column)"
    )
    st.caption(
        f"{len(paired)} configuration(s) measured ok in TensorFlow and in PyTorch {where}: "
        "the median kernel high-water mark of each framework's runs (GiB), and the PyTorch "
        "peak over the TensorFlow one."
    )
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    # Short headers, each said in full on hover: the long ones pushed the ratio off the edge.
    peak_help = "the median kernel high-water mark of its runs (GiB)"
    st.dataframe(
        frameworks_compared.table(paired),
        hide_index=True,
        placeholder=MISSING_CELL,
        row_height=WRAPPED_ROW_PX,
        # A machine here is a pair of profiles in words (~100 characters): the widest column.
        column_config={
            "configuration": text("configuration", width=TEXT_COLUMN_PX - 10),
            "machine": text("machine", width=TEXT_COLUMN_PX + 30),
            "TensorFlow peak (GiB)": number(
                "TensorFlow",
                format="%.3f",
                width=NUMBER_COLUMN_PX + 4,
                help=f"TensorFlow: {peak_help}",
            ),
            "PyTorch peak (GiB)": number(
                "PyTorch", format="%.3f", width=NUMBER_COLUMN_PX - 4, help=f"PyTorch: {peak_help}"
            ),
            "PyTorch / TensorFlow": number(
                "ratio",
                format="%.2fx",
                width=COUNT_COLUMN_PX + 10,
                help="PyTorch's peak over TensorFlow's",
            ),
        },
    )
    points = frameworks_compared.by_batch(paired)
    if points.empty:
        st.caption(
            "The peak against batch size per framework is AlexNet's (seed 004's figure): no "
            "AlexNet configuration among the runs shown was measured in both frameworks."
        )
    else:
        images = frameworks_compared.figure_images(points)
        image = st.selectbox("AlexNet image", images, key="sweeps_frameworks_image")
        st.altair_chart(
            charts_sweeps.frameworks_by_batch(points[points[browse.IMAGE] == image]),
            width="stretch",
        )
        st.caption(
            f"AlexNet at {plain(image)}: the peak against the batch size in each framework, "
            "seed 004's figure (Torres, Barrios, Denneulin 2021) measured on today's stacks."
        )

st.subheader("Sweeps")
sweeps = data.sweeps(db, version)
if sweeps.empty:
    st.caption(
        "No sweep has run against this database yet (imported runs keep their sweep ids, "
        "but not the sweeps)."
    )
else:
    table_in_two(browse.sweeps_table(sweeps), SWEEPS_FIRST)
