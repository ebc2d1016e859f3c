"""The second workload: the AlexNet-style 2D CNN of Torres, Barrios & Denneulin (2021).

Torres et al. ("Computational Resource Consumption in Convolutional Neural
Network Training - A Focus on Memory") train AlexNet in TensorFlow on
synthetic data over batch sizes. The network is Krizhevsky et al. (2012) as a
single tower, channels last, 224x224x3 by default: five convolutions (ReLU
inside each Conv2D), three 3x3/2 max-poolings, two 4096-unit ReLU dense layers
each followed by dropout 0.5, and a softmax classifier built with
``dtype="float32"`` (the output layer, float32 under mixed precision, as the
U-Net's mask). There is no local response normalisation: Keras has no such
layer, and later work found it does little. Training is SGD (momentum 0.9,
learning rate 0.01, Krizhevsky's) on sparse categorical cross-entropy over
integer labels, so the optimizer keeps one momentum value per trainable weight.

`AlexNetConfig` names one training configuration and validates it without
importing TensorFlow. `layer_outputs` states in plain arithmetic the network
both frameworks build, the one description of it: every layer in model order
under its Keras name (the Caffe reference names: conv1..conv5, pool1, pool2,
pool5, fc6..fc8), its per-sample output shape (channels last) and its
parameters. `build_model` builds it in Keras
(``tests/integration/test_alexnet_vs_keras.py`` checks every layer against real
Keras models), ``core/workloads/alexnet_torch.py`` (`TORCH_BUILDER`) in native
PyTorch. `build_model` and `synthetic_batch` are for the profiled child process
only (they import TensorFlow / NumPy lazily).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

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
    SizingOffer,
    WorkloadLabels,
    check_knobs,
    with_default,
)

if TYPE_CHECKING:
    import keras
    import numpy as np

NAME = "alexnet"
TITLE = "AlexNet-style 2D CNN (Torres et al. 2021)"
DIMS = 2

# Beyond these the request is a typo, not a workload: a 4096x4096 image already
# makes conv1's float32 output 0.4 GB per sample, 100 000 classes make fc8 1.6 GB.
MAX_IMAGE_SIDE = 4096
MAX_CLASSES = 100_000

# SGD with momentum keeps one momentum value per trainable weight.
SGD_MOMENTUM_SLOTS = 1
SGD_MOMENTUM = 0.9
LEARNING_RATE = 0.01  # Krizhevsky et al. 2012


@dataclass(frozen=True)
class _Conv:
    """One ReLU convolution of the feature extractor, and the pooling after it, if any."""

    name: str
    filters: int
    kernel: int  # square kernel side
    stride: int
    padding: str  # "valid" or "same", as Keras names them
    pool: str | None  # name of the max-pooling that follows, None if none


# Krizhevsky's five convolutions, single tower; pools named as Caffe's reference.
CONVOLUTIONS = (
    _Conv("conv1", 96, 11, 4, "valid", "pool1"),
    _Conv("conv2", 256, 5, 1, "same", "pool2"),
    _Conv("conv3", 384, 3, 1, "same", None),
    _Conv("conv4", 384, 3, 1, "same", None),
    _Conv("conv5", 256, 3, 1, "same", "pool5"),
)
CONVOLUTION_NAMED = {conv.name: conv for conv in CONVOLUTIONS}
# Overlapping max-pooling, 3x3 windows at stride 2, no padding.
POOL_SIZE = 3
POOL_STRIDE = 2
# The classifier: two ReLU dense layers, each followed by dropout, then fc8.
HIDDEN_LAYERS = (("fc6", "drop6"), ("fc7", "drop7"))
HIDDEN_UNITS = 4096
DROPOUT_RATE = 0.5
OUTPUT_NAME = "fc8"
# The module that builds the network in native PyTorch (loaded by name, only when asked:
# core.workloads.torch_training), from `layer_outputs`.
TORCH_BUILDER = "core.workloads.alexnet_torch"


def _conv_side(side: int, conv: _Conv) -> int:
    """A convolution's output side, as Keras computes it."""
    if conv.padding == "valid":
        return (side - conv.kernel) // conv.stride + 1
    return -(-side // conv.stride)  # "same": ceil(side / stride)


def _pool_side(side: int) -> int:
    """A "valid" max-pooling's output side (nothing left when below 1)."""
    return (side - POOL_SIZE) // POOL_STRIDE + 1


def _smallest_side() -> int:
    """The smallest image side that leaves at least one value after the last pooling.

    Walks the feature extractor backwards from a 1-wide output, taking at each
    layer the smallest input that yields the side needed after it.
    """
    side = 1
    for conv in reversed(CONVOLUTIONS):
        if conv.pool is not None:
            side = (side - 1) * POOL_STRIDE + POOL_SIZE
        kernel = conv.kernel if conv.padding == "valid" else 1
        side = (side - 1) * conv.stride + kernel
    return side


MIN_IMAGE_SIDE = _smallest_side()  # 67

# The network's knobs, in the order of AlexNetConfig's fields; ImageNet's defaults.
KNOBS = (
    with_default(IN_CHANNELS, 3),
    with_default(CLASSES, 1000, high=MAX_CLASSES),
    PRECISION,
)
_DEFAULTS = {knob.name: knob.default for knob in KNOBS}
LABELS = WorkloadLabels(
    optimizer="SGD momentum",
    short_knob=("classes", "classes"),
    sizing_knobs=(
        SizingOffer(
            "classes",
            (10, 100, 1000, 10000),
            help="Output classes: the width of the classifier's last layer (fc8).",
        ),
        PRECISION_OFFER,
    ),
    # An ImageNet-sized 224^2 image at batch 32: the question the Sizing page opens on.
    default_side=224,
    default_batch=32,
    largest_side=224,
    starting_grid=((96, 128, 160, 192, 224), (1, 2, 4)),
    sweep_sizes="128 224",
    sides_help="Each side must be at least 67 (what conv1 and three poolings leave something of).",
)


@dataclass(frozen=True)
class AlexNetConfig(ImageConfig):
    """One training configuration of the AlexNet-style CNN.

    image_shape : (height, width) in pixels, channels-last input. Defaults are
    the ImageNet network: 3 input channels, 1000 classes, float32.
    """

    workload: ClassVar[str] = NAME
    optimizer_slots: ClassVar[int] = SGD_MOMENTUM_SLOTS

    image_shape: tuple[int, int]
    batch_size: int = 1
    in_channels: int = _DEFAULTS["in_channels"]
    classes: int = _DEFAULTS["classes"]
    precision: str = _DEFAULTS["precision"]

    def __post_init__(self) -> None:
        validate(self)

    def layers(self) -> list[LayerOutput]:
        return layer_outputs(self)

    def input_elements_per_sample(self) -> int:
        """The image's channels per pixel, plus the sample's one integer label."""
        return self.elements * self.in_channels + 1


Config = AlexNetConfig  # the name `core.workloads` looks for in every workload module

# The network's settings besides the image and the batch, in field order.
NETWORK_KNOBS: tuple[str, ...] = tuple(knob.name for knob in KNOBS)
SHAPE_COLUMNS: tuple[str, ...] = ("height", "width")  # image_shape, as stored


def config_columns(config: AlexNetConfig) -> dict[str, Any]:
    """``config`` as the runs table stores it: height, width, batch_size, the knobs."""
    return stored_columns(config, SHAPE_COLUMNS)


def config_from_row(row: Mapping[str, Any]) -> AlexNetConfig:
    """The inverse of `config_columns`, from a dict or a pandas row (NumPy scalars)."""
    return from_stored_columns(AlexNetConfig, row, SHAPE_COLUMNS)


def parse_image_shape(text: str) -> tuple[int, int]:
    """Parse ``"224"`` (a square) or ``"227x200"`` (height x width)."""
    return parse_shape(text, DIMS)  # type: ignore[return-value]


def nearest_valid_sizes(side: int) -> tuple[int, int]:
    """The valid sides just below and just above ``side``.

    Unlike the U-Net, AlexNet takes any side from `MIN_IMAGE_SIDE` to
    `MAX_IMAGE_SIDE` (its layers floor odd sides away), so a side in that range
    is its own nearest; below it both are the minimum, above it both the maximum.
    """
    nearest = min(max(side, MIN_IMAGE_SIDE), MAX_IMAGE_SIDE)
    return nearest, nearest


def square_sides(low: int, high: int, **knobs: Any) -> list[int]:
    """Valid sides in ``[low, high]`` of a square image (no knob changes which are valid)."""
    return valid_sides(low, high)


def valid_sides(low: int, high: int) -> list[int]:
    """All valid sides in ``[low, high]``: every whole number in the network's range."""
    return list(range(max(low, MIN_IMAGE_SIDE), min(high, MAX_IMAGE_SIDE) + 1))


def validate(config: AlexNetConfig) -> None:
    """Raise `ConfigError` naming what is wrong and what would be right."""
    check_range("batch size", config.batch_size, 1, MAX_BATCH_SIZE)
    check_knobs(config, KNOBS)
    if len(config.image_shape) != DIMS:
        raise ConfigError(
            f"image shape needs {DIMS} sides (height, width), got {config.image_shape!r}"
        )
    first = CONVOLUTIONS[0]
    pools = sum(conv.pool is not None for conv in CONVOLUTIONS)
    for side in config.image_shape:
        whole = isinstance(side, int) and not isinstance(side, bool)
        if whole and 0 < side < MIN_IMAGE_SIDE:
            raise ConfigError(
                f"image side {side} is too small for AlexNet: after {first.name} "
                f"({first.kernel}x{first.kernel}, stride {first.stride}) and the {pools} "
                f"max-poolings ({POOL_SIZE}x{POOL_SIZE}, stride {POOL_STRIDE}) nothing would "
                f"be left; the smallest valid side is {MIN_IMAGE_SIDE}"
            )
        check_range("image side", side, MIN_IMAGE_SIDE, MAX_IMAGE_SIDE)


def _weights_and_biases(fan_in: int, units: int) -> int:
    """A Conv2D's or Dense's parameters: ``fan_in`` weights per unit plus one bias each."""
    return fan_in * units + units


def layer_outputs(config: AlexNetConfig) -> list[LayerOutput]:
    """Every layer of the network, in model order, under its Keras name: what both builders
    create (`build_model` in Keras, `TORCH_BUILDER` in PyTorch), each reading the one before.

    A ``conv2d`` layer's kernel, stride and padding are its `CONVOLUTION_NAMED` entry's.
    """
    height, width = config.image_shape
    channels = config.in_channels
    layers = [LayerOutput("images", "input", (height, width, channels), 0, 0)]
    for conv in CONVOLUTIONS:
        height, width = _conv_side(height, conv), _conv_side(width, conv)
        params = _weights_and_biases(conv.kernel * conv.kernel * channels, conv.filters)
        channels = conv.filters
        layers.append(LayerOutput(conv.name, "conv2d", (height, width, channels), params, params))
        if conv.pool is not None:
            height, width = _pool_side(height), _pool_side(width)
            layers.append(LayerOutput(conv.pool, "maxpool", (height, width, channels), 0, 0))
    units = height * width * channels
    layers.append(LayerOutput("flatten", "flatten", (units,), 0, 0))
    for dense_name, dropout_name in HIDDEN_LAYERS:
        params = _weights_and_biases(units, HIDDEN_UNITS)
        units = HIDDEN_UNITS
        layers += [
            LayerOutput(dense_name, "dense", (units,), params, params),
            LayerOutput(dropout_name, "dropout", (units,), 0, 0),
        ]
    params = _weights_and_biases(units, config.classes)
    layers.append(LayerOutput(OUTPUT_NAME, "output", (config.classes,), params, params))
    return layers


def build_model(config: AlexNetConfig) -> keras.Model:  # TensorFlow is imported lazily
    """Build and compile `layer_outputs(config)` in Keras (SGD momentum 0.9, lr 0.01, sparse CE)."""
    import keras

    keras.mixed_precision.set_global_policy(config.precision)
    input_layer, *layers = layer_outputs(config)
    x = inputs = keras.Input(shape=input_layer.shape, name=input_layer.name)
    for layer in layers:
        x = _keras_layer(layer)(x)
    model = keras.Model(inputs, x, name=NAME)
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=LEARNING_RATE, momentum=SGD_MOMENTUM),
        loss=keras.losses.SparseCategoricalCrossentropy(),
    )
    return model


