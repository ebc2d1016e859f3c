"""Every workload's closed-form description matches its real Keras model, layer by layer.

Each case builds the workload's ``build_model`` (the model is only built, never
run, so even AlexNet's 224 default is cheap) and compares every layer with
`core.workloads.base`. Facts of one network (exact parameter counts, a training
step) live beside it: here the U-Net's, in ``test_alexnet_vs_keras.py`` AlexNet's.
"""

from __future__ import annotations

from collections.abc import Iterator
from math import prod
from typing import TYPE_CHECKING

import numpy as np
import pytest

from core import workloads
from core.workloads.alexnet import AlexNetConfig
from core.workloads.base import (
    WorkloadConfig,
    layer_output_bytes,
    layer_outputs,
    output_dtype,
    parameter_counts,
)
from core.workloads.unet3d import UNetConfig, build_model

if TYPE_CHECKING:
    import keras

pytestmark = pytest.mark.tensorflow

CONFIGS: dict[str, WorkloadConfig] = {
    "reference-32cube": UNetConfig(image_shape=(32, 32, 32)),
    "non-cube-32x48x64": UNetConfig(image_shape=(32, 48, 64)),
    "3-levels-4-filters": UNetConfig(image_shape=(16, 16, 16), base_filters=4, levels=3),
    "4-levels-2-in-3-classes": UNetConfig(
        image_shape=(16, 24, 32), levels=4, in_channels=2, classes=3
    ),
    "upsample": UNetConfig(image_shape=(32, 32, 32), upsampling="upsample"),
    "mixed-float16": UNetConfig(image_shape=(32, 32, 32), precision="mixed_float16"),
    "mixed-bfloat16-upsample": UNetConfig(
        image_shape=(16, 16, 16), levels=3, precision="mixed_bfloat16", upsampling="upsample"
    ),
    "alexnet-default-224": AlexNetConfig(image_shape=(224, 224)),
    "alexnet-caffe-227": AlexNetConfig(image_shape=(227, 227)),
    "alexnet-non-square-160x192": AlexNetConfig(image_shape=(160, 192)),
    "alexnet-smallest-67-1-channel-10-classes": AlexNetConfig(
        image_shape=(67, 67), in_channels=1, classes=10
    ),
    "alexnet-mixed-bfloat16": AlexNetConfig(
        image_shape=(96, 112), classes=10, precision="mixed_bfloat16"
    ),
}


def _weight_count(weights: list) -> int:
    return sum(prod(weight.shape) for weight in weights)


@pytest.fixture(scope="module", params=list(CONFIGS.values()), ids=list(CONFIGS))
def built(request: pytest.FixtureRequest) -> Iterator[tuple[WorkloadConfig, keras.Model]]:
    """A configuration and its Keras model, built once; the float32 policy is restored after."""
    import keras  # here, not at collection: collecting the suite never loads TensorFlow

    config = request.param
    try:
        yield config, workloads.of(config).build_model(config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
        keras.backend.clear_session()


def test_layers_have_keras_names_in_model_order(built: tuple[WorkloadConfig, keras.Model]) -> None:
    config, model = built

    assert [layer.name for layer in layer_outputs(config)] == [layer.name for layer in model.layers]


def test_every_layer_has_the_keras_output_shape(built: tuple[WorkloadConfig, keras.Model]) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_shape = tuple(model.get_layer(layer.name).output.shape[1:])
        assert layer.shape == keras_shape, layer.name


def test_every_layer_has_the_keras_parameter_counts(
    built: tuple[WorkloadConfig, keras.Model],
) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_layer = model.get_layer(layer.name)
        assert layer.params == keras_layer.count_params(), layer.name
        assert layer.trainable_params == _weight_count(keras_layer.trainable_weights), layer.name


def test_every_layer_has_the_keras_output_dtype(built: tuple[WorkloadConfig, keras.Model]) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_dtype = model.get_layer(layer.name).output.dtype
        assert output_dtype(config, layer) == keras_dtype, layer.name


def test_every_layer_output_costs_its_keras_bytes(
    built: tuple[WorkloadConfig, keras.Model],
) -> None:
    config, model = built

    for layer in layer_outputs(config):
        output = model.get_layer(layer.name).output
        keras_bytes = prod(output.shape[1:]) * np.dtype(output.dtype).itemsize
        assert layer_output_bytes(config, layer) == keras_bytes, layer.name


def test_model_totals_match_keras(built: tuple[WorkloadConfig, keras.Model]) -> None:
    config, model = built

    assert parameter_counts(config) == (
        model.count_params(),
        _weight_count(model.trainable_weights),
    )


def test_variables_stay_float32_under_every_policy(
    built: tuple[WorkloadConfig, keras.Model],
) -> None:
    _config, model = built

    assert {weight.dtype for weight in model.weights} == {"float32"}


def test_the_reference_network_has_exactly_5_650_801_parameters_in_keras() -> None:
    import keras

    model = build_model(UNetConfig(image_shape=(32, 32, 32)))
    try:
        assert model.count_params() == 5_650_801
        assert _weight_count(model.trainable_weights) == 5_647_857
    finally:
        keras.backend.clear_session()
