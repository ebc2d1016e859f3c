"""Closed-form description of the reference 3D U-Net, layer by layer, without TensorFlow.

`profiling.workload.build_model` builds the network with Keras; this module
states, in plain arithmetic, what that call creates: every layer in model
order under its Keras name, its per-sample output shape (channels last, batch
excluded), its parameter counts, and the dtype of its output tensor under the
configuration's precision policy. Predictions (the white-paper baseline and the
fitted models built on top of it) read sizes from here, so they can be
evaluated instantly for any configuration, on a machine without TensorFlow.

The integration test ``tests/integration/test_architecture_vs_keras.py``
builds real Keras models and checks every layer against this description.

Dtypes, as Keras 3 really does it (checked on Keras 3.15, TF 2.21 backend):

* The ``Input`` layer's tensor is float32 under every policy. Its layer reports
  the policy's compute dtype (e.g. float16), but `keras.Input` creates the
  tensor with the default float type, float32; the first convolution casts it.
* Every other layer outputs the policy's compute dtype (float16 or bfloat16
  under the mixed policies), BatchNormalization included: it normalises in
  float32 internally but casts its output back.
* The ``mask`` output layer is built with ``dtype="float32"`` and outputs
  float32 under every policy.
* Variables are float32 under every policy (mixed precision keeps float32
  master weights), so a parameter always costs 4 bytes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from math import prod
from types import MappingProxyType

from profiling.workload import UNetConfig

# Convolutions in each encoder/decoder block (conv -> batchnorm -> relu, twice).
CONVS_PER_BLOCK = 2
# 3x3x3 "same" convolutions inside the blocks.
BLOCK_KERNEL_VOLUME = 3 * 3 * 3
# Each pooling halves every side; each upsampling (2x2x2, stride 2) doubles it.
POOL_FACTOR = 2
UP_KERNEL_VOLUME = 2 * 2 * 2
# The 1x1x1 sigmoid convolution that produces the mask.
OUTPUT_KERNEL_VOLUME = 1
# BatchNormalization holds gamma and beta (trainable) and the moving mean and
# variance (not trainable), one of each per channel.
BATCHNORM_TRAINABLE_PER_CHANNEL = 2
BATCHNORM_FROZEN_PER_CHANNEL = 2

FLOAT32_BYTES = 4
HALF_BYTES = 2  # float16 and bfloat16

# Bytes per activation element in the policy's compute dtype. Exceptions: the
# Input tensor and the output layer are float32 under every policy (see
# `output_dtype`).
BYTES_PER_ELEMENT: Mapping[str, int] = MappingProxyType(
    {"float32": FLOAT32_BYTES, "mixed_float16": HALF_BYTES, "mixed_bfloat16": HALF_BYTES}
)
# Variables are float32 under every policy (mixed precision keeps float32 weights).
WEIGHT_BYTES_PER_PARAMETER = FLOAT32_BYTES

# The compute dtype of each precision policy, as Keras names it.
COMPUTE_DTYPE: Mapping[str, str] = MappingProxyType(
    {"float32": "float32", "mixed_float16": "float16", "mixed_bfloat16": "bfloat16"}
)
# Layers whose output is float32 whatever the policy.
FLOAT32_KINDS = frozenset({"input", "output"})


@dataclass(frozen=True)
class LayerOutput:
    """One Keras layer of the model: its name, kind, per-sample output shape and parameters.

    ``shape`` is channels last and excludes the batch, e.g. ``(32, 32, 32, 16)``.
    ``kind`` is one of ``input``, ``conv3d``, ``batchnorm``, ``relu``, ``maxpool``,
    ``conv3d_transpose``, ``upsampling``, ``concat``, ``output``.
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    params: int
    trainable_params: int

    @property
    def elements(self) -> int:
        """Number of values in one sample's output tensor."""
        return prod(self.shape)


def _conv_params(kernel_volume: int, in_channels: int, filters: int) -> int:
    """Kernel weights plus one bias per filter."""
    return kernel_volume * in_channels * filters + filters


def _block(
    name: str, spatial: tuple[int, ...], in_channels: int, filters: int
) -> list[LayerOutput]:
    """The conv -> batchnorm -> relu pair of `build_model`'s ``block``."""
    shape = (*spatial, filters)
    layers: list[LayerOutput] = []
    channels = in_channels
    for index in range(CONVS_PER_BLOCK):
        conv = _conv_params(BLOCK_KERNEL_VOLUME, channels, filters)
        norm_trainable = BATCHNORM_TRAINABLE_PER_CHANNEL * filters
        norm_total = norm_trainable + BATCHNORM_FROZEN_PER_CHANNEL * filters
        layers += [
            LayerOutput(f"{name}_conv{index}", "conv3d", shape, conv, conv),
            LayerOutput(f"{name}_bn{index}", "batchnorm", shape, norm_total, norm_trainable),
            LayerOutput(f"{name}_relu{index}", "relu", shape, 0, 0),
        ]
        channels = filters
    return layers


