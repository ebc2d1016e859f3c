"""The Models page's charts: each model's curve over the measured peaks, and its held-out errors.

`peak_vs_size` draws the measured peaks over each model's predicted curve (frames
from `presentation.curves`, memory in GiB); `parity` and `residuals` the held-out
predictions against what was measured. Nothing here reads the database or
Streamlit, so tests check the Vega-Lite specs (``chart.to_dict()``) directly.
Layers carry a ``name`` (``measured``, ``predicted``, ...) so a spec says which
series it holds. The Sizing page's charts are `presentation.charts_sizing`'s,
the published study's `presentation.charts_study`'s, the encodings they share
`presentation.chart_style`'s.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from presentation.chart_style import (
    CHART_HEIGHT_PX,
    LABEL_LIMIT_PX,
    LEGEND_FILL,
    LEGEND_PADDING_PX,
    MODEL_LEGEND,
    REFERENCE_DASH,
    model_colour,
    positive,
    series,
)
from presentation.workload_labels import side_title

BATCH_LEGEND = "batch size"
SIDE_TITLE = side_title(3)  # "image side (voxels; cube root of D x H x W)"
PEAK_TITLE = "peak memory (GiB)"
MEASURED_TITLE = "measured peak (GiB)"
PREDICTED_TITLE = "predicted peak (GiB)"
# Two lines: in one, the title is longer than a half-width plot is high, and is cut.
ERROR_TITLE = ["error (%):", "(predicted - measured) / measured"]
# Dash patterns far enough apart to tell the models' curves apart (solid first).
DASHES = [[1, 0], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 6], [16, 6]]
# The legend's line samples: Vega's default, ~10 px of line, is shorter than one period
# of most dashes, so six models read as six solid lines (issue 42, point 8). A stroke
# symbol of this size is a sqrt(size) = 44 px line: two periods of the longest dash.
DASH_SYMBOL_SIZE = 44**2
# What a residual plot can be drawn against: column -> axis title.
RESIDUAL_AXES: dict[str, str] = {"side": SIDE_TITLE, "measured_gib": MEASURED_TITLE}
# Reference lines (identity, zero error) are named in a legend of their own, in grey.
REFERENCE_COLOUR = "gray"
IDENTITY = "predicted = measured"
NO_ERROR = "no error"


def _scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log") if log else alt.Scale(zero=False)


def _reference_line(name: str, corner: str = "top-left") -> alt.StrokeDash:
    """A one-entry dash legend naming a grey reference line (the identity, zero error)."""
    return alt.StrokeDash(
        "reference:N",
        title=None,
        scale=alt.Scale(domain=[name], range=[REFERENCE_DASH]),
        # Inside the plot's corner: below it, beside the models' legend, it would push
        # that legend past a half-width chart's edge.
        legend=alt.Legend(
            orient=corner,
            symbolType="stroke",
            symbolStrokeColor=REFERENCE_COLOUR,
            fillColor=LEGEND_FILL,
            padding=LEGEND_PADDING_PX,
        ),
    )


def _two_lines(title: str) -> str | list[str]:
    """``image side (voxels; ...)`` as two lines, its words and its parenthesis.

    A half-width chart at 1024 px cuts a longer title; one without a parenthesis stays whole.
    """
    words, bracket, rest = title.partition(" (")
    return [words, f"({rest}"] if bracket else title


def peak_vs_size(
    points: pd.DataFrame, curves: pd.DataFrame, log: bool = False, dims: int = 3
) -> alt.LayerChart:
    """Measured peaks (dots) over each model's predicted curve, one colour per batch size.

    points : `presentation.curves.measured_points` (``side, batch_size, image, peak_gib``);
    curves : `presentation.curves.predicted_curves`; dims : the images' dimensions
    (3: cubes of voxels, 2: squares of pixels), for the axis title. Models are told
    apart by the line's dash; clicking a model in the legend highlights its curves.
    """
    batch = alt.Color("batch_size:O", title=BATCH_LEGEND, scale=alt.Scale(scheme="viridis"))
    pick_model = alt.selection_point(fields=["title"], bind="legend", name="pick_model")
    predicted = (
        positive(alt.Chart(curves), "predicted_gib", log=log)
        .mark_line()
        .encode(
            x=alt.X("side:Q", title=side_title(dims), scale=_scale(log)),
            y=alt.Y("predicted_gib:Q", title=PEAK_TITLE, scale=_scale(log)),
            color=batch,
            strokeDash=alt.StrokeDash(
                "title:N",
                title=MODEL_LEGEND,
                scale=alt.Scale(range=DASHES),
                legend=alt.Legend(
                    labelLimit=LABEL_LIMIT_PX,
                    symbolStrokeWidth=2,
                    symbolType="stroke",
                    symbolSize=DASH_SYMBOL_SIZE,
                ),
            ),
            detail="model:N",
            opacity=alt.condition(pick_model, alt.value(0.9), alt.value(0.15)),
            tooltip=[
                alt.Tooltip("title:N", title="model"),
                alt.Tooltip("side:Q", title="side"),
                alt.Tooltip("batch_size:O", title="batch"),
                alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".2f"),
            ],
        )
        .add_params(pick_model)
        .properties(name="predicted")
    )
    measured = (
        positive(alt.Chart(points), "peak_gib", log=log)
        .mark_point(filled=True, size=70, stroke="black", strokeWidth=0.5, opacity=1)
        .encode(
            x=alt.X("side:Q"),
            y=alt.Y("peak_gib:Q"),
            color=batch,
            shape=alt.Shape("kind:N", title="", legend=alt.Legend(orient="top-left")),
            tooltip=[
                alt.Tooltip("image:N", title="image"),
                alt.Tooltip("batch_size:O", title="batch"),
                alt.Tooltip("peak_gib:Q", title="measured (GiB)", format=".2f"),
            ],
        )
        .transform_calculate(kind="'measured'")
        .properties(name="measured")
    )
    return alt.layer(predicted, measured).properties(height=CHART_HEIGHT_PX)


def parity(points: pd.DataFrame, log: bool = False) -> alt.LayerChart:
    """Predicted against measured for held-out points, one colour per model, with y = x.

    points : `presentation.curves.held_out_points` or `predictions_at_points`.
    """
    scale = _scale(log)
    values = pd.concat([points["measured_gib"], points["predicted_gib"]])
    values = values[values > 0] if log else values
    low, high = (float(values.min()), float(values.max())) if len(values) else (0.0, 1.0)
    diagonal = (
        alt.Chart(pd.DataFrame({"gib": [low, high]}))
        .mark_line(color=REFERENCE_COLOUR)
        .encode(
            x=alt.X("gib:Q", scale=scale),
            y=alt.Y("gib:Q", scale=scale),
            strokeDash=_reference_line(IDENTITY),
        )
        .transform_calculate(reference=series(IDENTITY))
        .properties(name="identity")
    )
    dots = (
        positive(alt.Chart(points), "predicted_gib", "measured_gib", log=log)
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X("measured_gib:Q", title=MEASURED_TITLE, scale=scale),
            y=alt.Y("predicted_gib:Q", title=PREDICTED_TITLE, scale=scale),
            color=model_colour(),
            tooltip=_point_tooltip(points),
        )
        .properties(name="held_out")
    )
    return alt.layer(diagonal, dots).properties(height=CHART_HEIGHT_PX)


def residuals(
    points: pd.DataFrame, against: str = "side", side_title: str = SIDE_TITLE
) -> alt.LayerChart:
    """Percentage error of each held-out prediction against image side or measured peak,
    coloured by model; the models' legend is the parity chart's, drawn beside it.

    side_title : the side axis's title (`presentation.workload_labels.side_title`).
    """
    if against not in RESIDUAL_AXES:
        raise ValueError(f"residuals are drawn against {', '.join(RESIDUAL_AXES)}, got {against!r}")
    titles = RESIDUAL_AXES | {"side": side_title}
    zero = (
        alt.Chart(pd.DataFrame({"zero": [0.0]}))
        .mark_rule(color=REFERENCE_COLOUR)
        # Bottom right: the errors cluster near zero, the largest ones at small sides.
        .encode(y="zero:Q", strokeDash=_reference_line(NO_ERROR, "bottom-right"))
        .transform_calculate(reference=series(NO_ERROR))
        .properties(name="zero")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X(f"{against}:Q", title=_two_lines(titles[against]), scale=alt.Scale(zero=False)),
            y=alt.Y("error_pct:Q", title=ERROR_TITLE),
            # The parity chart beside it names the models: a second copy of that legend,
            # under a half-width chart whose axis titles take more room, ran past the
            # page's edge at 1024 px ("refined analytical (closed fo").
            color=model_colour(legend=False),
            tooltip=_point_tooltip(points),
        )
        .properties(name="residuals")
    )
    return alt.layer(zero, dots).properties(height=CHART_HEIGHT_PX)


def _point_tooltip(points: pd.DataFrame) -> list[alt.Tooltip]:
    tooltip = [
        alt.Tooltip("title:N", title="model"),
        alt.Tooltip("image:N", title="image"),
        alt.Tooltip("batch_size:O", title="batch"),
        alt.Tooltip("measured_gib:Q", title="measured (GiB)", format=".2f"),
        alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".2f"),
        alt.Tooltip("error_pct:Q", title="error (%)", format="+.1f"),
    ]
    if "seed" in points:
        tooltip.append(alt.Tooltip("seed:O", title="split seed"))
    return tooltip
