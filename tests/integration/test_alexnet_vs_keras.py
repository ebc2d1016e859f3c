"""AlexNet's own facts in Keras: its exact parameter count, and that it trains.

Its layer-by-layer match with the closed form is checked with every workload's
in ``test_architecture_vs_keras.py``.
"""

from math import prod

import numpy as np
import pytest

from core.workloads.alexnet import AlexNetConfig, build_model, synthetic_batch

pytestmark = pytest.mark.tensorflow


def _weight_count(weights: list) -> int:
    return sum(prod(weight.shape) for weight in weights)


@pytest.fixture
def keras():
    """Keras, imported by the test that needs it: collecting the suite never loads TensorFlow."""
    import keras

    return keras


def test_the_default_network_has_exactly_50_844_008_parameters_in_keras(keras) -> None:
    model = build_model(AlexNetConfig(image_shape=(224, 224)))
    try:
        assert model.count_params() == 50_844_008
        assert _weight_count(model.trainable_weights) == 50_844_008
    finally:
        keras.backend.clear_session()


def test_two_training_steps_on_a_synthetic_batch_give_a_finite_loss(keras) -> None:
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
