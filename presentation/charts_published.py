"""Measured against predicted, beside the published reference points: one chart, two steps.

The question a sizing answer is about — one image at one batch size — sits
on a log-log plane of image x batch (million voxels) against peak memory
(GiB) among what stands behind the answer:

* this machine profile's measured ``ok`` runs of the question's network (dots);
* the chosen model's point prediction and upper bound for the question's
  image at batch 1 to max(question's batch, 16) (lines): how far the answer
  reaches past the dots is the distance along them;
* the question itself (a labelled diamond at the upper bound the answer uses)
  and, when given, the budget (a rule);
* when the Dell EMC / Intel study applies (`core.published.applies_to`), its
  published peak ("almost 1 TB", a labelled triangle at its image x batch) and
  the server sizes it tried (192, 384 and 1,536 GiB: rules labelled with what
  happened).

`chart_frame` prepares the data (a pandas frame, no Streamlit, no Altair) and
`measured_vs_predicted` draws it, so the dashboard's pages and the downloadable
report (`presentation.sizing_report`, which renders it to SVG with `chart_svg`)
draw the same chart from the same frame. Every mark has a legend entry: one
legend for the ``series`` field, merged over colour, shape and dash.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import altair as alt
import pandas as pd

from core import workloads
from core.published import PublishedPoint
from core.units import GIB
from core.workloads.base import WorkloadConfig
from modeling.decision import approx_gib
from presentation import curves
from presentation.chart_style import (
    LABEL_FONT_PX,
    LABEL_OFFSET_PX,
    MEMORY_LOG_TITLE,
    PUBLISHED_COLOUR,
    SAMPLE_LOG_TITLE,
    SCALE_PADDING_PX,
)
from presentation.sizing_view import BoundedModel, config_predictions, knob_items
from presentation.workload_labels import image_label, shape_label

# The lines run over batch 1 to at least this, so a small question still shows the trend.
MIN_LINE_BATCH = 16

# The series, in legend order (`SERIES`): what each mark is, in words.
MEASURED = "measured runs (this machine profile, this network)"
PREDICTED = "chosen model: point prediction"
UPPER = "chosen model: upper bound"
QUESTION = "the question"
BUDGET = "budget"
PUBLISHED_PEAK = "published peak (Dell EMC / Intel)"
SERVER_OUT_OF_MEMORY = "published server size: out of memory"
SERVER_RAN = "published server size: ran"
# How a published outcome (`core.published.PublishedPoint.outcome`) is drawn.
SERVER_SERIES = {"out of memory": SERVER_OUT_OF_MEMORY, "ran": SERVER_RAN}

# The frame's ``kind`` column: which layer draws a row.
RUN, LINE, QUESTION_MARK, BUDGET_RULE = "run", "line", "question", "budget"
PEAK, SERVER = "published peak", "server"
FRAME_COLUMNS = ["series", "kind", "sample_megavoxels", "gib", "label", "image", "batch_size"]

# Colour, legend symbol and dash of each series. A line or rule shows as a stroke in the
# legend; the dashes match the marks (the upper bound and the out-of-memory servers dashed).
MODEL_COLOUR = "#4c78a8"
UPPER_COLOUR = "#f58518"
QUESTION_COLOUR = "#d62728"
RUNS_COLOUR = "#7f7f7f"
SOLID: list[int] = [1, 0]
DASHED = [6, 3]
DOTTED = [2, 2]
STYLE: dict[str, tuple[str, str, list[int]]] = {
    MEASURED: (RUNS_COLOUR, "circle", SOLID),
    PREDICTED: (MODEL_COLOUR, "stroke", SOLID),
    UPPER: (UPPER_COLOUR, "stroke", DASHED),
    QUESTION: (QUESTION_COLOUR, "diamond", SOLID),
    BUDGET: (QUESTION_COLOUR, "stroke", DOTTED),
    PUBLISHED_PEAK: (PUBLISHED_COLOUR, "triangle-up", SOLID),
    SERVER_OUT_OF_MEMORY: (PUBLISHED_COLOUR, "stroke", DASHED),
    SERVER_RAN: (PUBLISHED_COLOUR, "stroke", SOLID),
}
SERIES = tuple(STYLE)

CHART_WIDTH_PX = 640
CHART_HEIGHT_PX = 420
RUN_SIZE = 45
QUESTION_SIZE = 160
PEAK_SIZE = 140
LINE_WIDTH_PX = 2
# Long legend entries stay whole: Vega-Lite cuts labels at 160 px by default.
LEGEND_LABEL_LIMIT_PX = 0
LEGEND_COLUMNS = 2


def _row(series: str, kind: str, megavoxels: float, gib: float, **extra: object) -> dict:
    return {"series": series, "kind": kind, "sample_megavoxels": megavoxels, "gib": gib} | extra


def _megavoxels(config: WorkloadConfig, batch_size: int | None = None) -> float:
    batch = config.batch_size if batch_size is None else batch_size
    return config.elements * batch / curves.MEGA


def _line_configs(config: WorkloadConfig) -> list[WorkloadConfig]:
    """The question's image (and network) at batch 1 to max(its batch, MIN_LINE_BATCH)."""
    last = max(config.batch_size, MIN_LINE_BATCH)
    # `dataclasses.replace` keeps the image a tuple (a config must hash; `to_dict` lists it).
    return [dataclasses.replace(config, batch_size=batch) for batch in range(1, last + 1)]


