"""The reference workload: the 3D U-Net of IntelAI/unet (``3D/model.py``).

`UNetConfig` names one training configuration (architecture knobs, image
shape, batch) and validates it without importing TensorFlow, so the CLI and
the dashboard can refuse a bad size instantly. `build_model` turns a valid
configuration into a compiled Keras model; only the profiled child process
calls it.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any

from profiling.errors import ConfigError

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
UPSAMPLING_MODES = ("transpose", "upsample")

# Beyond these the request is a typo, not a workload: a 4096^3 float32 volume
# is already 256 GiB for the input tensor alone.
MAX_IMAGE_SIDE = 4096
MAX_BATCH_SIZE = 4096
MAX_BASE_FILTERS = 1024
MAX_LEVELS = 8
MAX_CHANNELS = 1024

_SHAPE_PATTERN = re.compile(r"^\s*(\d+)\s*(?:[xX*]\s*(\d+)\s*[xX*]\s*(\d+))?\s*$")


@dataclass(frozen=True)
class UNetConfig:
    """One training configuration of the reference 3D U-Net.

    image_shape : (depth, height, width) in voxels, channels-last input.
    Defaults are the reference network: 5 levels, 16 base filters, 1 input
    channel, 1 output class, float32, transposed-convolution upsampling.
    """

    image_shape: tuple[int, int, int]
    batch_size: int = 1
    base_filters: int = 16
    levels: int = 5
    in_channels: int = 1
    classes: int = 1
    precision: str = "float32"
    upsampling: str = "transpose"

    def __post_init__(self) -> None:
        validate(self)

    @property
    def voxels(self) -> int:
        depth, height, width = self.image_shape
        return depth * height * width

    @property
    def image_label(self) -> str:
        """``144`` for a cube, ``240x240x144`` otherwise."""
        return format_image_shape(self.image_shape)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"image_shape": list(self.image_shape)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> UNetConfig:
        return cls(**(values | {"image_shape": tuple(values["image_shape"])}))


# The network's settings besides the image and the batch: every field of
# UNetConfig but those two, in field order.
NETWORK_KNOBS: tuple[str, ...] = tuple(
    field.name for field in fields(UNetConfig)
    if field.name not in ("image_shape", "batch_size")
)  # fmt: skip
SHAPE_COLUMNS: tuple[str, ...] = ("depth", "height", "width")  # image_shape, as stored


def config_columns(config: UNetConfig) -> dict[str, Any]:
    """``config`` as the runs table stores it: depth, height, width, batch_size, the knobs."""
    return {
        **dict(zip(SHAPE_COLUMNS, config.image_shape, strict=True)),
        "batch_size": config.batch_size,
        **{knob: getattr(config, knob) for knob in NETWORK_KNOBS},
    }


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
    match = _SHAPE_PATTERN.match(str(text))
    if not match:
        raise ConfigError(
            f"image size {text!r} is not understood: give one whole number for a cube "
            "(e.g. 144) or three joined by 'x' (e.g. 240x240x144)"
        )
    sides = [int(group) for group in match.groups() if group is not None]
    if len(sides) == 1:
        sides *= 3
    return (sides[0], sides[1], sides[2])


def format_image_shape(shape: tuple[int, int, int]) -> str:
    if shape[0] == shape[1] == shape[2]:
        return str(shape[0])
    return "x".join(str(side) for side in shape)


def _check_range(name: str, value: object, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")


def validate(config: UNetConfig) -> None:
    """Raise `ConfigError` naming what is wrong and what would be right."""
    _check_range("levels", config.levels, 2, MAX_LEVELS)
    _check_range("batch size", config.batch_size, 1, MAX_BATCH_SIZE)
    _check_range("base filters", config.base_filters, 1, MAX_BASE_FILTERS)
    _check_range("input channels", config.in_channels, 1, MAX_CHANNELS)
    _check_range("output classes", config.classes, 1, MAX_CHANNELS)
    if config.precision not in PRECISIONS:
        raise ConfigError(f"precision {config.precision!r} is not one of {', '.join(PRECISIONS)}")
    if config.upsampling not in UPSAMPLING_MODES:
        raise ConfigError(
            f"upsampling {config.upsampling!r} is not one of {', '.join(UPSAMPLING_MODES)}"
        )
    if len(config.image_shape) != 3:
        raise ConfigError(
            f"image shape needs 3 sides (depth, height, width), got {config.image_shape!r}"
        )
    multiple = size_multiple(config.levels)
    for side in config.image_shape:
        _check_range("image side", side, 1, MAX_IMAGE_SIDE)
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


def build_model(config: UNetConfig):  # -> keras.Model; TensorFlow is imported lazily
    """Build and compile the reference 3D U-Net (Adam 1e-3, Dice loss)."""
    import keras
    from keras import layers

    if config.precision != "float32":
        keras.mixed_precision.set_global_policy(config.precision)
    else:
        keras.mixed_precision.set_global_policy("float32")

    conv_params = dict(kernel_size=(3, 3, 3), padding="same", kernel_initializer="he_uniform")

    def block(x, name: str, filters: int):
        for index in range(2):
            x = layers.Conv3D(filters, **conv_params, name=f"{name}_conv{index}")(x)
            x = layers.BatchNormalization(name=f"{name}_bn{index}")(x)
            x = layers.Activation("relu", name=f"{name}_relu{index}")(x)
        return x

    inputs = keras.Input(shape=(*config.image_shape, config.in_channels), name="images")
    skips = []
    x = inputs
    for level in range(config.levels - 1):
        x = block(x, f"encode{level}", config.base_filters * 2**level)
        skips.append(x)
        x = layers.MaxPooling3D(pool_size=(2, 2, 2), name=f"pool{level}")(x)
    x = block(x, "bottom", config.base_filters * 2 ** (config.levels - 1))
    for level in reversed(range(config.levels - 1)):
        filters = config.base_filters * 2**level
        if config.upsampling == "transpose":
            x = layers.Conv3DTranspose(
                filters, kernel_size=(2, 2, 2), strides=(2, 2, 2), padding="same", name=f"up{level}"
            )(x)
        else:
            x = layers.UpSampling3D(size=(2, 2, 2), name=f"up{level}")(x)
        x = layers.Concatenate(axis=-1, name=f"concat{level}")([x, skips[level]])
        x = block(x, f"decode{level}", filters)
    # Keep the prediction in float32 under mixed precision, as Keras advises.
    outputs = layers.Conv3D(
        config.classes, kernel_size=(1, 1, 1), activation="sigmoid", dtype="float32", name="mask"
    )(x)
    model = keras.Model(inputs, outputs, name="unet3d")
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=1e-3), loss=dice_loss)
    return model


def dice_loss(y_true, y_pred):
    """Soft Dice loss over the whole batch (smoothing 1, as IntelAI/unet)."""
    import keras.ops as ops

    y_true = ops.cast(y_true, y_pred.dtype)
    intersection = ops.sum(y_true * y_pred)
    return 1.0 - (2.0 * intersection + 1.0) / (ops.sum(y_true) + ops.sum(y_pred) + 1.0)
