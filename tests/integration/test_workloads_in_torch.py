"""Every workload's native PyTorch model is its closed form, layer by layer, and trains.

`core.workloads.torch_training.build` makes each network from its workload's
closed form (`layer_outputs`); the closed form is checked against Keras in
``test_architecture_vs_keras.py``, so equal counts here mean equal counts between
the frameworks. Models are small (the reference networks are only built, never
run) and train one step on tiny images: CPU seconds each.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
import pytest

from core.workloads.alexnet import AlexNetConfig
from core.workloads.base import WorkloadConfig, layer_outputs, parameter_counts
from core.workloads.unet3d import UNetConfig

if TYPE_CHECKING:
    import torch

pytestmark = pytest.mark.torch

# Knob values across both workloads; small enough to build in well under a second each.
CONFIGS: dict[str, WorkloadConfig] = {
    "unet-1-filter-2-levels": UNetConfig(image_shape=(8, 8, 8), base_filters=1, levels=2),
    "unet-4-filters-3-levels": UNetConfig(image_shape=(16, 16, 16), base_filters=4, levels=3),
    "unet-8-filters-4-levels-non-cube": UNetConfig(
        image_shape=(8, 16, 24), base_filters=8, levels=4
    ),
    "unet-2-in-3-classes-upsample": UNetConfig(
        image_shape=(16, 16, 16),
        base_filters=2,
        levels=3,
        in_channels=2,
        classes=3,
        upsampling="upsample",
    ),
    "alexnet-smallest-67-1-channel-10-classes": AlexNetConfig(
        image_shape=(67, 67), in_channels=1, classes=10
    ),
    "alexnet-non-square-96x112": AlexNetConfig(image_shape=(96, 112), classes=10),
    "alexnet-caffe-227-100-classes": AlexNetConfig(image_shape=(227, 227), classes=100),
}


@pytest.fixture(scope="module")
def torch_training() -> ModuleType:
    """Imported by the tests that need it: collecting the suite never loads torch."""
    from core.workloads import torch_training

    return torch_training


def _channels_first(shape: tuple[int, ...]) -> tuple[int, ...]:
    """A closed-form (channels-last) per-sample shape as torch holds it."""
    return shape if len(shape) == 1 else (shape[-1], *shape[:-1])


def _outputs_by_layer(
    torch_training: ModuleType, config: WorkloadConfig
) -> dict[str, torch.Tensor]:
    """Every layer's output for one batch of ``config``, by name, in the order they ran."""
    import torch

    model = torch_training.build(config).model
    seen: dict[str, torch.Tensor] = {}
    for name, layer in model.layers.items():
        layer.register_forward_hook(lambda _m, _in, out, name=name: seen.setdefault(name, out))
    shape = (config.batch_size, config.in_channels, *config.image_shape)
    with torch.no_grad():
        model(torch.zeros(shape))
    return seen


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_parameters_and_buffers_equal_the_closed_form_count(
    torch_training: ModuleType, config: WorkloadConfig
) -> None:
    model = torch_training.build(config).model

    assert torch_training.value_counts(model) == parameter_counts(config)


def test_the_reference_unet_has_5_650_801_values_of_which_5_647_857_train(
    torch_training: ModuleType,
) -> None:
    model = torch_training.build(UNetConfig(image_shape=(32, 32, 32))).model

    assert torch_training.value_counts(model) == (5_650_801, 5_647_857)


def test_the_imagenet_alexnet_has_50_844_008_parameters(torch_training: ModuleType) -> None:
    model = torch_training.build(AlexNetConfig(image_shape=(224, 224))).model

    assert torch_training.value_counts(model) == (50_844_008, 50_844_008)


@pytest.mark.parametrize("config", CONFIGS.values(), ids=CONFIGS.keys())
def test_every_layer_runs_in_model_order_with_the_closed_form_shape(
    torch_training: ModuleType, config: WorkloadConfig
) -> None:
    outputs = _outputs_by_layer(torch_training, config)
    expected = layer_outputs(config)

    assert list(outputs) == [layer.name for layer in expected]
    for layer in expected:
        actual = tuple(outputs[layer.name].shape)
        assert actual == (config.batch_size, *_channels_first(layer.shape)), layer.name


@pytest.mark.parametrize(
    "config",
    [
        UNetConfig(image_shape=(8, 8, 8), batch_size=2, base_filters=2, levels=2),
        AlexNetConfig(image_shape=(67, 67), batch_size=2, classes=10),
        UNetConfig(image_shape=(8, 8, 8), base_filters=2, levels=2, precision="mixed_bfloat16"),
    ],
    ids=["unet", "alexnet", "unet-mixed-bfloat16"],
)
def test_training_steps_on_the_synthetic_batch_change_the_loss(
    torch_training: ModuleType, config: WorkloadConfig
) -> None:
    after_steps: list[int] = []

    losses = torch_training.train_steps(config, steps=2, seed=0, after_step=after_steps.append)

    assert after_steps == [0, 1]
    assert np.isfinite(losses).all()
    assert losses[1] != losses[0]  # the first step moved the weights the second one read


def test_a_deepest_level_of_one_voxel_at_batch_1_trains_as_in_keras(
    torch_training: ModuleType,
) -> None:
    # 16^3 through 5 levels is 1x1x1 at the bottom: one value per channel, which torch's
    # own batch normalisation refuses in training and Keras' trains.
    config = UNetConfig(image_shape=(16, 16, 16), base_filters=4, levels=5)

    [loss] = torch_training.train_steps(config, steps=1, seed=0)

    assert np.isfinite(loss)


def test_a_seed_repeats_the_training(torch_training: ModuleType) -> None:
    config = UNetConfig(image_shape=(8, 8, 8), base_filters=2, levels=2)

    first = torch_training.train_steps(config, steps=1, seed=3)

    assert torch_training.train_steps(config, steps=1, seed=3) == first
    assert torch_training.train_steps(config, steps=1, seed=4) != first


def test_the_synthetic_batch_reaches_torch_channels_first(torch_training: ModuleType) -> None:
    images = np.arange(3 * 8 * 16 * 24 * 2, dtype=np.float32).reshape(3, 8, 16, 24, 2)

    tensor = torch_training.channels_first(images)

    assert tuple(tensor.shape) == (3, 2, 8, 16, 24)
    assert tensor[1, 1, 2, 3, 4] == images[1, 2, 3, 4, 1]
