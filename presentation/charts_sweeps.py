"""The Sweeps page's charts: pure functions from `presentation.browse` frames to Altair charts.

Nothing here reads the database or Streamlit, so tests check the Vega-Lite
specs (``chart.to_dict()``). Layers carry a ``name`` saying which series they hold.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from presentation.chart_style import DASH_SAMPLE_SIZE, series

CHART_HEIGHT_PX = 360
TIME_TITLE = "time since the child started (s)"
RSS_TITLE = "resident memory (GiB)"
# Any workload's: 3D images at their cube's side, 2D ones at their square's.
SIDE_TITLE = "image side (of the cube or square with as many voxels or pixels)"
# Two lines: in one, the title is longer than the plot is high, and is cut.
PEAK_TITLE = ["peak memory (GiB),", "kernel high-water mark"]
# Two lines too: in one, a narrow plot (Machines compared at 1024 px) cut it.
COMPARED_TITLE = ["median peak (GiB),", "kernel high-water mark"]
# Machines compared: one row per configuration, its label in full.
CONFIGURATION_ROW_PX = 22
CONFIGURATION_LABEL_PX = 360
# A profile's label is long ("AMD EPYC, AVX2, 2 cores, TensorFlow 2.21"): below the chart, whole.
LONG_LEGEND = alt.Legend(orient="bottom", direction="vertical", labelLimit=0)
# Streamlit fits a chart, its legends below included, to its height: each entry of a
# vertical legend and each legend's title takes about this much of it. At a fixed
# height, 8 machines and their networks left the plot a line, its y axis reading "0".
LEGEND_ENTRY_PX = 20
# Every mark of the timeline in one legend, "drawn": name -> colour and dash (solid: [1, 0]).
# The dashes differ so two rules at the same height (a sampled peak equal to the
# high-water mark) both show.
CURVE = "resident memory (sampled)"
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
DRAWN_COLOURS = {CURVE: "#1f77b4", **MARK_COLOURS}
DRAWN_DASHES = {CURVE: [1, 0], **MARK_DASHES}
# The shaded training steps get a legend of their own (a fill swatch, not a line).
STEP = "training step"
STEP_COLOUR = "#9ecae1"
STEP_OPACITY = 0.35
STEP_SYMBOL_SIZE = 150  # square pixels: a band reads as a swatch, not a dot
# Below the plot, so the timeline keeps the page's width for time; two entries a row, so
# the four lines fit beside the steps' swatch at 1024 px. The entries name themselves.
BELOW = {"orient": "bottom", "direction": "horizontal", "labelLimit": 0, "title": None}
LINE_COLUMNS = 2
# The timeline's one legend (colour and dash on one field): line samples long enough to
# show each rule's dash.
DRAWN_LEGEND = {
    "symbolType": "stroke",
    "symbolStrokeWidth": 2,
    "symbolSize": DASH_SAMPLE_SIZE,
    "columns": LINE_COLUMNS,
    **BELOW,
}
SPREAD = "lowest to highest peak"
SPREAD_COLOUR = "#999999"
# The spread's one-entry legend, above the plot: below it, beside the machines' legend, it
# pushed their long names past the chart's right edge, cut off (seen at 1440 px).
SPREAD_LEGEND = alt.Legend(
    symbolType="stroke",
    symbolStrokeColor=SPREAD_COLOUR,
    orient="top",
    direction="horizontal",
    labelLimit=0,
)


def _drawn_legend(marks: pd.DataFrame) -> tuple[alt.Color, alt.StrokeDash]:
    """Colour and dash on one field, ``drawn``: the curve and each rule, in one legend."""
    # Only what this run has: a run imported without its baseline has no such rule.
    drawn = [CURVE, *(mark for mark in MARK_COLOURS if mark in set(marks["mark"]))]
    colour = alt.Color(
        "drawn:N",
        scale=alt.Scale(domain=drawn, range=[DRAWN_COLOURS[name] for name in drawn]),
        legend=alt.Legend(**DRAWN_LEGEND),
    )
    dash = alt.StrokeDash(
        "drawn:N",
        scale=alt.Scale(domain=drawn, range=[DRAWN_DASHES[name] for name in drawn]),
        legend=alt.Legend(**DRAWN_LEGEND),
    )
    return colour, dash


def _step_bands(steps: pd.DataFrame) -> alt.Chart:
    """The training steps as shaded bands, in a legend of their own (a fill swatch)."""
    return (
        alt.Chart(steps)
        # A white edge keeps adjacent steps apart.
        .mark_rect(opacity=STEP_OPACITY, stroke="white", strokeWidth=2)
        .encode(
            x="start_s:Q",
            x2="end_s:Q",
            fill=alt.Fill(
                "shaded:N",
                scale=alt.Scale(domain=[STEP], range=[STEP_COLOUR]),
                legend=alt.Legend(
                    symbolType="square",
                    symbolOpacity=STEP_OPACITY,
                    symbolSize=STEP_SYMBOL_SIZE,
                    **BELOW,
                ),
            ),
            tooltip=[
                alt.Tooltip("step:O", title="training step"),
                alt.Tooltip("start_s:Q", title="from (s)", format=".2f"),
                alt.Tooltip("end_s:Q", title="to (s)", format=".2f"),
                alt.Tooltip("hwm_gib:Q", title="high-water mark after (GiB)", format=".3f"),
            ],
        )
        .transform_calculate(shaded=series(STEP))
        .properties(name="steps")
    )


def memory_timeline(
    timeline: pd.DataFrame, marks: pd.DataFrame, steps: pd.DataFrame
) -> alt.LayerChart:
    """The mprof-style curve of one run, its peaks as horizontal rules, its steps as bands.

    timeline : ``t_s, rss_gib`` (`presentation.browse.timeline`);
    marks    : ``mark, gib`` (`presentation.browse.peak_marks`);
    steps    : ``step, start_s, end_s, hwm_gib`` (`presentation.browse.step_ends`), may be empty.
    Every mark is in a legend below the plot: the curve and the rules in one
    (colour and dash on one field merge into one legend), the steps in another.
    """
    colour, dash = _drawn_legend(marks)
    curve = (
        alt.Chart(timeline)
        .mark_line(interpolate="step-after")
        .encode(
            x=alt.X("t_s:Q", title=TIME_TITLE),
            y=alt.Y("rss_gib:Q", title=RSS_TITLE, scale=alt.Scale(zero=False)),
            color=colour,
            strokeDash=dash,
            tooltip=[
                alt.Tooltip("t_s:Q", title="time (s)", format=".2f"),
                alt.Tooltip("rss_gib:Q", title="resident (GiB)", format=".3f"),
            ],
        )
        .transform_calculate(drawn=series(CURVE))
        .properties(name="timeline")
    )
    rules = (
        alt.Chart(marks)
        .mark_rule(strokeWidth=2)
        .encode(
            y="gib:Q",
            color=colour,
            strokeDash=dash,
            tooltip=[alt.Tooltip("mark:N"), alt.Tooltip("gib:Q", title="GiB", format=".3f")],
        )
        .transform_calculate(drawn="datum.mark")
        .properties(name="peaks")
    )
    layers = [curve, rules] if steps.empty else [_step_bands(steps), curve, rules]
    return alt.layer(*layers).properties(height=CHART_HEIGHT_PX)


def peaks_by_machine(points: pd.DataFrame, side_title: str = SIDE_TITLE) -> alt.LayerChart:
    """Measured peak against image side, one colour per machine profile: machines side by side.

    points : `presentation.browse.batch_peaks` (``machine, host, network, image, side,
    peak_gib, steps, run``). A line joins each machine's runs of one network (base
    filters or classes, precision; and steps, where they differ).
    side_title : the side axis's title (`SIDE_TITLE` when the workloads' images differ).
    """
    machine = alt.Color("machine:N", title="machine", legend=LONG_LEGEND)
    x = alt.X("side:Q", title=side_title, scale=alt.Scale(zero=False))
    y = alt.Y("peak_gib:Q", title=PEAK_TITLE, scale=alt.Scale(zero=False))
    lines = (
        alt.Chart(points)
        .mark_line(opacity=0.5)
        .encode(
            x=x,
            y=alt.Y("median(peak_gib):Q", title=PEAK_TITLE),
            color=machine,
            detail="network:N",
        )
        .properties(name="median_by_machine")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, size=60)
        .encode(
            x=x,
            y=y,
            color=machine,
            shape=alt.Shape("network:N", title="network"),
            tooltip=[
                "machine:N",
                "host:N",
                "network:N",
                "image:N",
                alt.Tooltip("steps:Q", title="training steps"),
                "run:N",
                alt.Tooltip("peak_gib:Q", title="peak (GiB)", format=".3f"),
            ],
        )
        .properties(name="measured")
    )
    # Room for both legends below (machines, networks) besides the plot's own height.
    entries = points["machine"].nunique() + points["network"].nunique() + 2
    return alt.layer(lines, dots).properties(height=CHART_HEIGHT_PX + LEGEND_ENTRY_PX * entries)


def machines_compared(frame: pd.DataFrame) -> alt.LayerChart:
    """Each configuration measured on several machine profiles: their median peaks, side by side.

    frame : `presentation.machines.compared` (``configuration, machine, peak_gib,
    ratio, runs, ...``). One row per configuration (in the frame's order), one dot
    per profile, coloured by profile and named by its label in the legend; a rule
    joins each configuration's lowest and highest peak, so the gap between the
    machines reads at a glance. The chart grows with the configurations.
    """
    order = list(dict.fromkeys(frame["configuration"]))
    machines = list(dict.fromkeys(frame["machine"]))  # the reference first
    y = alt.Y(
        "configuration:N",
        title=None,
        sort=order,
        axis=alt.Axis(labelLimit=CONFIGURATION_LABEL_PX),
    )
    spread = (
        alt.Chart(frame)
        .mark_rule(color=SPREAD_COLOUR, strokeWidth=2)
        .encode(
            y=y,
            x=alt.X("min(peak_gib):Q", title=COMPARED_TITLE),
            x2="max(peak_gib):Q",
            # A one-entry legend, so the grey rule is named like the dots.
            strokeDash=alt.StrokeDash(
                "joined:N",
                title=None,
                scale=alt.Scale(domain=[SPREAD], range=[[1, 0]]),
                legend=SPREAD_LEGEND,
            ),
        )
        .transform_calculate(joined=series(SPREAD))
        .properties(name="spread")
    )
    peaks = (
        alt.Chart(frame)
        .mark_point(filled=True, size=90, opacity=0.9)
        .encode(
            y=y,
            x=alt.X("peak_gib:Q", title=COMPARED_TITLE),
            # A shape as well as a colour: the theme's first two colours are both blue.
            color=alt.Color("machine:N", title="machine", sort=machines, legend=LONG_LEGEND),
            shape=alt.Shape("machine:N", title="machine", sort=machines, legend=LONG_LEGEND),
            tooltip=[
                alt.Tooltip("configuration:N"),
                alt.Tooltip("machine:N"),
                alt.Tooltip("machine_profile:N", title="profile"),
                alt.Tooltip("runs:Q", title="runs"),
                alt.Tooltip("peak_gib:Q", title="median peak (GiB)", format=".3f"),
                alt.Tooltip("ratio:Q", title="x reference", format=".2f"),
            ],
        )
        .properties(name="peaks")
    )
    return alt.layer(spread, peaks).properties(height=alt.Step(CONFIGURATION_ROW_PX))


def frameworks_by_batch(points: pd.DataFrame) -> alt.LayerChart:
    """Peak against batch size, one line per framework: seed 004's figure on today's stacks.

    points : `presentation.frameworks_compared.by_batch` at one image (``framework,
    batch_size, peak_gib, network, machine, runs, ...``). Each framework is a colour and a
    shape; a line joins its batches of one network on one machine.
    """
    shown = list(dict.fromkeys(points["framework"]))
    framework = alt.Color("framework:N", title="framework", sort=shown, legend=LONG_LEGEND)
    x = alt.X("batch_size:Q", title="batch size", scale=alt.Scale(zero=False))
    y = alt.Y("peak_gib:Q", title=COMPARED_TITLE, scale=alt.Scale(zero=False))
    lines = (
        alt.Chart(points)
        .mark_line()
        .encode(x=x, y=y, color=framework, detail=["machine:N", "network:N"])
        .properties(name="lines")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, size=70)
        .encode(
            x=x,
            y=y,
            color=framework,
            shape=alt.Shape("framework:N", title="framework", sort=shown, legend=LONG_LEGEND),
            tooltip=[
                "framework:N",
                "machine:N",
                "network:N",
                "image:N",
                alt.Tooltip("batch_size:Q", title="batch"),
                alt.Tooltip("runs:Q", title="runs"),
                alt.Tooltip("peak_gib:Q", title="median peak (GiB)", format=".3f"),
            ],
        )
        .properties(name="peaks")
    )
    return alt.layer(lines, dots).properties(height=CHART_HEIGHT_PX)
