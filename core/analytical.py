"""Closed-form peak-memory models: the white paper's baseline and memplan's refined model.

Both are pure arithmetic over `core.workloads.base`'s layer shapes, so a
prediction costs microseconds and never imports TensorFlow.

* **Paper baseline** (Dell white paper, Eq. 1 + Eq. 2): activation maps =
  batch x every layer's output bytes; weights = parameters x 4 bytes. Nothing
  else, which is why it falls far short: it has no framework, no gradients, no
  optimizer state.
* **Refined model**: what a training step really holds at its peak, the start
  of the backward pass, as a named `MemoryBreakdown`: the framework's own
  resident memory (taken from the measured post-import baseline), weights,
  their gradients, Adam's two slots, the activations the backward pass keeps,
  the gradients alive while differentiating the widest layer, and the input
  batch. Nothing in it is fitted to peaks; the only number taken from data is
  the framework baseline, the median of the runs' measured ``baseline_bytes``.

What it still misses, by design: the memory TensorFlow spends on building the
model and tracing the training step into a graph (oneDNN primitive caches,
the graph itself, allocator slack). On the reference machine that is roughly a
constant 0.2 GiB, so the refined model reads low by about that much.
`modeling.estimators.baselines.AnalyticalLeastSquares` is the model that fits such
constants, on these same terms, by least squares.

* **Convolution-gradient workspace** (`backprop_workspace_bytes`): not a term of
  the refined model, because only some kernels allocate it. TensorFlow's own
  CPU kernels (oneDNN off, or a dtype oneDNN does not take on the CPU) compute
  a convolution's gradients through an im2col buffer of one image, output
  voxels x kernel volume x input channels (``Conv3DCustomBackpropInputOp`` and
  ``...FilterOp`` in tensorflow/core/kernels/conv_grad_ops_3d.cc); oneDNN
  kernels do not. It is a feature the fitted models may weigh per machine.

Pure Python on purpose: `profiling.estimate` (the sweep's pre-check) imports
this module, and must stay light. The estimator wrappers that evaluate these
models like the fitted ones live in `modeling.estimators.analytical`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from core.units import GIB
from core.workloads.base import (
    FLOAT32_BYTES,
    LayerOutput,
    element_bytes,
    layer_output_bytes,
    layer_outputs,
    parameter_counts,
)
from core.workloads.unet3d import UNetConfig

# Variables, their gradients and Adam's slots are float32 under every policy
# (mixed precision keeps float32 master weights and optimizer state).
WEIGHT_BYTES_PER_PARAMETER = FLOAT32_BYTES
GRADIENT_BYTES_PER_PARAMETER = FLOAT32_BYTES
# Layer kinds whose output the backward pass does not keep. A BatchNormalization
# output feeds only the ReLU after it, and TensorFlow's ReLU gradient is computed
# from the ReLU's *output*; the BN gradient needs its input (the conv output,
# kept under the conv's name). So each block keeps 2 of its 3 tensors.
# Every other output is needed: conv/transpose gradients need their input,
# ReLU and max-pool their output (pooling its input too), the concatenation is
# the next conv's input, the sigmoid's gradient needs the mask.
NOT_KEPT_KINDS = frozenset({"batchnorm"})
# While differentiating a layer, the gradient arriving at its output and the one
# it passes to its input are both alive: at the peak, two tensors of the widest layer.
BACKWARD_LIVE_GRADIENTS = 2
# Under mixed precision Keras's BatchNormalization casts its input to float32
# before normalising (keras/src/layers/normalization/batch_normalization.py,
# "BN is prone to overflow ... we upcast to float32"); the gradient needs that
# float32 copy, not the compute-dtype conv output, so the tensor kept under the
# conv's name is float32 whatever the policy.
BATCHNORM_INPUT_BYTES = FLOAT32_BYTES
# Layer kinds whose gradient TensorFlow's own CPU kernels compute through an
# im2col buffer (`backprop_workspace_bytes`). A transposed convolution's buffer
# is as large as its own output, never the largest, so it is left out.
IM2COL_KINDS = frozenset({"conv2d", "conv3d"})
# The input batch (images and masks, float32) lives twice: as the NumPy arrays
# the training loop holds, and as the tensors TensorFlow converts them to.
INPUT_BYTES_PER_ELEMENT = FLOAT32_BYTES
INPUT_COPIES = 2
# The framework baseline used when no run carries a measured one: TensorFlow
# 2.21's post-import resident memory on the reference machine (brief: ~0.72 GiB).
DEFAULT_FRAMEWORK_BYTES = int(0.72 * GIB)

PAPER_TERM_COLUMNS: tuple[str, ...] = ("paper_activation_bytes", "paper_weight_bytes")


@dataclass(frozen=True)
class PaperEstimate:
    """The white paper's Eq. 1 (activation maps) and Eq. 2 (weights), in bytes."""

    activation_bytes: int
    weight_bytes: int

    @property
    def total_bytes(self) -> int:
        return self.activation_bytes + self.weight_bytes


