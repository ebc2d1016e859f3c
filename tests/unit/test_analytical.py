"""The paper's analytical model and the refined closed-form model, and their estimators."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from core.analytical import (
    DEFAULT_FRAMEWORK_BYTES,
    FILTER_GRADIENT,
    INPUT_GRADIENT,
    REFINED_TERM_COLUMNS,
    Conv3DShape,
    MemoryBreakdown,
    backprop_workspace_bytes,
    conv_gradient_buffers,
    im2col_touched_bytes,
    paper_estimate,
    refined_breakdown,
)
from core.kept_tensors import backward_live, kept_tensors
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
    # ReLU, pooling, upsampling and concatenation outputs; the casts at the two ends
    # add a bfloat16 copy of the images and a float32 copy of the last ReLU's output.
    full = refined_breakdown(REFERENCE_64)
    half = refined_breakdown(dataclasses.replace(REFERENCE_64, precision="mixed_bfloat16"))
    halved_kinds = {"relu", "maxpool", "conv3d_transpose", "concat"}
    halved_values = sum(
        layer.elements for layer in REFERENCE_64.layers() if layer.kind in halved_kinds
    )
    casts = 2 * (64**3 * 1 * 2 + 64**3 * 16 * 4)

    assert full.activation_bytes - half.activation_bytes == 2 * 2 * halved_values - casts
    assert half.optimizer_bytes == full.optimizer_bytes


def test_mixed_precision_keeps_the_cast_copies_its_gradients_read() -> None:
    # Keras casts what a layer reads in another dtype, and the layer's kernel gradient
    # needs its input as it read it: the first convolution reads the float32 images in
    # bfloat16, the float32 mask layer reads the last ReLU's 16 bfloat16 channels in
    # float32. Under float32 nothing is cast, so nothing is kept twice.
    bfloat16 = dataclasses.replace(REFERENCE_64, precision="mixed_bfloat16")
    voxels = 64**3

    kept = kept_tensors(bfloat16, bfloat16.layers())

    assert kept[:2] == [(voxels, 4), (voxels, 2)]  # the images, and their bfloat16 copy
    assert kept[-3:] == [(voxels * 16, 2), (voxels * 16, 4), (voxels, 4)]  # ... and the mask
    per_sample = sum(elements * value_bytes for elements, value_bytes in kept)
    assert refined_breakdown(bfloat16).activation_bytes == 2 * per_sample
    float32 = kept_tensors(REFERENCE_64, REFERENCE_64.layers())
    assert len(float32) == len(kept) - 2 and {value for _, value in float32} == {4}


def test_mixed_precision_keeps_float32_state_and_a_bfloat16_copy_of_each_cast_weight() -> None:
    # Variables, their gradients and Adam's slots stay float32; every convolution reads
    # its kernel and bias through a cast to bfloat16. BatchNormalization casts its
    # weights to float32 and the float32 mask layer casts none.
    bfloat16 = dataclasses.replace(REFERENCE_64, precision="mixed_bfloat16")
    cast = {"conv3d", "conv3d_transpose"}
    cast_params = sum(layer.params for layer in bfloat16.layers() if layer.kind in cast)
    full, half = refined_breakdown(REFERENCE_64), refined_breakdown(bfloat16)

    assert half.weight_bytes == full.weight_bytes + 2 * cast_params
    assert (half.gradient_bytes, half.optimizer_bytes) == (
        full.gradient_bytes,
        full.optimizer_bytes,
    )


def test_batchnormalization_differentiates_in_float32_under_every_policy() -> None:
    # Its normalisation's, variance's and mean's gradients and their sum: four float32
    # tensors of a 16-channel input at 64^3. Under float32 that ties with two gradients of
    # the 32-channel concat0; under mixed_bfloat16 the concatenation's halve, these do not.
    bfloat16 = dataclasses.replace(REFERENCE_64, precision="mixed_bfloat16")
    normalising = 4 * 64**3 * 16 * 4

    assert backward_live(REFERENCE_64, REFERENCE_64.layers()) == normalising
    assert backward_live(bfloat16, bfloat16.layers()) == normalising
    full, half = refined_breakdown(REFERENCE_64), refined_breakdown(bfloat16)
    assert half.backward_bytes == full.backward_bytes == 2 * normalising
    # With UpSampling3D concat0 holds 48 channels: its two gradients are the larger.
    upsample = dataclasses.replace(REFERENCE_64, upsampling="upsample")
    assert backward_live(upsample, upsample.layers()) == 2 * 64**3 * 48 * 4


def test_without_the_l3_cache_the_workspace_is_one_images_largest_im2col_buffer() -> None:
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


# The U-Net's widest convolution at 32^3 (decode0_conv0: 32 channels in, 16 out).
DECODE0_32 = Conv3DShape(
    batch=1, input_elements=32**3 * 32, positions=32**3, patch=27 * 32, filters=16
)
ONE_IMAGE_FLOAT32 = 32**3 * 27 * 32 * 4  # 108 MiB
# The L3 cache an AVX2 AMD EPYC VM reports (getconf), which its kernels were measured to use.
EPYC_VM_L3 = 256 * 2**20


def test_a_batch_of_one_writes_one_images_im2col_buffer() -> None:
    assert im2col_touched_bytes(DECODE0_32, INPUT_GRADIENT, 4, EPYC_VM_L3) == ONE_IMAGE_FLOAT32
    # The filter gradient would shard 3 images; with one image its buffer is 53 times
    # the op's tensors, over the limit of 25, so TensorFlow runs Eigen's kernel.
    assert im2col_touched_bytes(DECODE0_32, FILTER_GRADIENT, 4, EPYC_VM_L3) == 0


def test_the_l3_cache_sets_how_many_images_a_buffer_holds_and_when_kernels_fall_back() -> None:
    batch_2 = dataclasses.replace(DECODE0_32, batch=2)
    batch_4 = dataclasses.replace(DECODE0_32, batch=4)

    # 256 MiB / 4 bytes over one image's ~28.8 M values: 3 images a buffer. At batch 2
    # that is 26 times the tensors (fallback); at batch 4, 13 times (3 images written).
    assert im2col_touched_bytes(batch_2, FILTER_GRADIENT, 4, EPYC_VM_L3) == 0
    assert im2col_touched_bytes(batch_4, FILTER_GRADIENT, 4, EPYC_VM_L3) == 3 * ONE_IMAGE_FLOAT32
    assert im2col_touched_bytes(batch_4, INPUT_GRADIENT, 4, EPYC_VM_L3) == 3 * ONE_IMAGE_FLOAT32
    # bfloat16: twice the values fit, 5 images a buffer, of which a batch of 4 writes 4.
    assert im2col_touched_bytes(batch_4, FILTER_GRADIENT, 2, EPYC_VM_L3) == (
        4 * ONE_IMAGE_FLOAT32 // 2
    )
    # A 32 MiB cache holds less than an image: one image a buffer, never a fallback here.
    assert im2col_touched_bytes(batch_2, FILTER_GRADIENT, 4, 32 * 2**20) == ONE_IMAGE_FLOAT32


def test_an_unknown_gradient_kernel_is_refused() -> None:
    with pytest.raises(ValueError, match="gradient 'bias' is not one of input, filter"):
        im2col_touched_bytes(DECODE0_32, "bias", 4, EPYC_VM_L3)


def test_with_the_l3_cache_the_workspace_is_the_largest_layers_two_gradient_buffers() -> None:
    config = UNetConfig((64, 64, 64), batch_size=1)
    buffers = {b.layer: b for b in conv_gradient_buffers(config, EPYC_VM_L3)}

    # The images need no gradient: the first convolution has no input buffer.
    assert buffers["encode0_conv0"].input_bytes == 0
    widest = buffers["decode0_conv0"]
    assert widest.input_bytes == widest.filter_bytes == 64**3 * 27 * 32 * 4
    assert backprop_workspace_bytes(config, EPYC_VM_L3) == 2 * 64**3 * 27 * 32 * 4


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
