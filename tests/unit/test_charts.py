"""The dashboard's charts, checked through their Vega-Lite specs (no Streamlit, no browser)."""

from typing import Any

import pandas as pd
import pytest

from core.analytical import refined_breakdown
from core.published import PUBLISHED_POINTS
from core.workloads.unet3d import UNetConfig
from presentation import (
    charts_models,
    charts_sizing,
    charts_study,
    charts_sweeps,
    curves,
    sizing_text,
)
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
    spec = charts_models.peak_vs_size(points, frame).to_dict()
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


def test_the_model_legend_draws_each_dash_long_enough_to_tell_it_apart(runs) -> None:
    # Issue 42: at Vega's ~10 px default sample, six models' dashes read as six solid lines.
    frame = curves.predicted_curves(curves.closed_form_models(runs), [32, 64], [1])
    spec = charts_models.peak_vs_size(curves.measured_points(runs), frame).to_dict()
    legend = _layers(spec)["predicted"]["encoding"]["strokeDash"]["legend"]

    assert legend["symbolType"] == "stroke"
    sample_px = legend["symbolSize"] ** 0.5
    assert all(sample_px >= 2 * sum(dash) for dash in charts_models.DASHES)


def test_log_axes_use_log_scales_and_drop_what_a_log_scale_cannot_place(runs) -> None:
    points = curves.measured_points(runs)
    frame = curves.predicted_curves(curves.closed_form_models(runs), [32, 64], [1])
    linear = _layers(charts_models.peak_vs_size(points, frame, log=False).to_dict())["predicted"]
    log = _layers(charts_models.peak_vs_size(points, frame, log=True).to_dict())["predicted"]

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
    spec = charts_models.parity(points).to_dict()
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
    by_side = _layers(charts_models.residuals(points, "side").to_dict())["residuals"]
    by_peak = _layers(charts_models.residuals(points, "measured_gib").to_dict())["residuals"]

    assert by_side["encoding"]["x"]["field"] == "side"
    assert by_peak["encoding"]["x"]["field"] == "measured_gib"
    assert by_side["encoding"]["y"]["field"] == "error_pct"
    # Drawn beside the parity chart, which names the models: no second copy of its legend.
    assert by_side["encoding"]["color"]["legend"] is None
    with pytest.raises(ValueError, match="residuals are drawn against side, measured_gib"):
        charts_models.residuals(points, "batch_size")


def test_the_breakdown_has_a_bar_per_term_in_the_models_order() -> None:
    terms = sizing_text.breakdown_frame(refined_breakdown(UNetConfig((64, 64, 64), 2)))
    spec = charts_sizing.breakdown(terms).to_dict()

    assert spec["mark"]["type"] == "bar"
    assert spec["encoding"]["y"]["sort"] is None  # display order, not alphabetical
    bars = pd.DataFrame(spec["datasets"][spec["data"]["name"]])
    assert bars["term"].tolist() == terms["term"].tolist()


def _bounds(predicted: list[float], upper: list[float]) -> pd.DataFrame:
    titles = [f"model {i}" for i in range(len(predicted))]
    return pd.DataFrame({"title": titles, "predicted_gib": predicted, "upper_gib": upper})


def _legend_fields(layer: dict[str, Any]) -> set[str]:
    """The fields a layer names in a legend (every channel but position, tooltip, detail)."""
    named = ("color", "fill", "shape", "strokeDash")
    encoding = layer["encoding"]
    return {
        encoding[channel]["field"]
        for channel in named
        if channel in encoding and encoding[channel].get("legend", {}) is not None
    }


def _legend_entries(spec: dict[str, Any], layer: dict[str, Any], field: str) -> set[str]:
    """The entries a layer puts in its legend: a named series, or its rows' values."""
    for step in layer.get("transform", []):
        if step.get("as") == field:
            return {step["calculate"].strip("'")}
    return set(_rows(spec, layer)[field])


