"""What the Models and Sizing pages plot and tabulate, computed without Streamlit."""

from typing import Any

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, RegressorMixin

from application.sizing import usable_budget_bytes
from core.analytical import paper_estimate, refined_breakdown
from core.workloads.alexnet import AlexNetConfig
from core.workloads.unet3d import UNetConfig
from modeling.estimators.analytical import PaperModel, RefinedAnalyticalModel
from modeling.evaluation.bounds import ConformalBound
from modeling.features import config_frame, measured_frame
from modeling.stored.predictor import Predictor, TrainingRange
from presentation import curves, sizing_text, sizing_view
from tests.conftest import SYNTHETIC_FRAMEWORK_BYTES, build_record, build_runs

GIB = 2**30


def test_the_closed_form_models_compute_what_the_stored_analytical_models_do() -> None:
    runs = build_runs(sides=(32, 64), batches=(1, 4))
    frame = measured_frame(runs)
    paper, refined = curves.closed_form_models(runs)
    configs = [UNetConfig((s, s, s), b) for s in (48, 96, 160) for b in (1, 3, 16)]
    features = config_frame(configs)

    stored_paper = PaperModel().fit(frame).predict(features)
    stored_refined = RefinedAnalyticalModel().fit(frame).predict(features)

    assert (paper.name, refined.name) == ("paper", "refined")
    np.testing.assert_allclose(paper.point_bytes(configs), stored_paper)
    np.testing.assert_allclose(refined.point_bytes(configs), stored_refined)


def test_the_framework_baseline_is_the_median_measured_one_or_the_default() -> None:
    runs = pd.DataFrame(
        [
            build_record(baseline_bytes=600 * 2**20).row(),
            build_record(baseline_bytes=700 * 2**20).row(),
            build_record(baseline_bytes=900 * 2**20).row(),
            build_record(baseline_bytes=100, status="oom").row(),  # not a finished run
        ]
    )
    assert curves.framework_bytes(runs) == 700 * 2**20
    assert (
        curves.framework_bytes(runs.iloc[3:])
        == refined_breakdown(UNetConfig((16, 16, 16))).framework_bytes
    )


def test_measured_points_keep_finished_runs_with_their_peak_in_gib() -> None:
    runs = pd.DataFrame(
        [
            build_record(
                run_id="cube",
                depth=64,
                height=64,
                width=64,
                peak_hwm_bytes=2 * GIB,
                peak_sampled_bytes=GIB,
            ).row(),
            build_record(run_id="box", depth=32, height=64, width=128, batch_size=2).row(),
            build_record(run_id="lost", status="oom", peak_hwm_bytes=None).row(),
        ]
    )
    points = curves.measured_points(runs)

    assert list(points.index) == ["cube", "box"]
    assert points.loc["cube", ["image", "peak_gib", "sampled_gib"]].tolist() == ["64", 2.0, 1.0]
    assert points.loc["box", "image"] == "32x64x128"
    assert points.loc["box", "side"] == pytest.approx(64.0)


def test_networks_are_listed_most_measured_first_and_filter_the_points() -> None:
    runs = pd.DataFrame(
        [
            build_record(base_filters=8).row(),
            build_record(precision="mixed_float16", batch_size=1).row(),
            build_record(precision="mixed_float16", batch_size=2).row(),
        ]
    )
    points = curves.measured_points(runs)
    first, second = curves.networks(points)

    assert (first["precision"], first["base_filters"]) == ("mixed_float16", 16)
    assert (second["precision"], second["base_filters"]) == ("float32", 8)
    assert len(curves.with_knobs(points, first)) == 2
    assert curves.network_label(second) == "8 base filters, 5 levels, float32, transpose"


def test_curves_hold_one_prediction_per_model_batch_and_side() -> None:
    paper, refined = curves.closed_form_models(build_runs())
    frame = curves.predicted_curves([paper, refined], sides=[16, 32, 48], batch_sizes=[1, 4])

    assert len(frame) == 2 * 2 * 3
    row = frame[(frame["model"] == "refined") & (frame["side"] == 48) & (frame["batch_size"] == 4)]
    expected = refined.point_bytes([UNetConfig((48, 48, 48), 4)])[0] / GIB
    assert row["predicted_gib"].item() == pytest.approx(expected)
    assert set(frame["title"]) == {curves.PAPER_TITLE, curves.REFINED_TITLE}