def _run_rows(runs: pd.DataFrame, network: dict) -> list[dict]:
    """One row per ``ok`` run of ``network`` in ``runs``."""
    ok = runs[runs["status"] == "ok"] if "status" in runs else runs
    if ok.empty:
        return []
    points = curves.with_sample_megavoxels(curves.with_knobs(curves.measured_points(ok), network))
    return [
        _row(
            MEASURED,
            RUN,
            float(point.sample_megavoxels),
            float(point.peak_gib),
            image=str(point.image),
            batch_size=int(point.batch_size),
        )
        for point in points.itertuples()
    ]


def _line_rows(config: WorkloadConfig, model: BoundedModel, image: str) -> tuple[list[dict], float]:
    """The model's prediction and bound lines' vertices, and the bound (GiB) at the question."""
    table = config_predictions([model], _line_configs(config))
    rows = []
    for config_row in table.itertuples():
        megavoxels = _megavoxels(config, int(config_row.batch_size))
        for series, value in (
            (PREDICTED, config_row.predicted_bytes),
            (UPPER, config_row.upper_bytes),
        ):
            rows.append(
                _row(
                    series,
                    LINE,
                    megavoxels,
                    float(value) / GIB,
                    image=image,
                    batch_size=int(config_row.batch_size),
                )
            )
    asked = table[table["batch_size"] == config.batch_size]
    return rows, float(asked["upper_bytes"].iloc[0]) / GIB


def _published_rows(published: Sequence[PublishedPoint]) -> list[dict]:
    """The study's peak as a labelled point, each server size as a rule."""
    rows = []
    for point in published:
        if point.outcome == "peak":
            megavoxels = math.prod(point.image_shape) * point.batch_size / curves.MEGA
            rows.append(
                _row(
                    PUBLISHED_PEAK,
                    PEAK,
                    megavoxels,
                    point.memory_gib,
                    label=point.label,
                    image=image_label(point.image_shape),
                    batch_size=point.batch_size,
                )
            )
        else:
            series = SERVER_SERIES.get(point.outcome, SERVER_OUT_OF_MEMORY)
            rows.append(_row(series, SERVER, math.nan, point.memory_gib, label=point.label))
    return rows


