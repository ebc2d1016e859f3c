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
# Two lines: in one, the title is longer than a half-width plot is high, and is cut.
ERROR_TITLE = ["error (%):", "(predicted - measured) / measured"]
# Model titles run to ~35 characters; Vega-Lite cuts labels at 160 px by default.
LABEL_LIMIT_PX = 280
# Ten distinct hues (the theme's default palette has several blues).
MODEL_COLOURS = "tableau10"
# Dash patterns far enough apart to tell the models' curves apart (solid first).
DASHES = [[1, 0], [8, 4], [2, 3], [12, 3, 2, 3], [4, 4], [1, 6], [16, 6]]
# What a residual plot can be drawn against: column -> axis title.
RESIDUAL_AXES: dict[str, str] = {"side": SIDE_TITLE, "measured_gib": MEASURED_TITLE}
# Reference lines (identity, zero error) are named in a legend of their own, in grey.
REFERENCE_COLOUR = "gray"
REFERENCE_DASH = [4, 4]
IDENTITY = "predicted = measured"
LEGEND_FILL = "rgba(255, 255, 255, 0.8)"
LEGEND_PADDING_PX = 4
NO_ERROR = "no error"
# The bounds chart: its marks' legend entries, and when its GiB axis goes logarithmic.
PREDICTED = "predicted peak"
UPPER = "predicted to upper bound"
BUDGET = "budget"
USABLE = "budget less headroom"
BOUND_COLOUR = "#4c78a8"
BUDGET_COLOUR = "firebrick"
# Past this ratio of the largest upper bound to the smallest, a linear axis squeezes the
# small models into its first pixels: the axis goes logarithmic.
LOG_SCALE_RATIO = 10.0
GIB_TITLE = "GiB"
GIB_LOG_TITLE = "GiB (log scale)"


def _scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log") if log else alt.Scale(zero=False)