def test_curves_follow_the_knobs_they_are_drawn_for() -> None:
    (paper,) = curves.closed_form_models(build_runs())[:1]
    reference = curves.predicted_curves([paper], [64], [2])
    halved = curves.predicted_curves([paper], [64], [2], {"base_filters": np.int64(8)})

    assert halved["predicted_gib"].item() < reference["predicted_gib"].item()
    expected = paper_estimate(UNetConfig((64, 64, 64), 2, base_filters=8)).total_bytes / GIB
    assert halved["predicted_gib"].item() == pytest.approx(expected)


def test_predictions_at_points_carry_the_signed_percentage_error() -> None:
    runs = build_runs(sides=(32, 64), batches=(1,))
    points = curves.measured_points(runs)
    paper, _ = curves.closed_form_models(runs)
    frame = curves.predictions_at_points([paper], points)

    assert len(frame) == 2
    first = frame.iloc[0]
    expected = (first["predicted_gib"] - first["measured_gib"]) / first["measured_gib"] * 100
    assert first["error_pct"] == pytest.approx(expected)
    assert (frame["error_pct"] < 0).all()  # the paper's model misses the framework entirely


def _stored_predictions(points: pd.DataFrame) -> pd.DataFrame:
    run_ids = list(points.index)
    return pd.DataFrame(
        {
            "evaluation_id": "e",
            "model": ["symbolic", "symbolic", "paper", "symbolic"],
            "split": ["random", "random", "random", "extrapolation"],
            "seed": [0, 1, 0, 0],
            "run_id": [run_ids[0], run_ids[1], run_ids[0], run_ids[1]],
            "measured_bytes": [GIB, 2 * GIB, GIB, 2 * GIB],
            "predicted_bytes": [1.1 * GIB, 1.8 * GIB, 0.5 * GIB, 3 * GIB],
        }
    )


def test_held_out_points_are_the_stored_predictions_of_one_split_with_their_runs() -> None:
    points = curves.measured_points(build_runs(sides=(32, 64), batches=(1,)))
    stored = _stored_predictions(points)
    frame = curves.held_out_points(stored, points, {"symbolic": "SR"})

    assert len(frame) == 3
    assert set(frame["title"]) == {"SR", "paper"}  # an unknown title falls back to the name
    symbolic = frame[frame["model"] == "symbolic"].sort_values("seed")
    assert symbolic["error_pct"].tolist() == pytest.approx([10.0, -10.0])
    assert symbolic["side"].tolist() == pytest.approx([32.0, 64.0])
    extrapolation = curves.held_out_points(stored, points, {}, split="extrapolation")
    assert extrapolation["error_pct"].tolist() == pytest.approx([50.0])


def test_held_out_points_of_deleted_runs_are_dropped() -> None:
    points = curves.measured_points(build_runs(sides=(32, 64), batches=(1,)))
    stored = _stored_predictions(points)
    assert len(curves.held_out_points(stored, points.iloc[:1], {})) == 2
    assert curves.held_out_points(stored.iloc[:0], points, {}).empty


class Linear(RegressorMixin, BaseEstimator):
    """peak = bytes_per_voxel x voxels x batch: tiny, so the closed-form floor exceeds it."""

    def __init__(self, *, bytes_per_voxel: float = 2000.0) -> None:
        self.bytes_per_voxel = bytes_per_voxel

    def fit(self, X: Any = None, y: Any = None) -> "Linear":
        self.fitted_ = True
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        voxels = X["depth"] * X["height"] * X["width"] * X["batch_size"]
        return (self.bytes_per_voxel * voxels).to_numpy(float)


KNOBS = {
    "base_filters": (16,),
    "levels": (5,),
    "in_channels": (1,),
    "classes": (1,),
    "precision": ("float32",),
    "upsampling": ("transpose",),
}


def _predictor(bytes_per_voxel: float) -> Predictor:
    return Predictor(
        name="linear",
        title="linear",
        kind="test",
        estimator=Linear(bytes_per_voxel=bytes_per_voxel).fit(),
        columns=("depth", "height", "width", "batch_size"),
        bound=ConformalBound(0.9, 1.25, 100, "constructed"),
        extrapolation_bound=ConformalBound(0.9, 1.5, 20, "constructed"),
        training_range=TrainingRange(
            32.0,
            128.0,
            16,
            128**3 * 16 / 1e6,
            20 * GIB,
            KNOBS,
            framework_bytes=SYNTHETIC_FRAMEWORK_BYTES,
        ),
    )


