"""The Models page's measurement floor: how finely any model can be judged on a profile's runs.

Two figures (`profiling.floor`): how far the kernel's high-water mark lies
above memory_profiler's sampled peak, and how much a repeated point's peak
moves from run to run. A model error below them cannot be told from noise.
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from application import floor
from dashboard.models_data import View, floor_figures
from presentation.text import MISSING_CELL, plain


def render(view: View) -> None:
    st.subheader("Measurement floor")
    gap, spreads = floor_figures(view)
    if gap is None:
        st.caption("No measured run yet.")
        return
    median_col, largest_col, spread_col = st.columns(3)
    median_col.metric(
        "Sampling gap, median",
        f"{gap.median_pct:.2f}%",
        help=f"Over {gap.n_runs} runs: {gap.median_mib:.1f} MiB.",
    )
    largest_col.metric(
        "Sampling gap, largest",
        f"{gap.max_pct:.2f}%",
        help=f"{gap.max_mib:.1f} MiB, at {plain(gap.worst_point)}.",
    )
    st.caption(
        "How far the kernel's high-water mark (VmHWM, what the models predict) lies "
        "above the peak memory_profiler saw sampling every 0.1 s."
    )
    largest = floor.largest_spread_pct(spreads)
    if largest is None:
        spread_col.metric(
            "Run-to-run spread",
            "not measured",
            help="No point was measured more than once; repeat one with --repeats.",
        )
        return
    spread_col.metric(
        "Run-to-run spread",
        f"{largest:.2f}%",
        help="The largest (max - min) / mean of the peak over a repeated point.",
    )
    repeats = pd.DataFrame([asdict(spread) for spread in spreads])
    st.dataframe(
        repeats[["point", "runs", "hwm_spread_pct"]].rename(columns={"hwm_spread_pct": "spread %"}),
        hide_index=True,
        placeholder=MISSING_CELL,
        column_config={"spread %": st.column_config.NumberColumn(format="%.2f")},
    )
    st.caption("A model error below these figures cannot be told from measurement noise.")