def _keras_layer(layer: LayerOutput) -> keras.Layer:
    """The Keras layer of one closed-form layer (every kind but input)."""
    from keras import layers

    units, name = layer.shape[-1], layer.name
    if layer.kind == "conv2d":
        conv = CONVOLUTION_NAMED[name]
        return layers.Conv2D(
            units,
            kernel_size=conv.kernel,
            strides=conv.stride,
            padding=conv.padding,
            activation="relu",
            name=name,
        )
    if layer.kind == "maxpool":
        return layers.MaxPooling2D(pool_size=POOL_SIZE, strides=POOL_STRIDE, name=name)
    if layer.kind == "flatten":
        return layers.Flatten(name=name)
    if layer.kind == "dense":
        return layers.Dense(units, activation="relu", name=name)
    if layer.kind == "dropout":
        return layers.Dropout(DROPOUT_RATE, name=name)
    # The prediction: kept in float32 under mixed precision, as Keras advises.
    return layers.Dense(units, activation="softmax", dtype="float32", name=name)


def synthetic_batch(
    config: AlexNetConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """One batch of random images (float32, NHWC) and integer labels in ``[0, classes)``."""
    import numpy as np

    images = rng.standard_normal(
        (config.batch_size, *config.image_shape, config.in_channels), dtype=np.float32
    )
    labels = rng.integers(0, config.classes, size=config.batch_size, dtype=np.int32)
    return images, labels
