"""The Sweeps page: what was measured, on which machine, and how memory moved during a run.

Filters narrow every section below them (the workload first: the 3D U-Net, the
AlexNet-style 2D CNN): the runs table (and its CSV), one run's memory timeline,
machines side by side, then the sweeps themselves. The
frames come from `presentation.browse`, the charts from `presentation.charts_sweeps`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data
from presentation import browse, charts_sweeps, workload_labels

FILTER_ROWS = (
    ("Workload", "Sweep", "Host", "Status"),
    ("Image size", "Batch size", "Base filters", "Precision"),
)

st.title("Sweeps")
st.caption(
    "Every stored run — measured here, launched from the sidebar, or imported from another "
    "machine. Memory is in GiB (2^30 bytes)."
)

db = data.database()
version = data.version(db)
runs = browse.with_image(data.runs(db, version))
if runs.empty:
    st.info(
        "No runs stored yet: launch a sweep from the sidebar, or import runs measured elsewhere."
    )
    st.stop()

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
        chosen[field] = column.multiselect(label, options, placeholder="all", key=key)
shown = browse.filter_runs(runs, chosen)

st.subheader("Runs")
st.caption(f"{len(shown)} of {len(runs)} runs. Statuses other than ok say in *message* why.")
st.dataframe(browse.runs_table(shown), hide_index=True)
st.download_button(
    "Download CSV",
    data=lambda: browse.runs_csv(shown),
    file_name="memplan-runs.csv",
    mime="text/csv",
    help="The runs shown, in the export format: `python -m profiling import` takes it back.",
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
st.dataframe(browse.machines(shown), hide_index=True)
ok_batches = sorted(shown.loc[shown["status"] == browse.OK, "batch_size"].unique().tolist())
if ok_batches:
    batch = st.selectbox("Batch size to compare", ok_batches, key="sweeps_compare_batch")
    peaks = browse.host_peaks(shown, batch)
    shown_workloads = shown.loc[shown["batch_size"] == batch, browse.WORKLOAD].unique()
    side_title = (
        workload_labels.side_title(workload_labels.dims(shown_workloads[0]))
        if len(shown_workloads) == 1
        else charts_sweeps.SIDE_TITLE
    )
    st.altair_chart(charts_sweeps.peaks_by_host(peaks, side_title), width="stretch")
else:
    st.info("No measured (ok) run among those shown to compare machines on.")

st.subheader("Sweeps")
sweeps = data.sweeps(db, version)
if sweeps.empty:
    st.caption(
        "No sweep has run against this database yet (imported runs keep their sweep ids, "
        "but not the sweeps)."
    )
else:
    st.dataframe(browse.sweeps_table(sweeps), hide_index=True)
