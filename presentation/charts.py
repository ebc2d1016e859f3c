"""The dashboard's Models and Sizing charts: pure functions from frames to Altair charts.

Each builder takes frames from `presentation.curves` (memory in GiB) and returns
a chart; nothing here reads the database or Streamlit, so tests check the
Vega-Lite specs (``chart.to_dict()``) directly. Layers carry a ``name``
(``measured``, ``predicted``, ...) so a spec says which series it holds.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from presentation.workload_labels import side_title

CHART_HEIGHT_PX = 420
BATCH_LEGEND = "batch size"
MODEL_LEGEND = "model"
SIDE_TITLE = side_title(3)  # "image side (voxels; cube root of D x H x W)"
PEAK_TITLE = "peak memory (GiB)"
MEASURED_TITLE = "measured peak (GiB)"
PREDICTED_TITLE = "predicted peak (GiB)"
ERROR_TITLE = "error (%): (predicted - measured) / measured"
# Model titles run to ~35 characters; Vega-Lite cuts labels at 160 px by default.
LABEL_LIMIT_PX = 280
# Ten distinct hues (the theme's default palette has several blues).
MODEL_COLOURS = "tableau10"
# Dash patterns far enough apart to tell the models' curves apart (solid first).
DASHES = [[1, 0], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 6], [16, 6]]
# What a residual plot can be drawn against: column -> axis title.
RESIDUAL_AXES: dict[str, str] = {"side": SIDE_TITLE, "measured_gib": MEASURED_TITLE}


def _scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log") if log else alt.Scale(zero=False)


def _positive(chart: alt.Chart, *columns: str, log: bool) -> alt.Chart:
    """On log axes, drop the rows a log scale cannot place (a model may predict <= 0)."""
    for column in columns if log else ():
        chart = chart.transform_filter(f"datum['{column}'] > 0")
    return chart


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
        _positive(alt.Chart(curves), "predicted_gib", log=log)
        .mark_line()
        .encode(
            x=alt.X("side:Q", title=side_title(dims), scale=_scale(log)),
            y=alt.Y("predicted_gib:Q", title=PEAK_TITLE, scale=_scale(log)),
            color=batch,
            strokeDash=alt.StrokeDash(
                "title:N",
                title=MODEL_LEGEND,
                scale=alt.Scale(range=DASHES),
                legend=alt.Legend(labelLimit=LABEL_LIMIT_PX, symbolStrokeWidth=2),
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
        _positive(alt.Chart(points), "peak_gib", log=log)
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
        .mark_line(color="gray", strokeDash=[4, 4])
        .encode(x=alt.X("gib:Q", scale=scale), y=alt.Y("gib:Q", scale=scale))
        .properties(name="identity")
    )
    dots = (
        _positive(alt.Chart(points), "predicted_gib", "measured_gib", log=log)
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X("measured_gib:Q", title=MEASURED_TITLE, scale=scale),
            y=alt.Y("predicted_gib:Q", title=PREDICTED_TITLE, scale=scale),
            color=_model_colour(),
            tooltip=_point_tooltip(points),
        )
        .properties(name="held_out")
    )
    return alt.layer(diagonal, dots).properties(height=CHART_HEIGHT_PX)


def residuals(
    points: pd.DataFrame, against: str = "side", side_title: str = SIDE_TITLE
) -> alt.LayerChart:
    """Percentage error of each held-out prediction against image side or measured peak.

    side_title : the side axis's title (`presentation.workload_labels.side_title`).
    """
    if against not in RESIDUAL_AXES:
        raise ValueError(f"residuals are drawn against {', '.join(RESIDUAL_AXES)}, got {against!r}")
    titles = RESIDUAL_AXES | {"side": side_title}
    zero = (
        alt.Chart(pd.DataFrame({"zero": [0.0]}))
        .mark_rule(color="gray")
        .encode(y="zero:Q")
        .properties(name="zero")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X(f"{against}:Q", title=titles[against], scale=alt.Scale(zero=False)),
            y=alt.Y("error_pct:Q", title=ERROR_TITLE),
            color=_model_colour(),
            tooltip=_point_tooltip(points),
        )
        .properties(name="residuals")
    )
    return alt.layer(zero, dots).properties(height=CHART_HEIGHT_PX)


def _model_colour() -> alt.Color:
    """One colour per model, the legend below the plot so two plots fit side by side."""
    return alt.Color(
        "title:N",
        title=MODEL_LEGEND,
        scale=alt.Scale(scheme=MODEL_COLOURS),
        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=LABEL_LIMIT_PX),
    )


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


def breakdown(terms: pd.DataFrame) -> alt.Chart:
    """The refined analytical model's terms as bars (`presentation.curves.breakdown_frame`)."""
    return (
        alt.Chart(terms)
        .mark_bar()
        .encode(
            x=alt.X("gib:Q", title="GiB"),
            y=alt.Y("term:N", title=None, sort=None),
            color=alt.Color("term:N", legend=None, sort=None),
            tooltip=[
                alt.Tooltip("term:N"),
                alt.Tooltip("gib:Q", title="GiB", format=".3f"),
                alt.Tooltip("share_pct:Q", title="share (%)", format=".1f"),
            ],
        )
        .properties(name="breakdown")
    )


def bounds(models: pd.DataFrame, budget_gib: float, usable_gib: float) -> alt.LayerChart:
    """Each model's point prediction (dot) and upper bound (bar end) against the budget.

    models : one row per model with ``title, predicted_gib, upper_gib``; the
    solid rule is the budget, the dashed one what training may use of it.
    """
    y = alt.Y("title:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT_PX))
    span = (
        alt.Chart(models)
        .mark_rule(strokeWidth=3, opacity=0.6)
        .encode(
            x=alt.X("predicted_gib:Q", title="GiB"),
            x2="upper_gib:Q",
            y=y,
        )
        .properties(name="bound")
    )
    dots = (
        alt.Chart(models)
        .mark_point(filled=True, size=80)
        .encode(
            x="predicted_gib:Q",
            y=y,
            tooltip=[
                alt.Tooltip("title:N", title="model"),
                alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".2f"),
                alt.Tooltip("upper_gib:Q", title="upper bound (GiB)", format=".2f"),
            ],
        )
        .properties(name="predicted")
    )
    limits = pd.DataFrame(
        {"gib": [budget_gib, usable_gib], "limit": ["budget", "budget less headroom"]}
    )
    rules = (
        alt.Chart(limits)
        .mark_rule(color="firebrick")
        .encode(
            x="gib:Q",
            strokeDash=alt.StrokeDash("limit:N", title=None, sort=["budget"]),
            tooltip=[alt.Tooltip("limit:N"), alt.Tooltip("gib:Q", title="GiB", format=".1f")],
        )
        .properties(name="budget")
    )
    return alt.layer(span, dots, rules)