def test_config_predictions_give_each_models_point_and_bound() -> None:
    config = UNetConfig((128, 128, 128), 4)
    big = _predictor(bytes_per_voxel=1e5)
    row = sizing_view.config_predictions([big], [config]).iloc[0]

    predicted = 1e5 * 128**3 * 4
    assert row["predicted_bytes"] == pytest.approx(predicted)
    assert row["upper_bytes"] == pytest.approx(1.25 * predicted)
    assert row["upper_bytes"] == pytest.approx(big.upper_bytes([config])[0])
    assert not row["raised_to_closed_form"]
    assert row["beyond"] == ""


def test_config_predictions_cover_every_model_and_configuration_asked_for() -> None:
    configs = [UNetConfig((64, 64, 64), batch) for batch in (1, 2, 3)]
    models = [_predictor(bytes_per_voxel=1e5), _predictor(bytes_per_voxel=2e5)]
    frame = sizing_view.config_predictions(models, configs)

    assert len(frame) == 2 * 3
    assert frame["batch_size"].tolist() == [1, 2, 3, 1, 2, 3]
    assert frame["image_shape"].iloc[0] == (64, 64, 64)
    assert frame["predicted_bytes"].iloc[5] == pytest.approx(2e5 * 64**3 * 3)
    assert sizing_view.config_predictions(models, []).empty


def test_a_bound_below_the_closed_form_estimate_is_raised_to_it() -> None:
    config = UNetConfig((64, 64, 64), 2)
    row = sizing_view.config_predictions([_predictor(bytes_per_voxel=1.0)], [config]).iloc[0]
    closed_form = refined_breakdown(config, SYNTHETIC_FRAMEWORK_BYTES).total_bytes

    assert row["raised_to_closed_form"]
    assert row["upper_bytes"] == pytest.approx(closed_form)


def test_a_configuration_beyond_the_measured_runs_says_how() -> None:
    config = UNetConfig((256, 256, 256), 4, base_filters=32)
    row = sizing_view.config_predictions([_predictor(bytes_per_voxel=1e5)], [config]).iloc[0]

    assert "larger than the largest measured" in row["beyond"]
    assert "base_filters 32 was never measured" in row["beyond"]
    assert row["bound_ratio"] == 1.5  # the extrapolation split's bound applies


def test_the_usable_budget_leaves_the_headroom_free() -> None:
    assert usable_budget_bytes(240 * GIB, 0.2) == 200 * GIB
    assert usable_budget_bytes(64 * GIB, 0.0) == 64 * GIB
    with pytest.raises(ValueError, match="headroom must be >= 0"):
        usable_budget_bytes(64 * GIB, -0.1)


def test_the_breakdown_frame_lists_every_term_in_order_and_sums_to_the_total() -> None:
    breakdown = refined_breakdown(UNetConfig((96, 96, 96), 2), 700 * 2**20)
    frame = sizing_text.breakdown_frame(breakdown)

    assert frame["term"].tolist() == [
        "framework",
        "weights",
        "gradients",
        "optimizer (Adam)",
        "activations",
        "backward pass",
        "input batch",
    ]
    assert frame["gib"].sum() == pytest.approx(breakdown.total_bytes / GIB)
    assert frame["share_pct"].sum() == pytest.approx(100.0)


# --- AlexNet: 2D images, its own knobs ---------------------------------------------------

ALEXNET = {
    "workload": "alexnet",
    "depth": None,
    "height": 224,
    "width": 224,
    "base_filters": None,
    "levels": None,
    "upsampling": None,
    "in_channels": 3,
    "classes": 1000,
}


def alexnet_record(**overrides: Any):
    return build_record(**(ALEXNET | overrides))


def test_alexnet_points_are_labelled_as_2d_images_at_their_squares_side() -> None:
    runs = pd.DataFrame(
        [
            alexnet_record(run_id="square", peak_hwm_bytes=2 * GIB).row(),
            alexnet_record(run_id="oblong", height=227, width=200, batch_size=8).row(),
            build_record(run_id="cube").row(),
        ]
    )
    points = curves.measured_points(runs)

    assert points.loc["square", ["image", "workload", "peak_gib"]].tolist() == [
        "224",
        "alexnet",
        2.0,
    ]
    assert points.loc["oblong", "image"] == "227x200"
    assert points.loc["oblong", "side"] == pytest.approx((227 * 200) ** 0.5)
    assert points.loc["cube", "image"] == "16"


