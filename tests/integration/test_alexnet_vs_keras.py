"""The AlexNet closed form matches the real Keras model, layer by layer, and it trains.

Each case builds `core.workloads.alexnet.build_model` (only built, never run,
so even the 224 default is cheap) and compares every layer with
`core.workloads.base`; one case trains two steps on a small synthetic batch.
"""

from collections.abc import Iterator
from math import prod

import keras
import numpy as np
import pytest

from core.workloads.alexnet import AlexNetConfig, build_model, synthetic_batch
from core.workloads.base import (
    layer_output_bytes,
    layer_outputs,
    output_dtype,
    parameter_counts,
)

pytestmark = pytest.mark.tensorflow

CONFIGS = {
    "default-224": AlexNetConfig(image_shape=(224, 224)),
    "caffe-227": AlexNetConfig(image_shape=(227, 227)),
    "non-square-160x192": AlexNetConfig(image_shape=(160, 192)),
    "smallest-67-1-channel-10-classes": AlexNetConfig(
        image_shape=(67, 67), in_channels=1, classes=10
    ),
    "mixed-bfloat16": AlexNetConfig(image_shape=(96, 112), classes=10, precision="mixed_bfloat16"),
}


def _weight_count(weights: list) -> int:
    return sum(prod(weight.shape) for weight in weights)


@pytest.fixture(scope="module", params=list(CONFIGS.values()), ids=list(CONFIGS))
def built(request: pytest.FixtureRequest) -> Iterator[tuple[AlexNetConfig, keras.Model]]:
    """A configuration and its Keras model, built once; the float32 policy is restored after."""
    config = request.param
    try:
        yield config, build_model(config)
    finally:
        keras.mixed_precision.set_global_policy("float32")
        keras.backend.clear_session()


def test_layers_have_keras_names_in_model_order(built: tuple[AlexNetConfig, keras.Model]) -> None:
    config, model = built

    assert [layer.name for layer in layer_outputs(config)] == [layer.name for layer in model.layers]


def test_every_layer_has_the_keras_output_shape(built: tuple[AlexNetConfig, keras.Model]) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_shape = tuple(model.get_layer(layer.name).output.shape[1:])
        assert layer.shape == keras_shape, layer.name


def test_every_layer_has_the_keras_parameter_counts(
    built: tuple[AlexNetConfig, keras.Model],
) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_layer = model.get_layer(layer.name)
        assert layer.params == keras_layer.count_params(), layer.name
        assert layer.trainable_params == _weight_count(keras_layer.trainable_weights), layer.name


def test_every_layer_has_the_keras_output_dtype(built: tuple[AlexNetConfig, keras.Model]) -> None:
    config, model = built

    for layer in layer_outputs(config):
        keras_dtype = model.get_layer(layer.name).output.dtype
        assert output_dtype(config, layer) == keras_dtype, layer.name


def test_every_layer_output_costs_its_keras_bytes(
    built: tuple[AlexNetConfig, keras.Model],
) -> None:
    config, model = built

    for layer in layer_outputs(config):
        output = model.get_layer(layer.name).output
        keras_bytes = prod(output.shape[1:]) * np.dtype(output.dtype).itemsize
        assert layer_output_bytes(config, layer) == keras_bytes, layer.name


def test_model_totals_match_keras(built: tuple[AlexNetConfig, keras.Model]) -> None:
    config, model = built

    assert parameter_counts(config) == (
        model.count_params(),
        _weight_count(model.trainable_weights),
    )


def test_variables_stay_float32_under_every_policy(
    built: tuple[AlexNetConfig, keras.Model],
) -> None:
    _config, model = built

    assert {weight.dtype for weight in model.weights} == {"float32"}


def test_the_default_network_has_exactly_50_844_008_parameters_in_keras() -> None:
    model = build_model(AlexNetConfig(image_shape=(224, 224)))
    try:
        assert model.count_params() == 50_844_008
        assert _weight_count(model.trainable_weights) == 50_844_008
    finally:
        keras.backend.clear_session()


def test_two_training_steps_on_a_synthetic_batch_give_a_finite_loss() -> None:
    config = AlexNetConfig(image_shape=(67, 67), batch_size=2, classes=10)
    rng = np.random.default_rng(0)
    model = build_model(config)
    try:
        for _step in range(2):
            images, labels = synthetic_batch(config, rng)
            loss = model.train_on_batch(images, labels)
            assert np.isfinite(loss)
        # SGD with momentum: one momentum slot per trainable weight.
        momenta = [v for v in model.optimizer.variables if "momentum" in v.path]
        assert _weight_count(momenta) == _weight_count(model.trainable_weights)
    finally:
        keras.backend.clear_session()