@dataclass(frozen=True)
class MemoryBreakdown:
    """The refined model's peak, term by term, in bytes (field order = display order)."""

    framework_bytes: int  # resident memory of the imported framework, measured
    weight_bytes: int  # every parameter, float32
    gradient_bytes: int  # one gradient per trainable parameter
    optimizer_bytes: int  # the optimizer's slots per trainable parameter (Adam: 2)
    activation_bytes: int  # layer outputs the backward pass keeps, whole batch
    backward_bytes: int  # gradients alive while differentiating the widest layer
    input_bytes: int  # the input batch (images + masks), both copies

    @property
    def total_bytes(self) -> int:
        return sum(self.parts().values())

    def parts(self) -> dict[str, int]:
        """Term name -> bytes, in display order."""
        return dataclasses.asdict(self)


# The term columns `modeling.features` writes, one per breakdown field but the
# framework's, which is a measured constant rather than a property of the config.
REFINED_TERM_COLUMNS: tuple[str, ...] = tuple(
    field.name for field in dataclasses.fields(MemoryBreakdown) if field.name != "framework_bytes"
)


def paper_estimate(config: UNetConfig) -> PaperEstimate:
    """The white paper's analytical model (Eq. 1 + Eq. 2) for ``config``.

    Equal to `core.workloads.base.paper_activation_bytes` and
    `paper_weight_bytes`, computed from the cached per-sample sizes.
    """
    per_sample = _per_sample(config)
    return PaperEstimate(
        activation_bytes=config.batch_size * per_sample.all_bytes,
        weight_bytes=per_sample.total_params * WEIGHT_BYTES_PER_PARAMETER,
    )


@dataclass(frozen=True)
class _PerSample:
    """What one sample of a configuration costs, and its parameter counts."""

    all_bytes: int  # every layer output (the paper's Eq. 1 sum)
    kept_bytes: int
    widest_bytes: int
    input_bytes: int
    workspace_bytes: int  # not per sample: the buffer is one image's whatever the batch
    total_params: int
    trainable_params: int


# Sizing scans thousands of configurations that differ only in batch or side;
# walking ~100 layers for each would make a dashboard slider lag.
@lru_cache(maxsize=4096)
def _per_sample_cached(config: UNetConfig) -> _PerSample:
    layers = layer_outputs(config)
    sizes = [(layer, layer_output_bytes(config, layer)) for layer in layers]
    total_params, trainable = parameter_counts(config)
    return _PerSample(
        all_bytes=sum(size for _, size in sizes),
        kept_bytes=_kept_bytes(config, layers),
        widest_bytes=max(size for _, size in sizes),
        input_bytes=config.input_elements_per_sample() * INPUT_BYTES_PER_ELEMENT * INPUT_COPIES,
        workspace_bytes=_largest_im2col_bytes(config, layers),
        total_params=total_params,
        trainable_params=trainable,
    )


def _kept_bytes(config: UNetConfig, layers: list[LayerOutput]) -> int:
    """Bytes of one sample's layer outputs that the backward pass keeps."""
    kept = 0
    for layer, following in zip(layers, [*layers[1:], None], strict=True):
        if layer.kind in NOT_KEPT_KINDS:
            continue
        if following is not None and following.kind == "batchnorm":
            kept += layer.elements * BATCHNORM_INPUT_BYTES
        else:
            kept += layer_output_bytes(config, layer)
    return kept


def backprop_workspace_bytes(config: UNetConfig) -> int:
    """The largest im2col buffer TensorFlow's own CPU kernels allocate for one gradient.

    Per convolution: one image's output positions x kernel volume x input
    channels, in the compute dtype. The kernels allocate it per shard of
    images that fits the L3 cache, which for these volumes is one image, so the
    buffer does not grow with the batch. oneDNN's kernels do not allocate it;
    see the module docstring.
    """
    return _per_sample(config).workspace_bytes


def _largest_im2col_bytes(config: UNetConfig, layers: list[LayerOutput]) -> int:
    """`backprop_workspace_bytes` from the layer list."""
    largest = 0
    for layer in layers:
        if layer.kind not in IM2COL_KINDS:
            continue
        filters = layer.shape[-1]
        positions = layer.elements // filters
        patch = layer.params // filters - 1  # kernel volume x input channels (one bias each)
        largest = max(largest, positions * patch * element_bytes(config, layer))
    return largest


def _per_sample(config: UNetConfig) -> _PerSample:
    """Per-sample sizes of ``config`` (looked up at batch 1, so batches share the entry)."""
    return _per_sample_cached(dataclasses.replace(config, batch_size=1))


def refined_breakdown(
    config: UNetConfig, framework_bytes: int = DEFAULT_FRAMEWORK_BYTES
) -> MemoryBreakdown:
    """The refined closed-form peak of training ``config`` (see the module docstring).

    framework_bytes : the framework's post-import resident memory, bytes; pass
    the median of the measured ``baseline_bytes`` of the machine you predict for.
    """
    if framework_bytes < 0:
        raise ValueError(f"framework_bytes must be >= 0, got {framework_bytes}")
    per_sample = _per_sample(config)
    trainable = per_sample.trainable_params
    batch = config.batch_size
    return MemoryBreakdown(
        framework_bytes=int(framework_bytes),
        weight_bytes=per_sample.total_params * WEIGHT_BYTES_PER_PARAMETER,
        gradient_bytes=trainable * GRADIENT_BYTES_PER_PARAMETER,
        optimizer_bytes=config.optimizer_slots * trainable * WEIGHT_BYTES_PER_PARAMETER,
        activation_bytes=batch * per_sample.kept_bytes,
        backward_bytes=batch * BACKWARD_LIVE_GRADIENTS * per_sample.widest_bytes,
        input_bytes=batch * per_sample.input_bytes,
    )
