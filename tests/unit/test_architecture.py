"""The closed-form U-Net description, checked by hand and by arithmetic, without TensorFlow."""

import subprocess
import sys
from pathlib import Path

import pytest

from core.workloads.base import (
    BYTES_PER_ELEMENT,
    LayerOutput,
    activation_bytes_per_sample,
    activation_elements_per_sample,
    layer_outputs,
    output_dtype,
    paper_activation_bytes,
    paper_weight_bytes,
    parameter_counts,
)
from core.workloads.unet3d import UNetConfig

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def test_reference_network_has_the_published_parameter_counts() -> None:
    total, trainable = parameter_counts(UNetConfig(image_shape=(144, 144, 144)))

    assert (total, trainable) == (5_650_801, 5_647_857)


def test_parameter_counts_do_not_depend_on_image_shape_or_batch() -> None:
    small = UNetConfig(image_shape=(16, 16, 16))
    large = UNetConfig(image_shape=(128, 160, 192), batch_size=4)

    assert parameter_counts(small) == parameter_counts(large)


def test_two_level_network_matches_a_hand_count() -> None:
    config = UNetConfig(image_shape=(4, 4, 4), base_filters=2, levels=2)
    # conv params = 27 * in * out + out; batchnorm = 4 per channel, 2 of them trainable;
    # transpose = 8 * in * out + out; mask = in * classes + classes. Each convolution's
    # window side is there for the builders: 3 in the blocks, 2 up, 1 for the mask.
    expected = [
        LayerOutput("images", "input", (4, 4, 4, 1), 0, 0),
        LayerOutput("encode0_conv0", "conv3d", (4, 4, 4, 2), 27 * 1 * 2 + 2, 56, kernel=3),
        LayerOutput("encode0_bn0", "batchnorm", (4, 4, 4, 2), 8, 4),
        LayerOutput("encode0_relu0", "relu", (4, 4, 4, 2), 0, 0),
        LayerOutput("encode0_conv1", "conv3d", (4, 4, 4, 2), 27 * 2 * 2 + 2, 110, kernel=3),
        LayerOutput("encode0_bn1", "batchnorm", (4, 4, 4, 2), 8, 4),
        LayerOutput("encode0_relu1", "relu", (4, 4, 4, 2), 0, 0),
        LayerOutput("pool0", "maxpool", (2, 2, 2, 2), 0, 0),
        LayerOutput("bottom_conv0", "conv3d", (2, 2, 2, 4), 27 * 2 * 4 + 4, 220, kernel=3),
        LayerOutput("bottom_bn0", "batchnorm", (2, 2, 2, 4), 16, 8),
        LayerOutput("bottom_relu0", "relu", (2, 2, 2, 4), 0, 0),
        LayerOutput("bottom_conv1", "conv3d", (2, 2, 2, 4), 27 * 4 * 4 + 4, 436, kernel=3),
        LayerOutput("bottom_bn1", "batchnorm", (2, 2, 2, 4), 16, 8),
        LayerOutput("bottom_relu1", "relu", (2, 2, 2, 4), 0, 0),
        LayerOutput("up0", "conv3d_transpose", (4, 4, 4, 2), 8 * 4 * 2 + 2, 66, kernel=2),
        LayerOutput("concat0", "concat", (4, 4, 4, 4), 0, 0),
        LayerOutput("decode0_conv0", "conv3d", (4, 4, 4, 2), 27 * 4 * 2 + 2, 218, kernel=3),
        LayerOutput("decode0_bn0", "batchnorm", (4, 4, 4, 2), 8, 4),
        LayerOutput("decode0_relu0", "relu", (4, 4, 4, 2), 0, 0),
        LayerOutput("decode0_conv1", "conv3d", (4, 4, 4, 2), 27 * 2 * 2 + 2, 110, kernel=3),
        LayerOutput("decode0_bn1", "batchnorm", (4, 4, 4, 2), 8, 4),
        LayerOutput("decode0_relu1", "relu", (4, 4, 4, 2), 0, 0),
        LayerOutput("mask", "output", (4, 4, 4, 1), 2 * 1 + 1, 3, kernel=1),
    ]

    assert layer_outputs(config) == expected
    assert parameter_counts(config) == (1283, 1251)
    # input 64 + encoder 6 x 128 + pool 16 + bottom 6 x 32 + up 128 + concat 256
    # + decoder 6 x 128 + mask 64
    assert activation_elements_per_sample(config) == 2256


