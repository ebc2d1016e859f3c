"""The reference workload: the 3D U-Net of IntelAI/unet (``3D/model.py``).

`UNetConfig` names one training configuration (architecture knobs, image
shape, batch) and validates it without importing TensorFlow, so the CLI and
the dashboard can refuse a bad size instantly. `layer_outputs` states in plain
arithmetic the network both frameworks build: every layer in model order under
its Keras name, its per-sample output shape (channels last) and its parameters;
with `skip_connections` it is the one description of the network. `build_model`
builds it in Keras (``tests/integration/test_architecture_vs_keras.py`` checks
every layer against real Keras models), ``core/workloads/unet3d_torch.py``
(`TORCH_BUILDER`) in native PyTorch. `build_model` and `synthetic_batch` are for
the profiled child process only (they import TensorFlow / NumPy lazily).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from core.errors import ConfigError
from core.workloads.base import (
    MAX_BATCH_SIZE,
    ImageConfig,
    LayerOutput,
    check_range,
    from_stored_columns,
    stored_columns,
)
from core.workloads.base import parse_image_shape as parse_shape
from core.workloads.knobs import (
    CLASSES,
    IN_CHANNELS,
    PRECISION,
    PRECISION_OFFER,
    Knob,
    KnobCode,
    SizingOffer,
    WorkloadLabels,
    check_knobs,
)

NAME = "unet3d"
TITLE = "3D U-Net (IntelAI/unet)"
DIMS = 3

UPSAMPLING_MODES = ("transpose", "upsample")

# Beyond these the request is a typo, not a workload: a 4096^3 float32 volume
# is already 256 GiB for the input tensor alone.
MAX_IMAGE_SIDE = 4096
MAX_BASE_FILTERS = 1024
MAX_LEVELS = 8


# Adam keeps a first and a second moment per trainable weight.
ADAM_SLOTS = 2
LEARNING_RATE = 1e-3  # IntelAI/unet's Adam
# Convolutions in each encoder/decoder block (conv -> batchnorm -> relu, twice).
CONVS_PER_BLOCK = 2
# 3x3x3 "same" convolutions inside the blocks.
BLOCK_KERNEL = 3
BLOCK_KERNEL_VOLUME = BLOCK_KERNEL**DIMS
# Each pooling halves every side; each upsampling (2x2x2, stride 2) doubles it.
POOL_FACTOR = 2
UP_KERNEL = POOL_FACTOR  # its stride too: the windows tile the doubled image
UP_KERNEL_VOLUME = UP_KERNEL**DIMS
# The 1x1x1 sigmoid convolution that produces the mask.
OUTPUT_KERNEL = 1
OUTPUT_KERNEL_VOLUME = OUTPUT_KERNEL**DIMS
# The module that builds the network in native PyTorch (loaded by name, only when asked:
# core.workloads.torch_training), from `layer_outputs` and `skip_connections`.
TORCH_BUILDER = "core.workloads.unet3d_torch"
# BatchNormalization holds gamma and beta (trainable) and the moving mean and
# variance (not trainable), one of each per channel.
BATCHNORM_TRAINABLE_PER_CHANNEL = 2
BATCHNORM_FROZEN_PER_CHANNEL = 2

# The network's knobs, in the order of UNetConfig's fields after the image and batch;
# the defaults are the reference network of IntelAI/unet.
KNOBS: tuple[Knob, ...] = (
    Knob(
        "base_filters",
        int,
        16,
        "Base filters",
        "filters of the first level; each level doubles them",
        unit="base filters",
        low=1,
        high=MAX_BASE_FILTERS,
    ),
    Knob(
        "levels",
        int,
        5,
        "Levels",
        "resolution levels (poolings + 1); every image side must be a multiple of 2^(levels-1)",
        unit="levels",
        low=2,
        high=MAX_LEVELS,
        listed=False,
    ),
    IN_CHANNELS,
    CLASSES,
    PRECISION,
    Knob(
        "upsampling",
        str,
        "transpose",
        "Upsampling",
        "how the decoder doubles each side: a transposed convolution or a plain repeat",
        choices=UPSAMPLING_MODES,
        plural=True,
        listed=False,
        code=KnobCode(
            "transpose",
            (("transpose", 1), ("upsample", 0)),
            "transpose",
            "1 for transposed convolutions, 0 for upsampling",
        ),
    ),
)
_DEFAULTS = {knob.name: knob.default for knob in KNOBS}
LABELS = WorkloadLabels(
    optimizer="Adam",
    short_knob=("base_filters", "filters"),
    sizing_knobs=(
        SizingOffer("base_filters", (4, 8, 16, 32, 64), param="filters"),
        PRECISION_OFFER,
    ),
    # A 128^3 volume at batch 4: the question the Sizing page opens on.
    default_side=128,
    default_batch=4,
    largest_side=144,
    starting_grid=((32, 48, 64, 80, 96), (1, 2, 4)),
    sweep_sizes="32 64",
    sides_help="Each side must be a multiple of 16.",
    form_knobs=("base_filters",),
)


@dataclass(frozen=True)
class UNetConfig(ImageConfig):
    """One training configuration of the reference 3D U-Net.

    image_shape : (depth, height, width) in voxels, channels-last input.
    Defaults are the reference network: 5 levels, 16 base filters, 1 input
    channel, 1 output class, float32, transposed-convolution upsampling.
    """

    workload: ClassVar[str] = NAME
    optimizer_slots: ClassVar[int] = ADAM_SLOTS

    image_shape: tuple[int, int, int]
    batch_size: int = 1
    base_filters: int = _DEFAULTS["base_filters"]
    levels: int = _DEFAULTS["levels"]
    in_channels: int = _DEFAULTS["in_channels"]
    classes: int = _DEFAULTS["classes"]
    precision: str = _DEFAULTS["precision"]
    upsampling: str = _DEFAULTS["upsampling"]

    def __post_init__(self) -> None:
        validate(self)

    def layers(self) -> list[LayerOutput]:
        return layer_outputs(self)

    def input_elements_per_sample(self) -> int:
        """The image's channels and the mask's classes, per voxel."""
        return self.elements * (self.in_channels + self.classes)


Config = UNetConfig  # the name `core.workloads` looks for in every workload module

# The network's settings besides the image and the batch, in field order.
NETWORK_KNOBS: tuple[str, ...] = tuple(knob.name for knob in KNOBS)
SHAPE_COLUMNS: tuple[str, ...] = ("depth", "height", "width")  # image_shape, as stored


def config_columns(config: UNetConfig) -> dict[str, Any]:
    """``config`` as the runs table stores it: depth, height, width, batch_size, the knobs."""
    return stored_columns(config, SHAPE_COLUMNS)


def config_from_row(row: Mapping[str, Any]) -> UNetConfig:
    """The configuration a ``runs`` row stores (values may be NumPy scalars)."""
    return from_stored_columns(UNetConfig, row, SHAPE_COLUMNS)


def size_multiple(levels: int) -> int:
    """Every spatial side must be divisible by this: one halving per pooling."""
    return 2 ** (levels - 1)


def nearest_valid_sizes(side: int, levels: int) -> tuple[int, int]:
    """The valid sides just below and just above ``side`` (below is at least one multiple)."""
    multiple = size_multiple(levels)
    below = max(multiple, (side // multiple) * multiple)
    above = (side // multiple + 1) * multiple
    return below, above


def parse_image_shape(text: str) -> tuple[int, int, int]:
    """Parse ``"144"`` (a cube) or ``"240x240x144"`` (depth x height x width)."""
    return parse_shape(text, DIMS)  # type: ignore[return-value]


def validate(config: UNetConfig) -> None:
    """Raise `ConfigError` naming what is wrong and what would be right."""
    check_range("batch size", config.batch_size, 1, MAX_BATCH_SIZE)
    check_knobs(config, KNOBS)
    if len(config.image_shape) != 3:
        raise ConfigError(
            f"image shape needs 3 sides (depth, height, width), got {config.image_shape!r}"
        )
    multiple = size_multiple(config.levels)
    for side in config.image_shape:
        check_range("image side", side, 1, MAX_IMAGE_SIDE)
        if side % multiple:
            below, above = nearest_valid_sizes(side, config.levels)
            raise ConfigError(
                f"image side {side} cannot be trained by a {config.levels}-level U-Net: "
                f"each side must be a multiple of {multiple} (2^(levels-1)), otherwise pooling "
                "floors it and the skip connections no longer line up. "
                f"Nearest valid sizes: {below} or {above}"
            )


def valid_sides(levels: int, low: int, high: int) -> list[int]:
    """All valid sides in ``[low, high]`` for a network with ``levels`` levels."""
    multiple = size_multiple(levels)
    first = max(multiple, -(-low // multiple) * multiple)
    return list(range(first, high + 1, multiple))


def _conv_params(kernel_volume: int, in_channels: int, filters: int) -> int:
    """Kernel weights plus one bias per filter."""
    return kernel_volume * in_channels * filters + filters


def _block(
    name: str, spatial: tuple[int, ...], in_channels: int, filters: int
) -> list[LayerOutput]:
    """One block: (conv -> batchnorm -> relu) x `CONVS_PER_BLOCK`."""
    shape = (*spatial, filters)
    layers: list[LayerOutput] = []
    channels = in_channels
    for index in range(CONVS_PER_BLOCK):
        conv = _conv_params(BLOCK_KERNEL_VOLUME, channels, filters)
        norm_trainable = BATCHNORM_TRAINABLE_PER_CHANNEL * filters
        norm_total = norm_trainable + BATCHNORM_FROZEN_PER_CHANNEL * filters
        layers += [
            LayerOutput(f"{name}_conv{index}", "conv3d", shape, conv, conv, BLOCK_KERNEL),
            LayerOutput(f"{name}_bn{index}", "batchnorm", shape, norm_total, norm_trainable),
            LayerOutput(f"{name}_relu{index}", "relu", shape, 0, 0),
        ]
        channels = filters
    return layers


def _scaled(spatial: tuple[int, ...], level: int) -> tuple[int, ...]:
    """Spatial sides at ``level`` (halved once per pooling above it)."""
    return tuple(side // POOL_FACTOR**level for side in spatial)


def layer_outputs(config: UNetConfig) -> list[LayerOutput]:
    """Every layer of the network, in model order, under its Keras name: what both builders
    create (`build_model` in Keras, `TORCH_BUILDER` in PyTorch).

    Each layer reads the one before it; a ``concat`` also reads `skip_connections`' layer.
    """
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
            up_shape = (*level_spatial, filters)
            layers.append(
                LayerOutput(f"up{level}", "conv3d_transpose", up_shape, up, up, UP_KERNEL)
            )
            channels = filters
        else:
            layers.append(LayerOutput(f"up{level}", "upsampling", (*level_spatial, channels), 0, 0))
        channels += skip_channels[level]
        layers.append(LayerOutput(f"concat{level}", "concat", (*level_spatial, channels), 0, 0))
        layers += _block(f"decode{level}", level_spatial, channels, filters)
        channels = filters
    mask = _conv_params(OUTPUT_KERNEL_VOLUME, channels, config.classes)
    mask_shape = (*spatial, config.classes)
    layers.append(LayerOutput("mask", "output", mask_shape, mask, mask, OUTPUT_KERNEL))
    return layers


def skip_connections(config: UNetConfig) -> dict[str, str]:
    """Each ``concat`` layer's second input: the output of its level's encoder block.

    The decoder joins the upsampled tensor (first) with this one (second), channels last.
    """
    last = CONVS_PER_BLOCK - 1
    return {f"concat{level}": f"encode{level}_relu{last}" for level in range(config.levels - 1)}


def square_sides(low: int, high: int, **knobs: Any) -> list[int]:
    """Valid sides in ``[low, high]`` of a cube image for a network with these knobs."""
    return valid_sides(int(knobs.get("levels", UNetConfig.levels)), low, high)


def build_model(config: UNetConfig):  # -> keras.Model; TensorFlow is imported lazily
    """Build and compile `layer_outputs(config)` in Keras (Adam 1e-3, Dice loss)."""
    import keras

    keras.mixed_precision.set_global_policy(config.precision)
    joins = skip_connections(config)
    tensors = {}
    for layer in layer_outputs(config):
        if layer.kind == "input":
            x = inputs = keras.Input(shape=layer.shape, name=layer.name)
        elif layer.name in joins:
            skip = tensors[joins[layer.name]]
            x = keras.layers.Concatenate(axis=-1, name=layer.name)([x, skip])
        else:
            x = _keras_layer(layer)(x)
        tensors[layer.name] = x
    model = keras.Model(inputs, x, name=NAME)
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE), loss=dice_loss)
    return model


def _keras_layer(layer: LayerOutput):  # -> keras.Layer
    """The Keras layer of one closed-form layer with one input (every kind but input, concat)."""
    from keras import layers

    channels, name = layer.shape[-1], layer.name
    pool = (POOL_FACTOR,) * DIMS
    if layer.kind == "conv3d":
        return layers.Conv3D(
            channels,
            kernel_size=(BLOCK_KERNEL,) * DIMS,
            padding="same",
            kernel_initializer="he_uniform",
            name=name,
        )
    if layer.kind == "batchnorm":
        return layers.BatchNormalization(name=name)
    if layer.kind == "relu":
        return layers.Activation("relu", name=name)
    if layer.kind == "maxpool":
        return layers.MaxPooling3D(pool_size=pool, name=name)
    if layer.kind == "conv3d_transpose":
        return layers.Conv3DTranspose(
            channels, kernel_size=pool, strides=pool, padding="same", name=name
        )
    if layer.kind == "upsampling":
        return layers.UpSampling3D(size=pool, name=name)
    # The mask: kept in float32 under mixed precision, as Keras advises.
    return layers.Conv3D(
        channels,
        kernel_size=(OUTPUT_KERNEL,) * DIMS,
        activation="sigmoid",
        dtype="float32",
        name=name,
    )


def synthetic_batch(config: UNetConfig, rng):  # -> (images, masks) NumPy arrays
    """Seeded random volumes and binary masks of the configuration's batch."""
    import numpy as np

    batch_shape = (config.batch_size, *config.image_shape)
    images = rng.standard_normal((*batch_shape, config.in_channels), dtype=np.float32)
    masks = (rng.random((*batch_shape, config.classes)) > 0.5).astype(np.float32)
    return images, masks


def dice_loss(y_true, y_pred):
    """Soft Dice loss over the whole batch (smoothing 1, as IntelAI/unet)."""
    import keras.ops as ops

    y_true = ops.cast(y_true, y_pred.dtype)
    intersection = ops.sum(y_true * y_pred)
    return 1.0 - (2.0 * intersection + 1.0) / (ops.sum(y_true) + ops.sum(y_pred) + 1.0)
