"""What every workload shares: the layer record, dtypes, and the arithmetic over layers.

A *workload* is one network memplan can measure and predict (`core.workloads`
lists them). Each workload module describes its network in closed form, layer
by layer (`LayerOutput`), without TensorFlow; this module turns such a
description into sizes: parameters, per-sample activation bytes in each
layer's dtype, and the white paper's Eq. 1 and Eq. 2. Predictions read sizes
from here, so they cost microseconds on a machine without TensorFlow.

Dtypes, as Keras 3 really does it (checked on Keras 3.15, TF 2.21 backend):

* The ``Input`` layer's tensor is float32 under every policy. Its layer reports
  the policy's compute dtype (e.g. float16), but `keras.Input` creates the
  tensor with the default float type, float32; the first layer casts it.
* Every other layer outputs the policy's compute dtype (float16 or bfloat16
  under the mixed policies), BatchNormalization included: it normalises in
  float32 internally but casts its output back.
* The output layer is built with ``dtype="float32"`` (Keras' advice under mixed
  precision) and outputs float32 under every policy.
* Variables are float32 under every policy (mixed precision keeps float32
  master weights), so a parameter always costs 4 bytes.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from math import prod
from types import MappingProxyType
from typing import Any, ClassVar, Protocol

from core.errors import ConfigError

PRECISIONS = ("float32", "mixed_float16", "mixed_bfloat16")
# Beyond this the request is a typo, not a workload.
MAX_BATCH_SIZE = 4096

_SHAPE_PATTERN = re.compile(r"^\s*\d+\s*(?:[xX*]\s*\d+\s*)*$")


class WorkloadConfig(Protocol):
    """One training configuration of some workload: what every consumer may rely on.

    Each workload's config is a frozen dataclass that validates itself on
    construction and names its workload in the class attribute ``workload``.
    """

    workload: ClassVar[str]
    optimizer_slots: ClassVar[int]  # optimizer state values per trainable weight
    image_shape: tuple[int, ...]
    batch_size: int
    precision: str

    @property
    def elements(self) -> int: ...  # values in one sample's image, channels excluded

    @property
    def image_label(self) -> str: ...

    def layers(self) -> list[LayerOutput]: ...

    def input_elements_per_sample(self) -> int: ...  # the input and target values, float32

    def to_dict(self) -> dict[str, Any]: ...


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
    ``kind`` names the layer type (``input``, ``conv3d``, ``dense``, ``output``, ...);
    ``input`` and ``output`` are float32 under every policy. ``kernel`` is the side of a
    convolution's window where the closed form gives it (None elsewhere): a builder reads
    it here, so a knob that changes it lives in the workload module alone.
    """

    name: str
    kind: str
    shape: tuple[int, ...]
    params: int
    trainable_params: int
    kernel: int | None = None

    @property
    def elements(self) -> int:
        """Number of values in one sample's output tensor."""
        return prod(self.shape)


class ImageConfig:
    """What every workload's config dataclass shares (mixed into each ``Config``).

    The dataclass has ``image_shape`` and ``batch_size`` first, then its knobs.
    """

    image_shape: tuple[int, ...]

    @property
    def elements(self) -> int:
        """Pixels or voxels in one sample's image (channels excluded)."""
        return prod(self.image_shape)

    @property
    def image_label(self) -> str:
        """``144`` when every side is equal, ``240x240x144`` otherwise."""
        return format_image_shape(self.image_shape)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: the image shape as a list."""
        return dataclasses.asdict(self) | {"image_shape": list(self.image_shape)}  # type: ignore[call-overload]

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> Any:
        return cls(**(values | {"image_shape": tuple(values["image_shape"])}))


def network_knobs(config_type: type) -> tuple[str, ...]:
    """A config's settings besides the image and the batch, in field order."""
    return tuple(
        field.name
        for field in dataclasses.fields(config_type)
        if field.name not in ("image_shape", "batch_size")
    )


def stored_columns(config: Any, shape_columns: Sequence[str]) -> dict[str, Any]:
    """``config`` as the ``runs`` table stores it: the image sides, batch_size, the knobs."""
    return {
        **dict(zip(shape_columns, config.image_shape, strict=True)),
        "batch_size": config.batch_size,
        **{knob: getattr(config, knob) for knob in network_knobs(type(config))},
    }