def chart_frame(
    runs: pd.DataFrame,
    config: WorkloadConfig,
    model: BoundedModel | None,
    *,
    published: Sequence[PublishedPoint] = (),
    budget_gib: float | None = None,
) -> pd.DataFrame:
    """The rows `measured_vs_predicted` draws, one per mark or line vertex.

    runs : one machine profile's runs of the question's workload (any status:
    only ``ok`` runs of the question's network are drawn); config : the
    question; model : the model whose answer is shown (a
    `modeling.stored.predictor.Predictor`), None when no model answers;
    published : the study's points, given only when they apply to ``config``
    (`core.published.applies_to`); budget_gib : drawn as a rule when given.

    Columns ``series`` (one of `SERIES`), ``kind`` (which layer: run, line,
    question, budget, published peak, server), ``sample_megavoxels`` (image x
    batch / 10^6; NaN for a rule), ``gib``, ``label`` (the words beside a
    labelled mark), ``image``, ``batch_size``. The model's bound is raised to
    the refined closed-form estimate where it falls below it, as every sizing
    answer's is (`presentation.sizing_view.config_predictions`).
    """
    shape = tuple(config.image_shape)
    image = shape_label(shape, one_side=len(set(shape)) == 1)  # "128^3", "240x240x144"
    knobs = workloads.of(config).NETWORK_KNOBS
    network = dict(knob_items({knob: getattr(config, knob) for knob in knobs}))
    rows = _run_rows(runs, network)
    question_gib = math.nan
    if model is not None:
        lines, question_gib = _line_rows(config, model, image)
        rows += lines
    if math.isfinite(question_gib) and question_gib > 0:
        label = f"{image}, batch {config.batch_size}: up to {approx_gib(question_gib * GIB)}"
        rows.append(
            _row(
                QUESTION,
                QUESTION_MARK,
                _megavoxels(config),
                question_gib,
                label=label,
                image=image,
                batch_size=config.batch_size,
            )
        )
    if budget_gib is not None:
        rows.append(
            _row(BUDGET, BUDGET_RULE, math.nan, budget_gib, label=f"budget {budget_gib:,g} GiB")
        )
    rows += _published_rows(published)
    frame = pd.DataFrame(rows, columns=FRAME_COLUMNS).astype({"batch_size": "Int64"})
    # Log axes cannot place a prediction <= 0 (a model may predict one): such rows are dropped.
    return frame[~(frame["gib"] <= 0)].reset_index(drop=True)


def _legend_scale(frame: pd.DataFrame, part: int) -> alt.Scale:
    """One part of `STYLE` (0 colour, 1 symbol, 2 dash) for the series ``frame`` holds."""
    present = [series for series in SERIES if series in set(frame["series"])]
    return alt.Scale(domain=present, range=[STYLE[series][part] for series in present])