def test_the_bounds_chart_marks_the_budget_and_what_training_may_use_of_it() -> None:
    models = _bounds([10.0, 12.0], [11.0, 15.0])
    spec = charts_sizing.bounds(models, budget_gib=240.0, usable_gib=200.0).to_dict()
    layers = _layers(spec)

    assert set(layers) == {"bound", "predicted", "budget"}
    limits = _rows(spec, layers["budget"]).set_index("limit")["gib"]
    assert limits.to_dict() == {"budget": 240.0, "budget less headroom": 200.0}
    assert _rows(spec, layers["bound"])["upper_gib"].tolist() == [11.0, 15.0]


def test_every_mark_of_the_bounds_chart_has_a_legend_entry() -> None:
    spec = charts_sizing.bounds(_bounds([10.0, 12.0], [11.0, 15.0]), 240.0, 200.0).to_dict()
    layers = _layers(spec)

    assert _legend_fields(layers["predicted"]) == {"point"}
    assert _legend_entries(spec, layers["predicted"], "point") == {"predicted peak"}
    assert _legend_fields(layers["bound"]) == _legend_fields(layers["budget"]) == {"line"}
    assert _legend_entries(spec, layers["bound"], "line") == {"predicted to upper bound"}
    assert _legend_entries(spec, layers["budget"], "line") == {"budget", "budget less headroom"}


def test_a_dashed_line_and_a_solid_one_are_told_apart_in_the_bounds_legend() -> None:
    # Vega's ~10 px line sample is one period of the headroom's 4+4 px dash: it looked solid.
    spec = charts_sizing.bounds(_bounds([10.0], [11.0]), 240.0, 200.0).to_dict()
    dash = _layers(spec)["budget"]["encoding"]["strokeDash"]

    period_px = sum(charts_sizing.REFERENCE_DASH)
    assert dash["legend"]["symbolSize"] ** 0.5 >= 2 * period_px


def test_bounds_within_ten_fold_of_each_other_are_drawn_on_a_linear_axis_from_zero() -> None:
    spec = charts_sizing.bounds(_bounds([10.0, 40.0], [20.0, 150.0]), 240.0, 200.0).to_dict()
    x = _layers(spec)["bound"]["encoding"]["x"]

    assert x["scale"] == {"zero": True}
    assert x["title"] == "GiB"


def test_one_bound_over_ten_times_another_puts_the_axis_on_a_log_scale() -> None:
    models = _bounds([10.0, 100.0], [12.0, 480.0])  # 480 > 10 x 12
    spec = charts_sizing.bounds(models, 240.0, 200.0).to_dict()
    layers = _layers(spec)

    assert charts_sizing.bounds_scale_is_log(models)
    for name in ("bound", "predicted", "budget"):
        assert layers[name]["encoding"]["x"]["scale"] == {"type": "log"}
        assert layers[name]["encoding"]["x"]["title"] == "GiB (log scale)"
    # A model predicting nothing (<= 0) has no place on a log axis: it is left out, not drawn at 0.
    assert not charts_sizing.bounds_scale_is_log(_bounds([-1.0, 5.0], [0.0, 40.0]))


def test_the_memory_timeline_names_the_curve_every_rule_and_the_steps_in_legends() -> None:
    timeline = pd.DataFrame({"t_s": [0.0, 1.0, 2.0], "rss_gib": [0.2, 1.5, 1.4]})
    marks = pd.DataFrame(
        {
            "mark": ["sampled peak", "kernel high-water mark", "after framework import"],
            "gib": [1.5, 1.52, 0.2],
        }
    )
    steps = pd.DataFrame({"step": [1], "start_s": [0.5], "end_s": [1.5], "hwm_gib": [1.5]})
    spec = charts_sweeps.memory_timeline(timeline, marks, steps).to_dict()
    layers = _layers(spec)

    assert _legend_fields(layers["timeline"]) == _legend_fields(layers["peaks"]) == {"drawn"}
    assert _legend_entries(spec, layers["timeline"], "drawn") == {"resident memory (sampled)"}
    assert _legend_entries(spec, layers["peaks"], "mark") == set(marks["mark"])
    colour = layers["peaks"]["encoding"]["color"]["scale"]["domain"]
    assert colour == ["resident memory (sampled)", *marks["mark"]]
    assert _legend_fields(layers["steps"]) == {"shaded"}
    assert _legend_entries(spec, layers["steps"], "shaded") == {"training step"}


