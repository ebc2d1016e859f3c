"""The Dell–Intel study's published figures drawn beside our runs and models' predictions.

Shared by the Models page (the models chosen there) and the Sizing page (the
models credible for the study's configuration): the chart of
`presentation.charts_study.published_points`, the study's configuration, source and
stack, and why our measurements differ (`core.published`).
"""

from __future__ import annotations

from collections.abc import Sequence

import altair as alt
import pandas as pd
import streamlit as st

from core import published
from dashboard import chart_draw
from presentation import charts_study, curves, workload_labels
from presentation.curves import PointModel
from presentation.text import plain

# The workload the published study trained.
STUDY_WORKLOAD = "unet3d"


def render(models: Sequence[PointModel], points: pd.DataFrame) -> None:
    """The chart and its captions; ``points``: `curves.measured_points` of one machine's runs."""
    knobs = workload_labels.knob_defaults(STUDY_WORKLOAD)
    predictions = charts_study.study_predictions(models, knobs)
    show(predictions, chart_of(predictions, points))


def chart_of(predictions: pd.DataFrame, points: pd.DataFrame) -> alt.LayerChart:
    """The chart of `render` from the models' predictions already made
    (`presentation.charts_study.study_predictions`, the reference network's)."""
    knobs = workload_labels.knob_defaults(STUDY_WORKLOAD)
    ours = curves.with_sample_megavoxels(curves.with_knobs(points, knobs))
    return charts_study.published_points(ours, predictions, charts_study.published_frame())


def show(predictions: pd.DataFrame, chart: alt.LayerChart) -> None:
    """`render` from the predictions and their chart (`chart_of`) already made."""
    st.subheader("Beside the published study")
    chart_draw.altair_chart(chart, width="stretch")
    image = "×".join(str(side) for side in published.STUDY_IMAGE_SHAPE)
    said = "; ".join(
        f"{plain(row.title)} {row.predicted_gib:,.0f} GiB" for row in predictions.itertuples()
    )
    st.caption(
        f"The study's configuration: {image}, batch {published.STUDY_BATCH_SIZE}, the reference "
        f"network. Our models predict: {said or 'no model chosen'}. The published figures "
        f"(black) are the study's own, never fitted: {plain(published.STUDY_SOURCE)}. "
        f"Its stack: {plain(published.STUDY_STACK)}."
    )
    st.caption(plain(published.WHY_OURS_DIFFER))