@dataclass(frozen=True)
class _Layers:
    """The chart's layers over one frame: log-log axes, one legend for ``series``."""

    frame: pd.DataFrame
    x: alt.X
    y: alt.Y
    colour: alt.Color
    shape: alt.Shape
    dash: alt.StrokeDash

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> _Layers:
        legend = alt.Legend(
            title=None,
            orient="bottom",
            columns=LEGEND_COLUMNS,
            labelLimit=LEGEND_LABEL_LIMIT_PX,
            symbolStrokeWidth=LINE_WIDTH_PX,
        )
        log = alt.Scale(type="log", nice=False, padding=SCALE_PADDING_PX)
        return cls(
            frame,
            x=alt.X("sample_megavoxels:Q", title=SAMPLE_LOG_TITLE, scale=log),
            y=alt.Y("gib:Q", title=MEMORY_LOG_TITLE, scale=log),
            colour=alt.Color("series:N", scale=_legend_scale(frame, 0), legend=legend),
            shape=alt.Shape("series:N", scale=_legend_scale(frame, 1), legend=legend),
            dash=alt.StrokeDash("series:N", scale=_legend_scale(frame, 2), legend=legend),
        )

    def of(self, *kinds: str) -> alt.Chart:
        """A chart of the frame's rows of these ``kind``s."""
        chosen = alt.FieldOneOfPredicate(field="kind", oneOf=list(kinds))
        return alt.Chart(self.frame).transform_filter(chosen)

    def runs(self) -> alt.Chart:
        return (
            self.of(RUN)
            .mark_point(filled=True, size=RUN_SIZE, opacity=0.8)
            .encode(
                x=self.x,
                y=self.y,
                color=self.colour,
                shape=self.shape,
                tooltip=[
                    alt.Tooltip("image:N", title="image"),
                    alt.Tooltip("batch_size:O", title="batch"),
                    alt.Tooltip("gib:Q", title="measured peak (GiB)", format=".2f"),
                ],
            )
            .properties(name="measured")
        )

    def lines(self) -> alt.Chart:
        return (
            self.of(LINE)
            .mark_line(strokeWidth=LINE_WIDTH_PX)
            .encode(
                x=self.x,
                y=self.y,
                color=self.colour,
                strokeDash=self.dash,
                detail="series:N",
                order="batch_size:Q",
                tooltip=[
                    alt.Tooltip("series:N", title="line"),
                    alt.Tooltip("batch_size:O", title="batch"),
                    alt.Tooltip("gib:Q", title="GiB", format=",.1f"),
                ],
            )
            .properties(name="predicted")
        )

    def marks(self) -> list[alt.Chart]:
        """The question and the published peak, each labelled on its left.

        Both sit at the right of the plot (the largest image x batch): labels go to their left.
        """
        marks = (
            self.of(QUESTION_MARK, PEAK)
            .mark_point(filled=True, size=QUESTION_SIZE, opacity=1)
            .encode(
                x=self.x,
                y=self.y,
                color=self.colour,
                shape=self.shape,
                tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=",.0f")],
            )
            .properties(name="question_and_published_peak")
        )
        labels = (
            self.of(QUESTION_MARK, PEAK)
            .mark_text(align="right", dx=-2 * LABEL_OFFSET_PX, fontSize=LABEL_FONT_PX)
            .encode(x=self.x, y=self.y, text="label:N", color=self.colour)
            .properties(name="mark_labels")
        )
        return [marks, labels]

    def rules(self) -> list[alt.Chart]:
        """The server sizes and the budget, each labelled at the left edge, just above it."""
        plotted = self.frame[self.frame["sample_megavoxels"].notna()]
        left = float(plotted["sample_megavoxels"].min()) if len(plotted) else 1.0
        rules = (
            self.of(SERVER, BUDGET_RULE)
            .mark_rule(opacity=0.8)
            .encode(
                y=self.y,
                color=self.colour,
                strokeDash=self.dash,
                tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=",.0f")],
            )
            .properties(name="rules")
        )
        labels = (
            self.of(SERVER, BUDGET_RULE)
            .mark_text(
                align="left", baseline="bottom", dy=-LABEL_OFFSET_PX / 2, fontSize=LABEL_FONT_PX
            )
            .encode(x=alt.datum(left), y=self.y, text="label:N", color=self.colour)
            .properties(name="rule_labels")
        )
        return [rules, labels]


def measured_vs_predicted(frame: pd.DataFrame, title: str | list[str] = "") -> alt.LayerChart:
    """The chart of `chart_frame`'s rows: x image x batch, y peak GiB, both logarithmic.

    title : e.g. the chosen model and the machine profile. One legend (below the
    plot) names every series; the question, the published peak and each rule
    carry their label beside them. Tooltips give a run's image, batch and peak.
    """
    layers = _Layers.of_frame(frame)
    layered = alt.layer(*layers.rules(), layers.runs(), layers.lines(), *layers.marks()).properties(
        width=CHART_WIDTH_PX, height=CHART_HEIGHT_PX
    )
    return layered.properties(title=title) if title else layered


def chart_svg(chart: alt.TopLevelMixin) -> str:
    """``chart`` as a standalone SVG document's text, drawn offline by vl-convert.

    No browser and no network: vl-convert bundles Vega and its fonts, and the
    chart's data is inline. The SVG carries no script.
    """
    import vl_convert

    return str(vl_convert.vegalite_to_svg(chart.to_json()))
