"""What the Models page reads: one workload's runs and models on one machine profile, cached.

A `View` names what every section reads (the database at one version, the
workload, the profile chosen); the loaders below take it whole. Everything is
read through `dashboard.data`'s cached loaders and cached here per database
version; a rerun predicts a few hundred configurations at most.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import streamlit as st

from application import floor
from application.models import Predictor
from core.errors import ModelingError
from dashboard import data
from presentation import curves, machines, workload_labels

Models = list[Predictor] | list[curves.ClosedFormModel]


@dataclass(frozen=True)
class View:
    """The page's subject: ``workload`` on the profile ``option``, in ``db`` at ``version``."""

    db: Path
    version: data.Version
    workload: str
    option: str  # a profile key, or `presentation.machines.MIXED`

    @property
    def machine(self) -> str | None:
        """What the loaders take for the option: a profile key, None for `machines.MIXED`."""
        return None if self.option == machines.MIXED else self.option


@dataclass(frozen=True)
class CurveRequest:
    """The predicted curves to draw: which models, over which sides, batches and network."""

    names: tuple[str, ...]
    sides: tuple[int, ...]
    batches: tuple[int, ...]
    knobs: tuple[tuple[str, object], ...]


def runs_of(view: View) -> pd.DataFrame:
    """The runs of the view's workload on its machine profile."""
    runs = workload_labels.runs_of(data.runs(view.db, view.version), view.workload)
    return machines.runs_on(runs, view.option)


def stored(view: View) -> list[Predictor]:
    """The profile's stored models, each read back when first drawn (`Predictor.read_back`):
    the page draws three by default, and the trees took ~3.7 s CPU to read back."""
    return data.predictors(view.db, view.version, view.workload, view.machine, decoded=False)


def models_of(view: View) -> Models:
    """The profile's stored models, or the two analytical ones when none is stored."""
    return stored(view) or curves.closed_form_models(runs_of(view))


def drawable(models: Models, names: list[str]) -> tuple[list[str], list[str]]:
    """Of the models called ``names``, those that read back (each decoded now), and why
    each other one was refused (`modeling.errors.ModelingError`'s words)."""
    kept, refused = [], []
    for model in models:
        if model.name not in names:
            continue
        try:
            if isinstance(model, Predictor):
                model.read_back()
        except ModelingError as error:
            refused.append(str(error))
            continue
        kept.append(model.name)
    return kept, refused


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def measured(view: View) -> pd.DataFrame:
    """`presentation.curves.measured_points` of the runs at the models' step count."""
    # The runs at the step count the models were fitted on: the curves are drawn over those.
    fitted = data.fit_evidence(view.db, view.version, view.workload, view.machine)
    steps = fitted.steps if fitted is not None else None
    return curves.measured_points(runs_of(view), steps)


@st.cache_data(show_spinner=False, max_entries=32)
def curve_frame(view: View, request: CurveRequest) -> pd.DataFrame:
    """`presentation.curves.predicted_curves` of the requested models."""
    chosen = [model for model in models_of(view) if model.name in request.names]
    return curves.predicted_curves(
        chosen, request.sides, request.batches, dict(request.knobs), view.workload
    )


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def out_of_sample(view: View) -> pd.DataFrame:
    """Held-out predictions of the latest evaluation, or the analytical models at every point."""
    points = measured(view)
    models = models_of(view)
    stored = data.held_out_predictions(view.db, view.version, view.workload, view.machine)
    if stored.empty:
        return curves.predictions_at_points(models, points)
    titles = {model.name: model.title for model in models}
    return curves.held_out_points(stored, points, titles, curves.RANDOM_SPLIT)


def held_out(view: View, names: list[str]) -> pd.DataFrame:
    """`out_of_sample` for the chosen models only."""
    points = out_of_sample(view)
    return points[points["model"].isin(names)]


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def floor_figures(view: View) -> tuple[floor.SamplingGap | None, list[floor.RepeatSpread]]:
    """The measurement floor of the profile's runs (~1 s for 10,000 runs: once per version)."""
    runs = runs_of(view)
    return floor.sampling_gap(runs), floor.repeat_spreads(runs)