def from_stored_columns(config_type: type, row: Mapping[str, Any], shape_columns: Sequence[str]):
    """The inverse of `stored_columns`, from a dict or a pandas row (NumPy scalars).

    Each knob is cast to the type of its default, so NumPy scalars become ints and strs.
    A knob whose column is missing or NULL takes its default: the row was stored before
    the knob existed, when the network was built with what is now its default.
    """
    knobs = {
        field.name: field.default
        if _is_null(row.get(field.name))
        else type(field.default)(row[field.name])
        for field in dataclasses.fields(config_type)
        if field.name not in ("image_shape", "batch_size")
    }
    return config_type(
        image_shape=tuple(int(row[column]) for column in shape_columns),
        batch_size=int(row["batch_size"]),
        **knobs,
    )


def _is_null(value: object) -> bool:
    """None, NaN or pandas' NA: what a frame holds for NULL."""
    if value is None:
        return True
    try:
        return bool(value != value)  # only NaN differs from itself
    except TypeError:  # pandas.NA refuses to be a truth value
        return True


def check_range(name: str, value: object, low: int, high: int) -> None:
    """Raise `ConfigError` unless ``value`` is a whole number in ``[low, high]``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} must be a whole number, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be between {low} and {high}, got {value}")


def check_precision(precision: object) -> None:
    if precision not in PRECISIONS:
        raise ConfigError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")


def parse_image_shape(text: str, dims: int) -> tuple[int, ...]:
    """Parse ``"144"`` (the same side ``dims`` times) or ``dims`` sides joined by 'x'."""
    example = "x".join(["240", "240", "144"][-dims:]) if dims <= 3 else "x".join(["64"] * dims)
    if not _SHAPE_PATTERN.match(str(text)):
        raise ConfigError(
            f"image size {text!r} is not understood: give one whole number for a "
            f"{'cube' if dims == 3 else 'square'} (e.g. 144) or {dims} joined by 'x' "
            f"(e.g. {example})"
        )
    sides = [int(side) for side in re.split(r"[xX*]", str(text))]
    if len(sides) == 1:
        sides *= dims
    if len(sides) != dims:
        raise ConfigError(
            f"image size {text!r} is not understood: it has {len(sides)} sides; this network "
            f"takes {dims} "
            f"(e.g. {example}) or one number for all of them"
        )
    return tuple(sides)


def format_image_shape(shape: tuple[int, ...]) -> str:
    """``144`` when every side is equal, ``240x240x144`` otherwise."""
    if len(set(shape)) == 1:
        return str(shape[0])
    return "x".join(str(side) for side in shape)


def layer_outputs(config: WorkloadConfig) -> list[LayerOutput]:
    """Every layer the workload's Keras builder creates for ``config``, in model order."""
    return config.layers()


def parameter_counts(config: WorkloadConfig) -> tuple[int, int]:
    """(total, trainable) parameters, as ``model.count_params()`` and its trainable weights."""
    layers = layer_outputs(config)
    return sum(layer.params for layer in layers), sum(layer.trainable_params for layer in layers)


def activation_elements_per_sample(config: WorkloadConfig) -> int:
    """Sum of every layer's output elements for one sample, input included (paper Eq. 1 sum)."""
    return sum(layer.elements for layer in layer_outputs(config))


def output_dtype(config: WorkloadConfig, layer: LayerOutput) -> str:
    """The dtype of ``layer``'s output tensor under ``config.precision``, as Keras names it.

    The Input tensor and the float32 ``mask`` layer are float32 under every policy;
    all other layers output the policy's compute dtype.
    """
    if layer.kind in FLOAT32_KINDS:
        return "float32"
    return COMPUTE_DTYPE[config.precision]


def activation_bytes_per_sample(config: WorkloadConfig) -> int:
    """Bytes of every layer's output for one sample, each in its own output dtype."""
    return sum(layer_output_bytes(config, layer) for layer in layer_outputs(config))


def layer_output_bytes(config: WorkloadConfig, layer: LayerOutput) -> int:
    """Bytes of ``layer``'s output for one sample, in its dtype under ``config.precision``."""
    return layer.elements * element_bytes(config, layer)


def element_bytes(config: WorkloadConfig, layer: LayerOutput) -> int:
    """Bytes per value of ``layer``'s output under ``config.precision``."""
    if layer.kind in FLOAT32_KINDS:
        return FLOAT32_BYTES
    return BYTES_PER_ELEMENT[config.precision]


def paper_activation_bytes(config: WorkloadConfig) -> int:
    """White-paper Eq. 1: batch size x bytes of all layer outputs for one sample."""
    return config.batch_size * activation_bytes_per_sample(config)


def paper_weight_bytes(config: WorkloadConfig) -> int:
    """White-paper Eq. 2: total parameters x 4 bytes (variables are always float32)."""
    total, _trainable = parameter_counts(config)
    return total * WEIGHT_BYTES_PER_PARAMETER