def _series(name: str) -> str:
    """A Vega expression naming one series, for a layer whose rows are all of it."""
    return "'" + name.replace("'", "\\'") + "'"


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
        .mark_line(color=REFERENCE_COLOUR)
        .encode(
            x=alt.X("gib:Q", scale=scale),
            y=alt.Y("gib:Q", scale=scale),
            strokeDash=_reference_line(IDENTITY),
        )
        .transform_calculate(reference=_series(IDENTITY))
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
        .mark_rule(color=REFERENCE_COLOUR)
        # Bottom right: the errors cluster near zero, the largest ones at small sides.
        .encode(y="zero:Q", strokeDash=_reference_line(NO_ERROR, "bottom-right"))
        .transform_calculate(reference=_series(NO_ERROR))
        .properties(name="zero")
    )
    dots = (
        alt.Chart(points)
        .mark_point(filled=True, opacity=0.7)
        .encode(
            x=alt.X(f"{against}:Q", title=_two_lines(titles[against]), scale=alt.Scale(zero=False)),
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


def bounds_scale_is_log(models: pd.DataFrame) -> bool:
    """Whether the largest upper bound is more than `LOG_SCALE_RATIO` times the smallest one."""
    upper = models["upper_gib"].astype(float)
    upper = upper[upper > 0]
    return bool(len(upper)) and float(upper.max()) > LOG_SCALE_RATIO * float(upper.min())


def bounds(models: pd.DataFrame, budget_gib: float, usable_gib: float) -> alt.LayerChart:
    """Each model's point prediction (dot) and upper bound (bar end) against the budget.

    models : one row per model with ``title, predicted_gib, upper_gib``; the
    solid red rule is the budget, the dashed one what training may use of it.
    The GiB axis is logarithmic when one model's upper bound dwarfs another's
    (`bounds_scale_is_log`; its title then says so), linear from zero otherwise.
    Every mark has a legend entry: the dots in one legend, the bound and the two
    rules in another (colour and dash on one field merge into one legend).
    """
    log = bounds_scale_is_log(models)
    gib = alt.Scale(type="log") if log else alt.Scale(zero=True)
    x_title = GIB_LOG_TITLE if log else GIB_TITLE
    y = alt.Y("title:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT_PX))
    lines = [UPPER, BUDGET, USABLE]
    line_legend = alt.Legend(orient="bottom", direction="vertical", symbolType="stroke")
    colour = alt.Color(
        "line:N",
        title=None,
        scale=alt.Scale(domain=lines, range=[BOUND_COLOUR, BUDGET_COLOUR, BUDGET_COLOUR]),
        legend=line_legend,
    )
    dash = alt.StrokeDash(
        "line:N",
        title=None,
        scale=alt.Scale(domain=lines, range=[[1, 0], [1, 0], REFERENCE_DASH]),
        legend=line_legend,
    )
    tooltip = [
        alt.Tooltip("title:N", title="model"),
        alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".2f"),
        alt.Tooltip("upper_gib:Q", title="upper bound (GiB)", format=".2f"),
    ]
    span = (
        _positive(alt.Chart(models), "predicted_gib", "upper_gib", log=log)
        .mark_rule(strokeWidth=3, opacity=0.6)
        .encode(
            x=alt.X("predicted_gib:Q", title=x_title, scale=gib),
            x2="upper_gib:Q",
            y=y,
            color=colour,
            strokeDash=dash,
            tooltip=tooltip,
        )
        .transform_calculate(line=_series(UPPER))
        .properties(name="bound")
    )
    dots = (
        _positive(alt.Chart(models), "predicted_gib", log=log)
        .mark_point(filled=True, size=80, color=BOUND_COLOUR, opacity=1)
        .encode(
            x=alt.X("predicted_gib:Q", title=x_title, scale=gib),
            y=y,
            shape=alt.Shape(
                "point:N",
                title=None,
                scale=alt.Scale(domain=[PREDICTED], range=["circle"]),
                legend=alt.Legend(orient="bottom", symbolFillColor=BOUND_COLOUR),
            ),
            tooltip=tooltip,
        )
        .transform_calculate(point=_series(PREDICTED))
        .properties(name="predicted")
    )
    # "line": the legend's field, shared with the bound's layer.
    limits = pd.DataFrame(
        {"gib": [budget_gib, usable_gib], "limit": [BUDGET, USABLE], "line": [BUDGET, USABLE]}
    )
    rules = (
        alt.Chart(limits)
        .mark_rule()
        .encode(
            x=alt.X("gib:Q", title=x_title, scale=gib),
            color=colour,
            strokeDash=dash,
            tooltip=[alt.Tooltip("limit:N"), alt.Tooltip("gib:Q", title="GiB", format=".1f")],
        )
        .properties(name="budget")
    )
    return alt.layer(span, dots, rules)


# The published-points chart (the U-Net study, `core.published`): both axes logarithmic,
# our runs reach about 1 GiB, the study's servers 1.5 TB.
SAMPLE_TITLE = "image x batch (million voxels, log scale)"
MEMORY_LOG_TITLE = "peak memory or server RAM (GiB, log scale)"
OUR_RUNS = "our runs (measured)"
OUR_PREDICTION = "our model at the study's configuration"
PUBLISHED_PEAK = "published peak"
SERIES_SHAPES = {OUR_RUNS: "circle", OUR_PREDICTION: "diamond", PUBLISHED_PEAK: "triangle-up"}
SERVER_OUTCOMES = {"out of memory": [6, 3], "ran": [1, 0]}
SERVER_LEGEND = "published server sizes"
OUR_RUNS_COLOUR = "#888888"
PUBLISHED_COLOUR = "black"
# Labels sit just above their rule, or left of their point, in the chart's own font size.
LABEL_OFFSET_PX = 6
LABEL_FONT_PX = 11
SCALE_PADDING_PX = 16


def published_points(
    measured: pd.DataFrame, predictions: pd.DataFrame, published: pd.DataFrame
) -> alt.LayerChart:
    """Our runs and our models' predictions beside the study's published figures.

    measured : `presentation.curves.with_sample_megavoxels` of the measured points
    (``sample_megavoxels, peak_gib, image, batch_size``); predictions :
    `presentation.curves.study_predictions`; published :
    `presentation.curves.published_frame`. The published peak is a labelled
    point at its configuration, each server size a labelled horizontal rule
    (dashed: out of memory; solid: ran). Every mark has a legend entry: dots by
    what they are (shape), our predictions by model (colour), rules by outcome (dash).
    """
    x_values = pd.concat([measured["sample_megavoxels"], published["sample_megavoxels"]])
    x_values = x_values[x_values > 0]
    left = float(x_values.min()) if len(x_values) else 1.0
    # Not rounded out to whole decades: that would leave a decade empty at each end and
    # squeeze the server rules (192 and 384 GiB, a factor of two apart) into one line.
    log = alt.Scale(type="log", nice=False, padding=SCALE_PADDING_PX)
    x = alt.X("sample_megavoxels:Q", title=SAMPLE_TITLE, scale=log)
    y = alt.Y("gib:Q", title=MEMORY_LOG_TITLE, scale=log)
    shape = alt.Shape(
        "series:N",
        title=None,
        scale=alt.Scale(domain=list(SERIES_SHAPES), range=list(SERIES_SHAPES.values())),
        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0),
    )
    ours = (
        _positive(alt.Chart(measured), "peak_gib", log=True)
        .mark_point(filled=True, size=50, color=OUR_RUNS_COLOUR, opacity=0.8)
        .encode(
            x=x,
            y=alt.Y("peak_gib:Q", title=MEMORY_LOG_TITLE, scale=log),
            shape=shape,
            tooltip=[
                alt.Tooltip("image:N", title="image"),
                alt.Tooltip("batch_size:O", title="batch"),
                alt.Tooltip("peak_gib:Q", title="measured (GiB)", format=".2f"),
            ],
        )
        .transform_calculate(series=_series(OUR_RUNS))
        .properties(name="measured")
    )
    predicted = (
        _positive(alt.Chart(predictions), "predicted_gib", log=True)
        .mark_point(filled=True, size=120, opacity=0.9)
        .encode(
            x=x,
            y=alt.Y("predicted_gib:Q", title=MEMORY_LOG_TITLE, scale=log),
            shape=shape,
            color=_model_colour(),
            tooltip=[
                alt.Tooltip("title:N", title="model"),
                alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".1f"),
            ],
        )
        .transform_calculate(series=_series(OUR_PREDICTION))
        .properties(name="predicted")
    )
    peaks = published[published["kind"] == "peak"]
    peak = (
        alt.Chart(peaks)
        .mark_point(filled=True, size=140, color=PUBLISHED_COLOUR)
        .encode(
            x=x,
            y=y,
            shape=shape,
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=".0f")],
        )
        .transform_calculate(series=_series(PUBLISHED_PEAK))
        .properties(name="published_peak")
    )
    peak_label = (
        alt.Chart(peaks)
        .mark_text(
            align="right", dx=-2 * LABEL_OFFSET_PX, fontSize=LABEL_FONT_PX, color=PUBLISHED_COLOUR
        )
        .encode(x=x, y=y, text="label:N")
        .properties(name="published_peak_label")
    )
    servers = published[published["kind"] == "server"]
    rules = (
        alt.Chart(servers)
        .mark_rule(color=PUBLISHED_COLOUR, opacity=0.7)
        .encode(
            y=y,
            strokeDash=alt.StrokeDash(
                "outcome:N",
                title=SERVER_LEGEND,
                scale=alt.Scale(domain=list(SERVER_OUTCOMES), range=list(SERVER_OUTCOMES.values())),
                # In the empty corner right of our runs, below the study's point.
                legend=alt.Legend(
                    orient="bottom-right",
                    direction="vertical",
                    symbolType="stroke",
                    fillColor=LEGEND_FILL,
                    padding=LEGEND_PADDING_PX,
                ),
            ),
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=".0f")],
        )
        .properties(name="servers")
    )
    # Each rule's label at the left edge (the smallest image x batch drawn), just above it.
    rule_labels = (
        alt.Chart(servers)
        .mark_text(align="left", baseline="bottom", dy=-LABEL_OFFSET_PX / 2, fontSize=LABEL_FONT_PX)
        .encode(x=alt.datum(left), y=y, text="label:N")
        .properties(name="server_labels")
    )
    return alt.layer(rules, rule_labels, ours, predicted, peak, peak_label).properties(
        height=CHART_HEIGHT_PX
    )
