"""The dashboard's charts, checked through their Vega-Lite specs (no Streamlit, no browser)."""

from typing import Any

import pandas as pd
import pytest

from core.analytical import refined_breakdown
from core.workloads.unet3d import UNetConfig
from presentation import charts, curves, sizing_view
from tests.conftest import build_runs


def _layers(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {layer["name"]: layer for layer in spec["layer"]}


def _rows(spec: dict[str, Any], layer: dict[str, Any]) -> pd.DataFrame:
    return pd.DataFrame(spec["datasets"][layer["data"]["name"]])


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return build_runs(sides=(32, 48, 64), batches=(1, 2, 4))


def test_peak_vs_size_draws_measured_dots_over_one_line_per_model_and_batch(runs) -> None:
    points = curves.measured_points(runs)
    models = curves.closed_form_models(runs)
    frame = curves.predicted_curves(models, [16, 32, 48, 64, 80], [1, 2, 4])
    spec = charts.peak_vs_size(points, frame).to_dict()
    layers = _layers(spec)

    assert set(layers) == {"predicted", "measured"}
    predicted = layers["predicted"]
    assert predicted["mark"]["type"] == "line"
    encoding = predicted["encoding"]
    assert (encoding["color"]["field"], encoding["strokeDash"]["field"]) == ("batch_size", "title")
    lines = _rows(spec, predicted).groupby(["title", "batch_size"]).size()
    assert len(lines) == 2 * 3  # each model x each batch size
    assert set(lines) == {5}  # five sides on every line
    measured = layers["measured"]
    assert measured["mark"]["type"] == "point"
    assert len(_rows(spec, measured)) == len(points)
    assert measured["encoding"]["y"]["field"] == "peak_gib"


def test_log_axes_use_log_scales_and_drop_what_a_log_scale_cannot_place(runs) -> None:
    points = curves.measured_points(runs)
    frame = curves.predicted_curves(curves.closed_form_models(runs), [32, 64], [1])
    linear = _layers(charts.peak_vs_size(points, frame, log=False).to_dict())["predicted"]
    log = _layers(charts.peak_vs_size(points, frame, log=True).to_dict())["predicted"]

    assert log["encoding"]["x"]["scale"] == {"type": "log"}
    assert log["encoding"]["y"]["scale"] == {"type": "log"}
    assert {"filter": "datum['predicted_gib'] > 0"} in log["transform"]
    assert linear["encoding"]["y"]["scale"].get("type") is None
    assert "transform" not in linear


def _held_out(runs: pd.DataFrame) -> pd.DataFrame:
    models = curves.closed_form_models(runs)
    return curves.predictions_at_points(models, curves.measured_points(runs))


def test_parity_plots_predicted_against_measured_with_the_identity_line(runs) -> None:
    points = _held_out(runs)
    spec = charts.parity(points).to_dict()
    layers = _layers(spec)

    dots = layers["held_out"]
    assert (dots["encoding"]["x"]["field"], dots["encoding"]["y"]["field"]) == (
        "measured_gib",
        "predicted_gib",
    )
    assert dots["encoding"]["color"]["field"] == "title"
    assert set(_rows(spec, dots)["model"]) == {"paper", "refined"}
    identity = _rows(spec, layers["identity"])["gib"]
    low = min(points["measured_gib"].min(), points["predicted_gib"].min())
    high = max(points["measured_gib"].max(), points["predicted_gib"].max())
    assert identity.tolist() == pytest.approx([low, high])


def test_residuals_are_drawn_against_side_or_measured_peak(runs) -> None:
    points = _held_out(runs)
    by_side = _layers(charts.residuals(points, "side").to_dict())["residuals"]
    by_peak = _layers(charts.residuals(points, "measured_gib").to_dict())["residuals"]

    assert by_side["encoding"]["x"]["field"] == "side"
    assert by_peak["encoding"]["x"]["field"] == "measured_gib"
    assert by_side["encoding"]["y"]["field"] == "error_pct"
    with pytest.raises(ValueError, match="residuals are drawn against side, measured_gib"):
        charts.residuals(points, "batch_size")


def test_the_breakdown_has_a_bar_per_term_in_the_models_order() -> None:
    terms = sizing_view.breakdown_frame(refined_breakdown(UNetConfig((64, 64, 64), 2)))
    spec = charts.breakdown(terms).to_dict()

    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["y"]["sort"] is None  # display order, not alphabetical
    bars = pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    assert bars["term"].tolist() == terms["term"].tolist()


def test_the_bounds_chart_marks_the_budget_and_what_training_may_use_of_it() -> None:
    models = pd.DataFrame(
        {"title": ["a", "b"], "predicted_gib": [10.0, 12.0], "upper_gib": [11.0, 15.0]}
    )
    spec = charts.bounds(models, budget_gib=240.0, usable_gib=200.0).to_dict()
    layers = _layers(spec)

    assert set(layers) == {"bound", "predicted", "budget"}
    limits = _rows(spec, layers["budget"]).set_index("limit")["gib"]
    assert limits.to_dict() == {"budget": 240.0, "budget less headroom": 200.0}
    assert _rows(spec, layers["bound"])["upper_gib"].tolist() == [11.0, 15.0]


def test_a_2d_workloads_axes_say_pixels_and_square_root() -> None:
    points = pd.DataFrame({"side": [224.0], "batch_size": [1], "image": ["224"], "peak_gib": [2.0]})
    curve = pd.DataFrame(
        {
            "model": ["paper"],
            "title": ["paper"],
            "side": [224],
            "batch_size": [1],
            "predicted_gib": [1.0],
        }
    )
    spec = charts.peak_vs_size(points, curve, dims=2).to_dict()
    title = _layers(spec)["predicted"]["encoding"]["x"]["title"]
    assert title == "image side (pixels; square root of H x W)"
    assert charts.SIDE_TITLE == "image side (voxels; cube root of D x H x W)"