def test_layer_elements_are_the_product_of_the_shape() -> None:
    layer = LayerOutput("encode0_conv0", "conv3d", (8, 16, 32, 4), 112, 112)

    assert layer.elements == 8 * 16 * 32 * 4


def test_layer_names_are_unique_and_start_with_input_and_end_with_mask() -> None:
    layers = layer_outputs(UNetConfig(image_shape=(32, 32, 32)))
    names = [layer.name for layer in layers]

    assert len(set(names)) == len(names)
    assert (layers[0].name, layers[0].kind) == ("images", "input")
    assert (layers[-1].name, layers[-1].kind) == ("mask", "output")


@pytest.mark.parametrize("levels", [2, 3, 5])
def test_activation_elements_scale_linearly_with_voxels(levels: int) -> None:
    shapes = [(16, 16, 16), (32, 32, 32), (16, 32, 64), (64, 48, 32)]
    per_voxel = {
        activation_elements_per_sample(UNetConfig(image_shape=shape, levels=levels))
        / UNetConfig(image_shape=shape, levels=levels).elements
        for shape in shapes
    }

    assert len(per_voxel) == 1


def test_activation_elements_double_when_depth_doubles() -> None:
    shallow = UNetConfig(image_shape=(32, 64, 64))
    deep = UNetConfig(image_shape=(64, 64, 64))

    assert activation_elements_per_sample(deep) == 2 * activation_elements_per_sample(shallow)


def test_upsampling_mode_has_no_up_parameters_and_wider_concatenations() -> None:
    layers = {
        layer.name: layer
        for layer in layer_outputs(UNetConfig(image_shape=(16, 16, 16), upsampling="upsample"))
    }

    # UpSampling3D keeps the 32 channels from below; the skip adds 16 more.
    assert layers["up0"] == LayerOutput("up0", "upsampling", (16, 16, 16, 32), 0, 0)
    assert layers["concat0"].shape == (16, 16, 16, 48)
    assert layers["decode0_conv0"].params == 27 * 48 * 16 + 16


def test_float32_activations_take_four_bytes_per_element() -> None:
    config = UNetConfig(image_shape=(32, 32, 32))

    assert BYTES_PER_ELEMENT["float32"] == 4
    assert activation_bytes_per_sample(config) == 4 * activation_elements_per_sample(config)


@pytest.mark.parametrize("precision", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_halves_all_but_the_float32_input_and_mask(precision: str) -> None:
    config = UNetConfig(image_shape=(32, 32, 32), in_channels=2, classes=3, precision=precision)
    input_elements = config.elements * config.in_channels
    mask_elements = config.elements * config.classes
    half_elements = activation_elements_per_sample(config) - input_elements - mask_elements

    assert BYTES_PER_ELEMENT[precision] == 2
    assert activation_bytes_per_sample(config) == 2 * half_elements + 4 * (
        input_elements + mask_elements
    )


def test_output_dtypes_follow_the_policy_except_input_and_mask() -> None:
    config = UNetConfig(image_shape=(16, 16, 16), precision="mixed_bfloat16")
    dtypes = {layer.name: output_dtype(config, layer) for layer in layer_outputs(config)}

    assert dtypes["images"] == "float32"
    assert dtypes["mask"] == "float32"
    assert dtypes["encode0_bn0"] == "bfloat16"
    assert {dtypes[name] for name in dtypes if name not in ("images", "mask")} == {"bfloat16"}


def test_paper_activation_bytes_scale_with_batch_size() -> None:
    one = UNetConfig(image_shape=(32, 32, 32))
    eight = UNetConfig(image_shape=(32, 32, 32), batch_size=8)

    assert paper_activation_bytes(one) == activation_bytes_per_sample(one)
    assert paper_activation_bytes(eight) == 8 * paper_activation_bytes(one)


@pytest.mark.parametrize("precision", ["float32", "mixed_float16", "mixed_bfloat16"])
def test_paper_weight_bytes_are_four_per_parameter_under_every_policy(precision: str) -> None:
    config = UNetConfig(image_shape=(32, 32, 32), precision=precision)

    assert paper_weight_bytes(config) == 4 * 5_650_801


def test_importing_the_architecture_never_loads_tensorflow_keras_or_torch() -> None:
    probe = (
        "import sys, core.workloads.base; "
        "frameworks = ('tensorflow', 'keras', 'torch'); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in frameworks); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPOSITORY_ROOT, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stdout + result.stderr
