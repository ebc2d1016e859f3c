"""The AlexNet workload without TensorFlow: its closed form, validation and table columns."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from core.analytical import refined_breakdown
from core.errors import ConfigError
from core.workloads.alexnet import (
    MIN_IMAGE_SIDE,
    NETWORK_KNOBS,
    AlexNetConfig,
    config_columns,
    config_from_row,
    layer_outputs,
    nearest_valid_sizes,
    parse_image_shape,
    synthetic_batch,
    valid_sides,
)
from core.workloads.base import parameter_counts

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def _conv(kernel: int, in_channels: int, filters: int) -> int:
    return kernel * kernel * in_channels * filters + filters


def _dense(inputs: int, units: int) -> int:
    return inputs * units + units


# Krizhevsky's AlexNet at 224x224x3, 1000 classes, layer by layer from the formulas:
# conv1 (224 - 11) // 4 + 1 = 54; pools 54 -> 26 -> 12 -> 5; flatten 5 * 5 * 256 = 6400.
DEFAULT_PARAMETERS = (
    _conv(11, 3, 96)
    + _conv(5, 96, 256)
    + _conv(3, 256, 384)
    + _conv(3, 384, 384)
    + _conv(3, 384, 256)
    + _dense(5 * 5 * 256, 4096)
    + _dense(4096, 4096)
    + _dense(4096, 1000)
)


def test_the_default_network_has_krizhevskys_parameter_count() -> None:
    assert DEFAULT_PARAMETERS == 50_844_008
    assert parameter_counts(AlexNetConfig((224, 224))) == (50_844_008, 50_844_008)


def test_the_default_network_has_the_expected_shapes() -> None:
    shapes = {layer.name: layer.shape for layer in layer_outputs(AlexNetConfig((224, 224)))}

    assert shapes["images"] == (224, 224, 3)
    assert shapes["conv1"] == (54, 54, 96)
    assert shapes["pool1"] == (26, 26, 96)
    assert shapes["pool2"] == (12, 12, 256)
    assert shapes["pool5"] == (5, 5, 256)
    assert shapes["flatten"] == (6400,)
    assert shapes["fc8"] == (1000,)


def test_layers_are_listed_in_model_order_with_input_and_output_kinds() -> None:
    layers = layer_outputs(AlexNetConfig((224, 224)))

    assert [layer.name for layer in layers] == [
        "images",
        "conv1",
        "pool1",
        "conv2",
        "pool2",
        "conv3",
        "conv4",
        "conv5",
        "pool5",
        "flatten",
        "fc6",
        "drop6",
        "fc7",
        "drop7",
        "fc8",
    ]
    assert layers[0].kind == "input"
    assert layers[-1].kind == "output"
    assert {layer.kind for layer in layers[1:-1]} == {
        "conv2d",
        "maxpool",
        "flatten",
        "dense",
        "dropout",
    }


def test_a_non_square_image_is_followed_side_by_side() -> None:
    shapes = {layer.name: layer.shape for layer in layer_outputs(AlexNetConfig((160, 192)))}

    assert shapes["conv1"] == ((160 - 11) // 4 + 1, (192 - 11) // 4 + 1, 96)
    assert shapes["flatten"] == (3 * 4 * 256,)


def test_the_smallest_side_leaves_one_value_after_the_last_pooling() -> None:
    assert MIN_IMAGE_SIDE == 67
    shapes = {layer.name: layer.shape for layer in layer_outputs(AlexNetConfig((67, 67)))}

    assert shapes["pool5"] == (1, 1, 256)


@pytest.mark.parametrize("side", [50, 66])
def test_too_small_sides_are_refused_naming_the_smallest_valid_one(side: int) -> None:
    with pytest.raises(
        ConfigError,
        match=f"image side {side} is too small for AlexNet.*the smallest valid side is 67",
    ):
        AlexNetConfig((224, side))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"batch_size": 0}, "batch size must be between 1 and 4096, got 0"),
        ({"precision": "float64"}, "precision 'float64' is not one of float32, mixed_float16"),
        ({"classes": 0}, "output classes must be between 1 and 100000, got 0"),
        ({"in_channels": 2.5}, "input channels must be a whole number, got 2.5"),
        ({"image_shape": (0, 224)}, "image side must be between 67 and 4096, got 0"),
        ({"image_shape": (5000, 224)}, "image side must be between 67 and 4096, got 5000"),
        ({"image_shape": (224, 224, 3)}, r"image shape needs 2 sides \(height, width\)"),
    ],
)
def test_bad_configurations_say_what_is_wrong(overrides: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        AlexNetConfig(**({"image_shape": (224, 224)} | overrides))


def test_one_number_is_a_square_and_two_are_height_width() -> None:
    assert parse_image_shape("224") == (224, 224)
    assert parse_image_shape("227x200") == (227, 200)
    with pytest.raises(ConfigError, match="e.g. 240x144"):
        parse_image_shape("224x224x3")


def test_every_side_from_the_minimum_is_valid() -> None:
    assert valid_sides(60, 70) == [67, 68, 69, 70]
    assert valid_sides(224, 227) == [224, 225, 226, 227]
    assert valid_sides(4095, 5000) == [4095, 4096]
    assert nearest_valid_sizes(50) == (67, 67)
    assert nearest_valid_sizes(225) == (225, 225)


def test_the_config_describes_itself_for_the_protocol() -> None:
    config = AlexNetConfig((160, 192), batch_size=8, in_channels=1)

    assert config.elements == 160 * 192
    assert config.image_label == "160x192"
    assert AlexNetConfig((224, 224)).image_label == "224"
    # One image value per pixel and channel, plus the sample's integer label.
    assert config.input_elements_per_sample() == 160 * 192 * 1 + 1
    assert AlexNetConfig.from_dict(config.to_dict()) == config
    assert config.to_dict()["image_shape"] == [160, 192]


def test_table_columns_round_trip_through_numpy_scalars() -> None:
    config = AlexNetConfig((227, 200), batch_size=16, in_channels=1, classes=10)
    columns = config_columns(config)

    assert columns == {
        "height": 227,
        "width": 200,
        "batch_size": 16,
        "in_channels": 1,
        "classes": 10,
        "precision": "float32",
    }
    assert NETWORK_KNOBS == ("in_channels", "classes", "precision")
    # pandas hands back NumPy scalars; the config must still validate.
    row = {
        key: np.int64(value) if isinstance(value, int) else np.str_(value)
        for key, value in columns.items()
    }
    rebuilt = config_from_row(row)
    assert rebuilt == config
    assert all(type(value) in (int, str) for value in config_columns(rebuilt).values())


def test_optimizer_state_is_one_momentum_value_per_trainable_weight() -> None:
    breakdown = refined_breakdown(AlexNetConfig((224, 224)))

    assert breakdown.optimizer_bytes == 1 * 4 * DEFAULT_PARAMETERS
    assert breakdown.gradient_bytes == 4 * DEFAULT_PARAMETERS


def test_synthetic_batch_has_images_and_integer_labels() -> None:
    config = AlexNetConfig((67, 80), batch_size=3, in_channels=2, classes=10)
    images, labels = synthetic_batch(config, np.random.default_rng(0))

    assert images.shape == (3, 67, 80, 2)
    assert images.dtype == np.float32
    assert labels.shape == (3,)
    assert labels.dtype == np.int32
    assert labels.min() >= 0
    assert labels.max() < 10


def test_importing_the_workload_never_loads_tensorflow_keras_or_torch() -> None:
    probe = (
        "import sys, core.workloads.alexnet; "
        "frameworks = ('tensorflow', 'keras', 'torch'); "
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in frameworks); "
        "print(loaded); sys.exit(1 if loaded else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], cwd=REPOSITORY_ROOT, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_registry_finds_the_workload_and_round_trips_its_rows() -> None:
    from core import workloads

    config = AlexNetConfig((227, 200), batch_size=4, classes=10, precision="mixed_float16")

    assert workloads.get("alexnet").Config is AlexNetConfig
    assert workloads.config_from_row(workloads.config_columns(config)) == config
    assert workloads.config_from_dict("alexnet", config.to_dict()) == config
