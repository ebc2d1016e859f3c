"""The paper's analytical model and the refined closed-form model, and their estimators."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from core.analytical import (
    DEFAULT_FRAMEWORK_BYTES,
    REFINED_TERM_COLUMNS,
    MemoryBreakdown,
    backprop_workspace_bytes,
    paper_estimate,
    refined_breakdown,
)
from core.workloads.base import (
    activation_bytes_per_sample,
    paper_activation_bytes,
    paper_weight_bytes,
    parameter_counts,
)
from core.workloads.unet3d import ADAM_SLOTS, UNetConfig
from modeling.estimators.analytical import PaperModel, RefinedAnalyticalModel
from modeling.features import config_frame

REFERENCE_64 = UNetConfig((64, 64, 64), batch_size=2)


def test_paper_estimate_is_eq1_plus_eq2() -> None:
    for config in (REFERENCE_64, UNetConfig((32, 48, 64), 3, levels=4, precision="mixed_float16")):
        estimate = paper_estimate(config)

        assert estimate.activation_bytes == paper_activation_bytes(config)
        assert estimate.weight_bytes == paper_weight_bytes(config)
        assert estimate.total_bytes == estimate.activation_bytes + estimate.weight_bytes


def test_refined_breakdown_names_every_term_and_sums_to_its_total() -> None:
    breakdown = refined_breakdown(REFERENCE_64, framework_bytes=700 * 2**20)

    assert list(breakdown.parts()) == [field.name for field in dataclasses.fields(MemoryBreakdown)]
    assert breakdown.total_bytes == sum(breakdown.parts().values())
    assert breakdown.framework_bytes == 700 * 2**20


def test_refined_model_state_is_weights_gradients_and_two_adam_slots() -> None:
    total, trainable = parameter_counts(REFERENCE_64)
    breakdown = refined_breakdown(REFERENCE_64)

    assert breakdown.weight_bytes == 4 * total
    assert breakdown.gradient_bytes == 4 * trainable
    assert breakdown.optimizer_bytes == ADAM_SLOTS * 4 * trainable == 8 * 5_647_857


def test_refined_per_batch_terms_scale_with_batch_and_model_state_does_not() -> None:
    one = refined_breakdown(dataclasses.replace(REFERENCE_64, batch_size=1))
    eight = refined_breakdown(dataclasses.replace(REFERENCE_64, batch_size=8))

    for term in ("activation_bytes", "backward_bytes", "input_bytes"):
        assert getattr(eight, term) == 8 * getattr(one, term)
    for term in ("weight_bytes", "gradient_bytes", "optimizer_bytes", "framework_bytes"):
        assert getattr(eight, term) == getattr(one, term)


def test_refined_keeps_fewer_activations_than_eq1_because_batchnorm_outputs_are_freed() -> None:
    # Each block keeps conv and relu outputs, not the batchnorm output between them.
    kept = refined_breakdown(REFERENCE_64).activation_bytes
    eq1 = paper_activation_bytes(REFERENCE_64)

    assert 0.70 * eq1 < kept < 0.80 * eq1


def test_backward_buffers_are_two_of_the_widest_layer_per_sample() -> None:
    # The widest reference layer at 64^3 is the 32-channel concat0: 64^3 x 32 x 4 bytes.
    breakdown = refined_breakdown(REFERENCE_64)

    assert breakdown.backward_bytes == 2 * 2 * (64**3 * 32 * 4)


def test_half_precision_halves_kept_activations_but_the_float32_batchnorm_inputs() -> None:
    # Keras's BatchNormalization upcasts its input to float32, and its gradient keeps
    # that copy: every block conv's output stays 4 bytes a value. What halves are the
    # ReLU, pooling, upsampling and concatenation outputs.
    full = refined_breakdown(REFERENCE_64)
    half = refined_breakdown(dataclasses.replace(REFERENCE_64, precision="mixed_bfloat16"))
    halved_kinds = {"relu", "maxpool", "conv3d_transpose", "concat"}
    halved_values = sum(
        layer.elements for layer in REFERENCE_64.layers() if layer.kind in halved_kinds
    )

    assert full.activation_bytes - half.activation_bytes == 2 * 2 * halved_values
    assert half.optimizer_bytes == full.optimizer_bytes


def test_conv_gradient_workspace_is_one_images_largest_im2col_buffer() -> None:
    # At 128^3 the largest is decode0's first conv: 128^3 positions x 27 taps x 32
    # input channels (16 upsampled + 16 skipped), float32. With UpSampling3D the 32
    # channels of the level below arrive unreduced: 32 + 16 = 48. The batch is no factor.
    transpose = UNetConfig((128, 128, 128), batch_size=1)

    assert backprop_workspace_bytes(transpose) == 128**3 * 27 * 32 * 4
    assert backprop_workspace_bytes(dataclasses.replace(transpose, batch_size=8)) == (
        backprop_workspace_bytes(transpose)
    )
    upsample = dataclasses.replace(transpose, upsampling="upsample")
    assert backprop_workspace_bytes(upsample) == 128**3 * 27 * 48 * 4
    half = dataclasses.replace(transpose, precision="mixed_bfloat16")
    assert backprop_workspace_bytes(half) == 128**3 * 27 * 32 * 2


def test_refined_rejects_a_negative_framework_baseline() -> None:
    with pytest.raises(ValueError, match="framework_bytes must be >= 0, got -1"):
        refined_breakdown(REFERENCE_64, framework_bytes=-1)


def test_paper_model_predicts_eq1_plus_eq2_from_the_feature_frame() -> None:
    configs = [REFERENCE_64, UNetConfig((96, 96, 96), 4)]
    frame = config_frame(configs)

    predicted = PaperModel().fit(frame).predict(frame)

    assert predicted.tolist() == [float(paper_estimate(c).total_bytes) for c in configs]


def test_refined_estimator_learns_only_the_median_measured_baseline() -> None:
    frame = config_frame([REFERENCE_64] * 3)
    frame["baseline_bytes"] = [600e6, 700e6, 900e6]

    model = RefinedAnalyticalModel().fit(frame, y=np.array([1e12, 1e12, 1e12]))

    assert model.framework_bytes_ == 700_000_000
    assert model.predict(frame)[0] == refined_breakdown(REFERENCE_64, 700_000_000).total_bytes


def test_refined_estimator_falls_back_to_the_default_baseline_without_measurements() -> None:
    frame = config_frame([REFERENCE_64])

    model = RefinedAnalyticalModel().fit(frame)

    assert model.framework_bytes_ == DEFAULT_FRAMEWORK_BYTES
    assert "default" in model.framework_source_


def test_analytical_estimators_refuse_to_predict_before_fit() -> None:
    frame = config_frame([REFERENCE_64])

    with pytest.raises(NotFittedError):
        RefinedAnalyticalModel().predict(frame)
    with pytest.raises(NotFittedError):
        PaperModel().predict(frame)


def test_analytical_estimators_name_missing_columns() -> None:
    with pytest.raises(ValueError, match="missing: paper_weight_bytes"):
        PaperModel().fit(pd.DataFrame({"paper_activation_bytes": [1.0]}))
    with pytest.raises(TypeError, match="got ndarray"):
        RefinedAnalyticalModel().fit(np.zeros((2, len(REFINED_TERM_COLUMNS))))


def test_eq1_per_sample_at_64_cubed_is_about_324_mib() -> None:
    # A sanity anchor for the numbers quoted in the docs.
    per_sample_mib = activation_bytes_per_sample(UNetConfig((64, 64, 64))) / 2**20

    assert per_sample_mib == pytest.approx(323.78, abs=0.01)
