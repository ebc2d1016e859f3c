"""The Sweeps page's charts: pure functions from `presentation.browse` frames to Altair charts.

Nothing here reads the database or Streamlit, so tests check the Vega-Lite
specs (``chart.to_dict()``). Layers carry a ``name`` saying which series they hold.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

CHART_HEIGHT_PX = 360
TIME_TITLE = "time since the child started (s)"
RSS_TITLE = "resident memory (GiB)"
# Any workload's: 3D images at their cube's side, 2D ones at their square's.
SIDE_TITLE = "image side (of the cube or square with as many voxels or pixels)"
PEAK_TITLE = "peak memory, kernel high-water mark (GiB)"
# One colour and dash per mark, the same on every run's chart; the dashes differ so
# two marks at the same height (a sampled peak equal to the high-water mark) both show.
MARK_COLOURS = {
    "sampled peak": "#d62728",
    "kernel high-water mark": "#9467bd",
    "after framework import": "#7f7f7f",
}
MARK_DASHES = {
    "sampled peak": [2, 2],
    "kernel high-water mark": [8, 4],
    "after framework import": [4, 4],
}


def memory_timeline(
    timeline: pd.DataFrame, marks: pd.DataFrame, steps: pd.DataFrame
) -> alt.LayerChart:
    """The mprof-style curve of one run, its peaks as horizontal rules, its steps as bands.

    timeline : ``t_s, rss_gib`` (`presentation.browse.timeline`);
    marks    : ``mark, gib`` (`presentation.browse.peak_marks`);
    steps    : ``step, start_s, end_s, hwm_gib`` (`presentation.browse.step_ends`), may be empty.
    """
    curve = (
        alt.Chart(timeline)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("t_s:Q", title=TIME_TITLE),
            y=alt.Y("rss_gib:Q", title=RSS_TITLE, scale=alt.Scale(zero=False)),
            tooltip=[
                alt.Tooltip("t_s:Q", title="time (s)", format=".2f"),
                alt.Tooltip("rss_gib:Q", title="resident (GiB)", format=".3f"),
            ],
        )
        .properties(name="timeline")
    )
    colour = alt.Color(
        "mark:N",
        title="marked",
        scale=alt.Scale(domain=list(MARK_COLOURS), range=list(MARK_COLOURS.values())),
    )
    rules = (
        alt.Chart(marks)
        .mark_rule(strokeWidth=2)
        .encode(
            y="gib:Q",
            color=colour,
            strokeDash=alt.StrokeDash(
                "mark:N",
                legend=None,
                scale=alt.Scale(domain=list(MARK_DASHES), range=list(MARK_DASHES.values())),
            ),
            tooltip=[alt.Tooltip("mark:N"), alt.Tooltip("gib:Q", title="GiB", format=".3f")],
        )
        .properties(name="peaks")
    )
    layers = [curve, rules]
    if not steps.empty:
        layers.insert(
            0,
            alt.Chart(steps)
            # A white edge keeps adjacent steps apart.
            .mark_rect(opacity=0.12, color="#1f77b4", stroke="white", strokeWidth=2)
            .encode(
                x="start_s:Q",
                x2="end_s:Q",
                tooltip=[
                    alt.Tooltip("step:O", title="training step"),
                    alt.Tooltip("start_s:Q", title="from (s)", format=".2f"),
                    alt.Tooltip("end_s:Q", title="to (s)", format=".2f"),
                    alt.Tooltip("hwm_gib:Q", title="high-water mark after (GiB)", format=".3f"),
                ],
            )
            .properties(name="steps"),
        )
    return alt.layer(*layers).properties(height=CHART_HEIGHT_PX)


def peaks_by_host(points: pd.DataFrame, side_title: str = SIDE_TITLE) -> alt.LayerChart:
    """Measured peak against image side, one colour per host: machines side by side.

    points : `presentation.browse.host_peaks` (``host, network, image, side, peak_gib, run``).
    A line joins each host's runs of one network (base filters or classes, precision).
    side_title : the side axis's title (`SIDE_TITLE` when the workloads' images differ).
    """
    host = alt.Color("host:N", title="host")
    x = alt.X("side:Q", title=side_title, scale=alt.Scale(zero=False))
    y = alt.Y("peak_gib:Q", title=PEAK_TITLE, scale=alt.Scale(zero=False))
    lines = (
        alt.Chart(points)
        .mark_line(opacity=0.5)
        .encode(
            x=x, y=alt.Y("median(peak_gib):Q", title=PEAK_TITLE), color=host, detail="network:N"
        )
        .properties(name="median_by_host")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=y,
            color=host,
            shape=alt.Shape("network:N", title="network"),
            tooltip=[
                "host:N",
                "network:N",
                "image:N",
                "run:N",
                alt.Tooltip("peak_gib:Q", title="peak (GiB)", format=".3f"),
            ],
        )
        .properties(name="measured")
    )
    return alt.layer(lines, dots).properties(height=CHART_HEIGHT_PX)
