"""The Dell EMC / Intel study's published figures beside our runs and our models' predictions.

The Models and Sizing pages draw, on one log-log plane of image x batch
(million voxels) against memory (GiB): our measured runs, each chosen model's
prediction for the study's configuration (240x240x144 at batch 16), the
study's published peak and the server sizes it tried (`core.published`).
`published_frame` and `study_predictions` make the frames, `published_points`
draws them; nothing here reads the database or Streamlit.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import altair as alt
import pandas as pd

from core import published, workloads
from core.units import GIB
from presentation import workload_labels
from presentation.chart_style import (
    DASH_SAMPLE_SIZE,
    LABEL_FONT_PX,
    LABEL_OFFSET_PX,
    LEGEND_FILL,
    LEGEND_PADDING_PX,
    MEMORY_LOG_TITLE,
    PUBLISHED_COLOUR,
    SAMPLE_LOG_TITLE,
    SCALE_PADDING_PX,
    model_colour,
    positive,
    series,
)
from presentation.curves import MEGA, PointModel, config_knobs

# The frame's ``kind``: a training peak (a point) or a server's RAM (a horizontal rule).
PEAK_KIND = "peak"
SERVER_KIND = "server"
# Both axes logarithmic: our runs reach about 1 GiB, the study's servers 1.5 TB.
OUR_RUNS = "our runs (measured)"
OUR_PREDICTION = "our model at the study's configuration"
PUBLISHED_PEAK = "published peak"
SERIES_SHAPES = {OUR_RUNS: "circle", OUR_PREDICTION: "diamond", PUBLISHED_PEAK: "triangle-up"}
SERVER_OUTCOMES = {"out of memory": [6, 3], "ran": [1, 0]}
SERVER_LEGEND = "published server sizes"
OUR_RUNS_COLOUR = "#888888"
# The whole chart's height, its two legends below included (Streamlit fits the chart to
# it): at `CHART_HEIGHT_PX` they left a plot ~200 px high, its y title cut to "log sca"
# and the 192 and 384 GB rules' labels drawn over each other (issue 42, point 8).
STUDY_CHART_HEIGHT_PX = 640


def _study_megavoxels() -> float:
    return math.prod(published.STUDY_IMAGE_SHAPE) * published.STUDY_BATCH_SIZE / MEGA


def published_frame(
    points: Sequence[published.PublishedPoint] = published.PUBLISHED_POINTS,
) -> pd.DataFrame:
    """The study's published figures: ``label, outcome, kind, gib, sample_megavoxels``.

    kind : ``peak`` (a training peak, drawn as a point at its configuration) or
    ``server`` (a server's RAM tried at it, drawn as a horizontal rule).
    """
    return pd.DataFrame(
        {
            "label": [point.label for point in points],
            "outcome": [point.outcome for point in points],
            "kind": [PEAK_KIND if point.outcome == PEAK_KIND else SERVER_KIND for point in points],
            "gib": [point.memory_gib for point in points],
            "sample_megavoxels": [
                math.prod(point.image_shape) * point.batch_size / MEGA for point in points
            ],
        }
    )


def study_predictions(
    models: Iterable[PointModel], knobs: Mapping[str, Any] | None = None
) -> pd.DataFrame:
    """Each model's U-Net prediction for the study's configuration (240x240x144, batch 16).

    knobs : the network's (default: the reference network's, the study's kind).
    Columns: ``model, title, predicted_gib, sample_megavoxels``.
    """
    module = workloads.get("unet3d")
    settings = config_knobs(knobs or workload_labels.knob_defaults("unet3d"), "unet3d")
    config = module.Config(published.STUDY_IMAGE_SHAPE, published.STUDY_BATCH_SIZE, **settings)
    rows = [
        {
            "model": model.name,
            "title": model.title,
            "predicted_gib": float(model.point_bytes([config])[0]) / GIB,
            "sample_megavoxels": _study_megavoxels(),
        }
        for model in models
    ]
    return pd.DataFrame(rows, columns=["model", "title", "predicted_gib", "sample_megavoxels"])


@dataclass(frozen=True)
class _Plane:
    """The encodings every layer shares: log x and y, and the dots' shape legend."""

    log: alt.Scale
    x: alt.X
    y: alt.Y
    shape: alt.Shape

    @classmethod
    def make(cls) -> _Plane:
        # Not rounded out to whole decades: that would leave a decade empty at each end and
        # squeeze the server rules (192 and 384 GiB, a factor of two apart) into one line.
        log = alt.Scale(type="log", nice=False, padding=SCALE_PADDING_PX)
        shape = alt.Shape(
            "series:N",
            title=None,
            scale=alt.Scale(domain=list(SERIES_SHAPES), range=list(SERIES_SHAPES.values())),
            legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0),
        )
        x = alt.X("sample_megavoxels:Q", title=SAMPLE_LOG_TITLE, scale=log)
        return cls(log, x, alt.Y("gib:Q", title=MEMORY_LOG_TITLE, scale=log), shape)

    def memory(self, column: str) -> alt.Y:
        return alt.Y(f"{column}:Q", title=MEMORY_LOG_TITLE, scale=self.log)