def _scaled(spatial: tuple[int, ...], level: int) -> tuple[int, ...]:
    """Spatial sides at ``level`` (halved once per pooling above it)."""
    return tuple(side // POOL_FACTOR**level for side in spatial)


def layer_outputs(config: UNetConfig) -> list[LayerOutput]:
    """Every layer `build_model(config)` creates, in model order, under its Keras name."""
    spatial = tuple(config.image_shape)
    layers = [LayerOutput("images", "input", (*spatial, config.in_channels), 0, 0)]
    channels = config.in_channels
    skip_channels: list[int] = []
    for level in range(config.levels - 1):
        filters = config.base_filters * 2**level
        layers += _block(f"encode{level}", _scaled(spatial, level), channels, filters)
        channels = filters
        skip_channels.append(channels)
        layers.append(
            LayerOutput(f"pool{level}", "maxpool", (*_scaled(spatial, level + 1), channels), 0, 0)
        )
    bottom = config.levels - 1
    bottom_filters = config.base_filters * 2**bottom
    layers += _block("bottom", _scaled(spatial, bottom), channels, bottom_filters)
    channels = bottom_filters
    for level in reversed(range(config.levels - 1)):
        filters = config.base_filters * 2**level
        level_spatial = _scaled(spatial, level)
        if config.upsampling == "transpose":
            up = _conv_params(UP_KERNEL_VOLUME, channels, filters)
            layers.append(
                LayerOutput(f"up{level}", "conv3d_transpose", (*level_spatial, filters), up, up)
            )
            channels = filters
        else:
            layers.append(LayerOutput(f"up{level}", "upsampling", (*level_spatial, channels), 0, 0))
        channels += skip_channels[level]
        layers.append(LayerOutput(f"concat{level}", "concat", (*level_spatial, channels), 0, 0))
        layers += _block(f"decode{level}", level_spatial, channels, filters)
        channels = filters
    mask = _conv_params(OUTPUT_KERNEL_VOLUME, channels, config.classes)
    layers.append(LayerOutput("mask", "output", (*spatial, config.classes), mask, mask))
    return layers


def parameter_counts(config: UNetConfig) -> tuple[int, int]:
    """(total, trainable) parameters, as ``model.count_params()`` and its trainable weights."""
    layers = layer_outputs(config)
    return sum(layer.params for layer in layers), sum(layer.trainable_params for layer in layers)


def activation_elements_per_sample(config: UNetConfig) -> int:
    """Sum of every layer's output elements for one sample, input included (paper Eq. 1 sum)."""
    return sum(layer.elements for layer in layer_outputs(config))


def output_dtype(config: UNetConfig, layer: LayerOutput) -> str:
    """The dtype of ``layer``'s output tensor under ``config.precision``, as Keras names it.

    The Input tensor and the float32 ``mask`` layer are float32 under every policy;
    all other layers output the policy's compute dtype.
    """
    if layer.kind in FLOAT32_KINDS:
        return "float32"
    return COMPUTE_DTYPE[config.precision]


def activation_bytes_per_sample(config: UNetConfig) -> int:
    """Bytes of every layer's output for one sample, each in its own output dtype."""
    return sum(layer_output_bytes(config, layer) for layer in layer_outputs(config))


def layer_output_bytes(config: UNetConfig, layer: LayerOutput) -> int:
    """Bytes of ``layer``'s output for one sample, in its dtype under ``config.precision``."""
    return layer.elements * _element_bytes(config, layer)


def _element_bytes(config: UNetConfig, layer: LayerOutput) -> int:
    if layer.kind in FLOAT32_KINDS:
        return FLOAT32_BYTES
    return BYTES_PER_ELEMENT[config.precision]


def paper_activation_bytes(config: UNetConfig) -> int:
    """White-paper Eq. 1: batch size x bytes of all layer outputs for one sample."""
    return config.batch_size * activation_bytes_per_sample(config)


def paper_weight_bytes(config: UNetConfig) -> int:
    """White-paper Eq. 2: total parameters x 4 bytes (variables are always float32)."""
    total, _trainable = parameter_counts(config)
    return total * WEIGHT_BYTES_PER_PARAMETER