def test_alexnet_networks_are_its_own_knobs_and_its_curves_are_squares() -> None:
    runs = pd.DataFrame(
        [
            alexnet_record().row(),
            alexnet_record(batch_size=2).row(),
            alexnet_record(classes=10).row(),
            build_record().row(),
        ]
    )
    points = curves.measured_points(runs)
    first, second = curves.networks(points, "alexnet")

    assert first == {"in_channels": 3, "classes": 1000, "precision": "float32"}
    assert second["classes"] == 10
    assert len(curves.with_knobs(points, first)) == 2
    assert curves.network_label(first, "alexnet") == "float32"
    assert curves.network_label(second, "alexnet") == "10 classes, float32"
    assert [set(n) for n in curves.networks(points)] == [
        {"base_filters", "levels", "in_channels", "classes", "precision", "upsampling"}
    ]

    (paper,) = curves.closed_form_models(runs)[:1]
    frame = curves.predicted_curves([paper], [67, 224], [1, 4], second, "alexnet")
    row = frame[(frame["side"] == 224) & (frame["batch_size"] == 4)]
    expected = paper_estimate(AlexNetConfig((224, 224), 4, classes=10)).total_bytes / GIB
    assert row["predicted_gib"].item() == pytest.approx(expected)


def test_the_analytical_models_predict_alexnet_runs_at_their_points() -> None:
    runs = pd.DataFrame([alexnet_record(height=h, width=h).row() for h in (128, 224)])
    points = curves.measured_points(runs)
    paper, refined = curves.closed_form_models(runs)
    frame = curves.predictions_at_points([paper, refined], points)

    assert len(frame) == 4
    config = AlexNetConfig((128, 128), 1)
    first = frame[(frame["model"] == "refined") & (frame["image"] == "128")]
    expected = refined.point_bytes([config])[0] / GIB
    assert first["predicted_gib"].item() == pytest.approx(expected)


def test_drawn_sides_thin_a_workload_that_takes_any_side() -> None:
    unet = list(range(16, 513, 16))
    assert curves.drawn_sides(unet) == unet  # 32 sides: each drawn
    alexnet = curves.drawn_sides(list(range(67, 513)))
    assert alexnet[:3] == [67, 72, 80] and alexnet[-1] == 512
    assert len(alexnet) <= curves.MAX_DRAWN_SIDES
    assert alexnet == sorted(set(alexnet))


def test_the_breakdown_names_the_workloads_optimizer() -> None:
    breakdown = refined_breakdown(AlexNetConfig((224, 224), 32), 700 * 2**20)
    frame = sizing_text.breakdown_frame(breakdown, "alexnet")
    assert frame["term"].tolist()[3] == "optimizer (SGD momentum)"
    assert frame["gib"].sum() == pytest.approx(breakdown.total_bytes / GIB)


def test_the_sizing_page_offers_each_workload_its_own_sides_knobs_and_question() -> None:
    runs = pd.DataFrame([alexnet_record(classes=37).row()])
    choices = sizing_view.choices_for("alexnet", ["paper", "refined"], runs)

    assert (choices.sides[0], choices.sides[-1], choices.dims) == (67, 1024, 2)
    assert list(choices.knobs) == ["classes", "precision"]
    assert choices.knobs["classes"] == (10, 37, 100, 1000, 10000)  # with the measured 37
    default = sizing_view.default_state(choices, pd.DataFrame())
    assert (default.image_shape, default.batch_size, default.model) == ((224, 224), 32, "paper")
    assert default.knobs == (("classes", 1000), ("precision", "float32"))
    assert default.config == AlexNetConfig((224, 224), 32)
    assert default.image_label == "224^2"

    unet = sizing_view.choices_for("unet3d", [], build_runs(sides=(32,), batches=(1,)))
    assert list(unet.knobs) == ["base_filters", "precision"]
    assert unet.sides[:2] == (16, 32)
    assert sizing_view.default_state(unet, pd.DataFrame()).config == UNetConfig((128,) * 3, 4)
    assert sizing_view.side_help(unet).startswith("Multiples of 16")
    assert sizing_view.side_help(choices).startswith("Any side from 67")
