"""The encodings every chart shares: sizes, colours, legends, labels, series names, log filters.

The charts are grouped by what they show: `presentation.charts_models` (the
Models page), `charts_sizing` (the Sizing page's bounds and terms),
`charts_study` (the published study beside our runs and models),
`charts_published` (one answer beside its runs and the study, the report's) and
`charts_sweeps` (the Sweeps page). The pieces here keep their legends, labels,
colours and the study's log-log plane alike. Nothing here reads the database or
Streamlit.
"""

from __future__ import annotations

import altair as alt

CHART_HEIGHT_PX = 420
MODEL_LEGEND = "model"
# Model titles run to ~35 characters; Vega-Lite cuts labels at 160 px by default.
LABEL_LIMIT_PX = 280
# Ten distinct hues (the theme's default palette has several blues).
MODEL_COLOURS = "tableau10"
# A legend inside the plot gets a light background, so it reads over the marks.
LEGEND_FILL = "rgba(255, 255, 255, 0.8)"
LEGEND_PADDING_PX = 4
# Labels sit just above their rule, or left of their point, in the chart's own font size.
LABEL_OFFSET_PX = 6
LABEL_FONT_PX = 11
SCALE_PADDING_PX = 16
# A legend's line sample: Vega's default (~10 px) is shorter than two periods of most dashes,
# so a dashed line and a solid one look alike there (tests/e2e/drawn_defects.py found it in
# the timeline's, the bounds' and the study's legends). A stroke symbol of size s is a
# sqrt(s) px line: 24 px shows two periods of any dash up to 12 px.
DASH_SAMPLE_SIZE = 24**2
# Reference lines (identity, zero error, what training may use of a budget) are dashed.
REFERENCE_DASH = [4, 4]
# The plane the published study is drawn on (`charts_study`, `charts_published`).
SAMPLE_LOG_TITLE = "image x batch (million voxels, log scale)"
MEMORY_LOG_TITLE = "peak memory or server RAM (GiB, log scale)"
PUBLISHED_COLOUR = "black"


def series(name: str) -> str:
    """A Vega expression naming one series, for a layer whose rows are all of it."""
    return "'" + name.replace("'", "\\'") + "'"


def positive(chart: alt.Chart, *columns: str, log: bool) -> alt.Chart:
    """On log axes, drop the rows a log scale cannot place (a model may predict <= 0)."""
    for column in columns if log else ():
        chart = chart.transform_filter(f"datum['{column}'] > 0")
    return chart


def model_colour(legend: bool = True) -> alt.Color:
    """One colour per model (its title), the legend below the plot so two plots fit abreast.

    legend : False for a chart drawn beside another that carries the same legend.
    """
    return alt.Color(
        "title:N",
        title=MODEL_LEGEND,
        scale=alt.Scale(scheme=MODEL_COLOURS),
        legend=(
            alt.Legend(orient="bottom", direction="vertical", labelLimit=LABEL_LIMIT_PX)
            if legend
            else None
        ),
    )