def test_reference_lines_and_the_spread_between_machines_are_named_in_legends(runs) -> None:
    points = _held_out(runs)
    identity = _layers(charts_models.parity(points).to_dict())["identity"]
    zero = _layers(charts_models.residuals(points).to_dict())["zero"]

    assert _legend_fields(identity) == _legend_fields(zero) == {"reference"}
    assert identity["encoding"]["strokeDash"]["scale"]["domain"] == ["predicted = measured"]
    assert zero["encoding"]["strokeDash"]["scale"]["domain"] == ["no error"]

    compared = pd.DataFrame(
        {
            "configuration": ["32 batch 1", "32 batch 1"],
            "machine": ["a", "b"],
            "machine_profile": ["ka", "kb"],
            "runs": [1, 1],
            "peak_gib": [1.0, 2.0],
            "ratio": [1.0, 2.0],
        }
    )
    spread = _layers(charts_sweeps.machines_compared(compared).to_dict())["spread"]
    assert _legend_fields(spread) == {"joined"}
    assert spread["encoding"]["strokeDash"]["scale"]["domain"] == ["lowest to highest peak"]


def test_the_published_points_sit_beside_our_runs_and_predictions_on_log_axes(runs) -> None:
    measured = curves.with_sample_megavoxels(curves.measured_points(runs))
    predictions = charts_study.study_predictions(curves.closed_form_models(runs))
    published = charts_study.published_frame()
    spec = charts_study.published_points(measured, predictions, published).to_dict()
    layers = _layers(spec)

    for name in ("measured", "predicted", "published_peak", "servers"):
        assert layers[name]["encoding"]["y"]["scale"]["type"] == "log"
    assert layers["measured"]["encoding"]["x"]["scale"]["type"] == "log"
    # The published peak is a labelled point at the study's 240x240x144 x 16; servers are rules.
    [peak] = _rows(spec, layers["published_peak"]).to_dict("records")
    assert peak["sample_megavoxels"] == pytest.approx(240 * 240 * 144 * 16 / 1e6)
    assert peak["gib"] == 1024
    assert _rows(spec, layers["published_peak_label"])["label"].tolist() == [peak["label"]]
    servers = _rows(spec, layers["servers"])
    assert sorted(servers["gib"]) == [192, 384, 1536]
    assert len(servers) + 1 == len(PUBLISHED_POINTS)
    assert _rows(spec, layers["server_labels"])["label"].tolist() == servers["label"].tolist()
    # Our models' predictions for that configuration, one per model.
    drawn = _rows(spec, layers["predicted"])
    assert set(drawn["model"]) == {"paper", "refined"}
    assert set(drawn["sample_megavoxels"]) == {peak["sample_megavoxels"]}
    # Every mark in a legend: what each dot is, our models by colour, servers by outcome.
    assert _legend_entries(spec, layers["measured"], "series") == {"our runs (measured)"}
    assert _legend_entries(spec, layers["published_peak"], "series") == {"published peak"}
    assert _legend_fields(layers["predicted"]) == {"series", "title"}
    assert _legend_fields(layers["servers"]) == {"outcome"}


def test_a_model_far_above_the_others_is_found_so_the_axes_can_start_logarithmic() -> None:
    def curve(title: str, peaks: list[float]) -> pd.DataFrame:
        return pd.DataFrame({"title": title, "predicted_gib": peaks})

    close = pd.concat([curve("a", [1.0, 8.0]), curve("b", [1.2, 9.0]), curve("c", [0.9, 7.0])])
    towering = pd.concat([close, curve("huge", [10.0, 95.0])])

    assert curves.dwarfing(close) == []
    assert curves.dwarfing(towering) == ["huge"]
    assert curves.dwarfing(curve("alone", [1.0, 500.0])) == []


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
    spec = charts_models.peak_vs_size(points, curve, dims=2).to_dict()
    title = _layers(spec)["predicted"]["encoding"]["x"]["title"]
    assert title == "image side (pixels; square root of H x W)"
    assert charts_models.SIDE_TITLE == "image side (voxels; cube root of D x H x W)"
