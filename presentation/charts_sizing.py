"""The Sizing page's charts: each model's bound against the budget, and the refined model's terms.

`bounds` draws each credible model's point prediction and upper bound beside the
budget and what training may use of it; `breakdown` the refined analytical
model's terms. Pure functions from frames to Altair charts: nothing here reads
the database or Streamlit. The chart of one answer beside its runs and the
published study (the report's) is `presentation.charts_published`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import pandas as pd

from presentation.chart_style import (
    DASH_SAMPLE_SIZE,
    LABEL_LIMIT_PX,
    REFERENCE_DASH,
    positive,
    series,
)

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


@dataclass(frozen=True)
class _BoundsAxes:
    """What the bounds chart's layers share: the GiB axis, the models' axis, the line legend."""

    gib: alt.Scale
    x_title: str
    y: alt.Y
    colour: alt.Color  # the bound and the two rules: colour and dash on one field, one legend
    dash: alt.StrokeDash
    tooltip: list[alt.Tooltip]

    @classmethod
    def make(cls, log: bool) -> _BoundsAxes:
        lines = [UPPER, BUDGET, USABLE]
        legend = alt.Legend(
            orient="bottom", direction="vertical", symbolType="stroke", symbolSize=DASH_SAMPLE_SIZE
        )
        colours = [BOUND_COLOUR, BUDGET_COLOUR, BUDGET_COLOUR]
        return cls(
            gib=alt.Scale(type="log") if log else alt.Scale(zero=True),
            x_title=GIB_LOG_TITLE if log else GIB_TITLE,
            y=alt.Y("title:N", title=None, sort=None, axis=alt.Axis(labelLimit=LABEL_LIMIT_PX)),
            colour=alt.Color(
                "line:N", title=None, scale=alt.Scale(domain=lines, range=colours), legend=legend
            ),
            dash=alt.StrokeDash(
                "line:N",
                title=None,
                scale=alt.Scale(domain=lines, range=[[1, 0], [1, 0], REFERENCE_DASH]),
                legend=legend,
            ),
            tooltip=[
                alt.Tooltip("title:N", title="model"),
                alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".2f"),
                alt.Tooltip("upper_gib:Q", title="upper bound (GiB)", format=".2f"),
            ],
        )

    def x(self, column: str) -> alt.X:
        return alt.X(f"{column}:Q", title=self.x_title, scale=self.gib)


def _bound_spans(models: pd.DataFrame, axes: _BoundsAxes, log: bool) -> alt.Chart:
    """Each model's bar from its point prediction to its upper bound."""
    return (
        positive(alt.Chart(models), "predicted_gib", "upper_gib", log=log)
        .mark_rule(strokeWidth=3, opacity=0.6)
        .encode(
            x=axes.x("predicted_gib"),
            x2="upper_gib:Q",
            y=axes.y,
            color=axes.colour,
            strokeDash=axes.dash,
            tooltip=axes.tooltip,
        )
        .transform_calculate(line=series(UPPER))
        .properties(name="bound")
    )


def _predicted_dots(models: pd.DataFrame, axes: _BoundsAxes, log: bool) -> alt.Chart:
    """Each model's point prediction, in a legend of its own."""
    return (
        positive(alt.Chart(models), "predicted_gib", log=log)
        .mark_point(filled=True, size=80, color=BOUND_COLOUR, opacity=1)
        .encode(
            x=axes.x("predicted_gib"),
            y=axes.y,
            shape=alt.Shape(
                "point:N",
                title=None,
                scale=alt.Scale(domain=[PREDICTED], range=["circle"]),
                legend=alt.Legend(orient="bottom", symbolFillColor=BOUND_COLOUR),
            ),
            tooltip=axes.tooltip,
        )
        .transform_calculate(point=series(PREDICTED))
        .properties(name="predicted")
    )


def _budget_rules(budget_gib: float, usable_gib: float, axes: _BoundsAxes) -> alt.Chart:
    """The budget (solid) and what training may use of it (dashed)."""
    # "line": the legend's field, shared with the bound's layer.
    limits = pd.DataFrame(
        {"gib": [budget_gib, usable_gib], "limit": [BUDGET, USABLE], "line": [BUDGET, USABLE]}
    )
    return (
        alt.Chart(limits)
        .mark_rule()
        .encode(
            x=axes.x("gib"),
            color=axes.colour,
            strokeDash=axes.dash,
            tooltip=[alt.Tooltip("limit:N"), alt.Tooltip("gib:Q", title="GiB", format=".1f")],
        )
        .properties(name="budget")
    )


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
    axes = _BoundsAxes.make(log)
    return alt.layer(
        _bound_spans(models, axes, log),
        _predicted_dots(models, axes, log),
        _budget_rules(budget_gib, usable_gib, axes),
    )