def _our_runs(measured: pd.DataFrame, plane: _Plane) -> alt.Chart:
    return (
        positive(alt.Chart(measured), "peak_gib", log=True)
        .mark_point(filled=True, size=50, color=OUR_RUNS_COLOUR, opacity=0.8)
        .encode(
            x=plane.x,
            y=plane.memory("peak_gib"),
            shape=plane.shape,
            tooltip=[
                alt.Tooltip("image:N", title="image"),
                alt.Tooltip("batch_size:O", title="batch"),
                alt.Tooltip("peak_gib:Q", title="measured (GiB)", format=".2f"),
            ],
        )
        .transform_calculate(series=series(OUR_RUNS))
        .properties(name="measured")
    )


def _our_predictions(predictions: pd.DataFrame, plane: _Plane) -> alt.Chart:
    return (
        positive(alt.Chart(predictions), "predicted_gib", log=True)
        .mark_point(filled=True, size=120, opacity=0.9)
        .encode(
            x=plane.x,
            y=plane.memory("predicted_gib"),
            shape=plane.shape,
            color=model_colour(),
            tooltip=[
                alt.Tooltip("title:N", title="model"),
                alt.Tooltip("predicted_gib:Q", title="predicted (GiB)", format=".1f"),
            ],
        )
        .transform_calculate(series=series(OUR_PREDICTION))
        .properties(name="predicted")
    )


def _published_peak(peaks: pd.DataFrame, plane: _Plane) -> list[alt.Chart]:
    """The study's peak as a labelled point (the label to its left)."""
    peak = (
        alt.Chart(peaks)
        .mark_point(filled=True, size=140, color=PUBLISHED_COLOUR)
        .encode(
            x=plane.x,
            y=plane.y,
            shape=plane.shape,
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=".0f")],
        )
        .transform_calculate(series=series(PUBLISHED_PEAK))
        .properties(name="published_peak")
    )
    label = (
        alt.Chart(peaks)
        .mark_text(
            align="right", dx=-2 * LABEL_OFFSET_PX, fontSize=LABEL_FONT_PX, color=PUBLISHED_COLOUR
        )
        .encode(x=plane.x, y=plane.y, text="label:N")
        .properties(name="published_peak_label")
    )
    return [peak, label]


def _server_rules(servers: pd.DataFrame, plane: _Plane, left: float) -> list[alt.Chart]:
    """Each server size as a rule (dashed: out of memory), labelled at ``left``, just above."""
    outcome = alt.StrokeDash(
        "outcome:N",
        title=SERVER_LEGEND,
        scale=alt.Scale(domain=list(SERVER_OUTCOMES), range=list(SERVER_OUTCOMES.values())),
        # In the empty corner right of our runs, below the study's point.
        legend=alt.Legend(
            orient="bottom-right",
            direction="vertical",
            symbolType="stroke",
            symbolSize=DASH_SAMPLE_SIZE,
            fillColor=LEGEND_FILL,
            padding=LEGEND_PADDING_PX,
        ),
    )
    rules = (
        alt.Chart(servers)
        .mark_rule(color=PUBLISHED_COLOUR, opacity=0.7)
        .encode(
            y=plane.y,
            strokeDash=outcome,
            tooltip=[alt.Tooltip("label:N"), alt.Tooltip("gib:Q", title="GiB", format=".0f")],
        )
        .properties(name="servers")
    )
    labels = (
        alt.Chart(servers)
        .mark_text(align="left", baseline="bottom", dy=-LABEL_OFFSET_PX / 2, fontSize=LABEL_FONT_PX)
        .encode(x=alt.datum(left), y=plane.y, text="label:N")
        .properties(name="server_labels")
    )
    return [rules, labels]


def published_points(
    measured: pd.DataFrame, predictions: pd.DataFrame, published: pd.DataFrame
) -> alt.LayerChart:
    """Our runs and our models' predictions beside the study's published figures.

    measured : `presentation.curves.with_sample_megavoxels` of the measured points
    (``sample_megavoxels, peak_gib, image, batch_size``); predictions :
    `study_predictions`; published : `published_frame`. The published peak is a
    labelled point at its configuration, each server size a labelled horizontal
    rule (dashed: out of memory; solid: ran). Every mark has a legend entry: dots
    by what they are (shape), our predictions by model (colour), rules by outcome (dash).
    """
    x_values = pd.concat([measured["sample_megavoxels"], published["sample_megavoxels"]])
    x_values = x_values[x_values > 0]
    # The server rules' labels start at the smallest image x batch drawn.
    left = float(x_values.min()) if len(x_values) else 1.0
    plane = _Plane.make()
    return alt.layer(
        *_server_rules(published[published["kind"] == SERVER_KIND], plane, left),
        _our_runs(measured, plane),
        _our_predictions(predictions, plane),
        *_published_peak(published[published["kind"] == PEAK_KIND], plane),
    ).properties(height=STUDY_CHART_HEIGHT_PX)
