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
  the gradients alive at the backward pass's largest step, and the input
  batch. Nothing in it is fitted to peaks; the only number taken from data is
  the framework baseline, the median of the runs' measured ``baseline_bytes``.
* **Mixed precision**: variables, gradients and Adam's slots
  stay float32; each layer that computes in the compute dtype reads a cast copy
  of its weights (kept: its input gradient needs it); activations are held in
  the dtype of the layer that made them, and a tensor the next layer reads in
  another dtype is cast, the copy kept for that layer's gradient
  (BatchNormalization reads float32, the float32 output layer reads float32,
  the first layer reads the float32 images in the compute dtype), and
  BatchNormalization differentiates in float32, so the backward pass's largest
  step stays float32 on the U-Net (`core.kept_tensors`).

What it still misses, by design: the memory TensorFlow spends on building the
model and tracing the training step into a graph (oneDNN primitive caches,
the graph itself, allocator slack). On the reference machine that is roughly a
constant 0.2 GiB, so the refined model reads low by about that much.
`modeling.estimators.baselines.AnalyticalLeastSquares` is the model that fits such
constants, on these same terms, by least squares.

* **Convolution-gradient workspace** (`backprop_workspace_bytes`): not a term of
  the refined model, because only some kernels allocate it. TensorFlow's own
  CPU kernels (oneDNN off, or a dtype oneDNN does not take on the CPU) compute
  a convolution's gradients through im2col buffers, output voxels x kernel
  volume x input channels per image (``Conv3DCustomBackpropInputOp`` and
  ``...FilterOp`` in tensorflow/core/kernels/conv_grad_ops_3d.cc); oneDNN
  kernels do not. How many images one buffer holds depends on the L3 cache
  size the kernels read (`conv_gradient_buffers`), a fact of the machine
  (`core.machine.l3_cache_bytes`). It is a feature the fitted models may weigh
  per machine.

Pure Python on purpose: `profiling.estimate` (the sweep's pre-check) imports
this module, and must stay light. The estimator wrappers that evaluate these
models like the fitted ones live in `modeling.estimators.analytical`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import lru_cache

from core.kept_tensors import backward_live, kept_tensors, weight_cast_bytes
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
# Layer kinds whose gradient TensorFlow's own CPU kernels compute through an
# im2col buffer (`backprop_workspace_bytes`). A transposed convolution's buffer
# is as large as its own output, never the largest, so it is left out.
IM2COL_KINDS = frozenset({"conv2d", "conv3d"})
# Those whose buffers `conv_gradient_buffers` does not size: the 2D kernels keep the
# one-image rule, which is not checked against them.
PLANAR_IM2COL_KINDS = frozenset({"conv2d"})
# The 3D kernels fall back on Eigen's buffer-free ones when a buffer would hold more
# than this many times the elements of the op's tensors (input, filter and
# out_backprop): ``kMaxTempAllocationOverhead`` in conv_grad_ops_3d.cc.
MAX_TEMP_ALLOCATION_OVERHEAD = 25
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
    weight_bytes: int  # every parameter, float32, + mixed precision's cast copies
    gradient_bytes: int  # one gradient per trainable parameter
    optimizer_bytes: int  # the optimizer's slots per trainable parameter (Adam: 2)
    activation_bytes: int  # layer outputs the backward pass keeps, whole batch
    backward_bytes: int  # gradients alive at the backward pass's largest step
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
    backward_bytes: int  # gradients alive at the backward pass's largest step
    input_bytes: int
    workspace_bytes: int  # not per sample: the buffer is one image's whatever the batch
    total_params: int
    trainable_params: int
    weight_cast_bytes: int  # not per sample: the compute-dtype copy of each cast weight


# Sizing scans thousands of configurations that differ only in batch or side;
# walking ~100 layers for each would make a dashboard slider lag.
@lru_cache(maxsize=4096)
def _per_sample_cached(config: UNetConfig) -> _PerSample:
    layers = layer_outputs(config)
    sizes = [(layer, layer_output_bytes(config, layer)) for layer in layers]
    total_params, trainable = parameter_counts(config)
    kept = kept_tensors(config, layers)
    backward_bytes = backward_live(config, layers)
    return _PerSample(
        all_bytes=sum(size for _, size in sizes),
        kept_bytes=sum(elements * value_bytes for elements, value_bytes in kept),
        backward_bytes=backward_bytes,
        input_bytes=config.input_elements_per_sample() * INPUT_BYTES_PER_ELEMENT * INPUT_COPIES,
        workspace_bytes=_largest_im2col_bytes(config, layers),
        total_params=total_params,
        trainable_params=trainable,
        weight_cast_bytes=weight_cast_bytes(config, layers),
    )


def backprop_workspace_bytes(config: UNetConfig, l3_cache_bytes: int | None = None) -> int:
    """The im2col memory TensorFlow's own CPU kernels hold while differentiating a convolution.

    With the L3 cache size the kernels read (``l3_cache_bytes``, a fact of the
    machine): the largest sum of one 3D convolution's input- and filter-gradient
    buffers (`conv_gradient_buffers`), which TensorFlow's executor may run side by
    side. Without it (runs recorded before memplan read it): the largest single
    buffer of one image, as if every shard were one image and no kernel fell back.
    oneDNN's kernels allocate no such buffer; see the module docstring.
    """
    if l3_cache_bytes is None:
        return _per_sample(config).workspace_bytes
    return _sharded_workspace_bytes(config, int(l3_cache_bytes))


INPUT_GRADIENT = "input"  # Conv3DCustomBackpropInputOp: the gradient a layer passes back
FILTER_GRADIENT = "filter"  # Conv3DCustomBackpropFilterOp: the gradient of its kernel
GRADIENT_KERNELS = (INPUT_GRADIENT, FILTER_GRADIENT)


@dataclass(frozen=True)
class Conv3DShape:
    """One stride-1 3D convolution as its gradient kernels see it, elements per image."""

    batch: int
    input_elements: int  # the layer's input: voxels x input channels
    positions: int  # output voxels
    patch: int  # kernel volume x input channels
    filters: int  # output channels


def im2col_touched_bytes(
    shape: Conv3DShape, gradient: str, value_bytes: int, l3_cache_bytes: int
) -> int:
    """The im2col bytes one of TensorFlow's custom 3D gradient kernels writes (0: it falls back).

    Following tensorflow/core/kernels/conv_grad_ops_3d.cc: one image's buffer is
    output voxels x kernel volume x input channels; a buffer holds as many images
    as fit ``l3_cache_bytes`` with the matrices they multiply (rounded up), except
    that the input gradient of a batch of 1 takes one; a kernel whose buffer would
    hold more than `MAX_TEMP_ALLOCATION_OVERHEAD` times the elements of its tensors
    runs Eigen's buffer-free kernel instead. Only the batch's images are written,
    so only they count: untouched pages take no memory. Checked op by op against
    TensorFlow 2.21 (`benchmarks.conv_buffers`).
    """
    if gradient not in GRADIENT_KERNELS:
        raise ValueError(f"gradient {gradient!r} is not one of {', '.join(GRADIENT_KERNELS)}")
    image_buffer = shape.positions * shape.patch
    work_unit = image_buffer + shape.positions * shape.filters + shape.patch * shape.filters
    images = -(-(l3_cache_bytes // value_bytes) // work_unit)
    if gradient == INPUT_GRADIENT and shape.batch == 1:
        images = 1  # a batch of 1 runs one parallel contraction instead of shards
    tensors = (
        shape.batch * (shape.input_elements + shape.positions * shape.filters)
        + shape.patch * shape.filters
    )
    if images * image_buffer // tensors > MAX_TEMP_ALLOCATION_OVERHEAD:
        return 0
    return min(images, shape.batch) * image_buffer * value_bytes


@dataclass(frozen=True)
class ConvGradientBuffers:
    """The im2col bytes one 3D convolution's gradient kernels touch (0: none allocated)."""

    layer: str
    input_bytes: int
    filter_bytes: int


def conv_gradient_buffers(config: UNetConfig, l3_cache_bytes: int) -> list[ConvGradientBuffers]:
    """Each 3D convolution's im2col buffers (`im2col_touched_bytes`) on a machine's L3 cache.

    The first convolution passes no gradient back to the images, so it has no
    input-gradient buffer.
    """
    return _conv3d_buffers(config, layer_outputs(config), l3_cache_bytes)


def _im2col_dims(layer: LayerOutput) -> tuple[int, int, int]:
    """A convolution layer's output positions, patch (kernel volume x input channels), filters."""
    filters = layer.shape[-1]
    patch = layer.params // filters - 1  # one bias per filter
    return layer.elements // filters, patch, filters


def _conv3d_buffers(
    config: UNetConfig, layers: list[LayerOutput], l3_cache_bytes: int
) -> list[ConvGradientBuffers]:
    """`conv_gradient_buffers` from the layer list."""
    buffers = []
    for previous, layer in zip(layers, layers[1:], strict=False):
        if layer.kind != "conv3d":
            continue
        positions, patch, filters = _im2col_dims(layer)
        shape = Conv3DShape(
            batch=config.batch_size,
            input_elements=previous.elements,
            positions=positions,
            patch=patch,
            filters=filters,
        )
        value_bytes = element_bytes(config, layer)
        touched = {
            gradient: im2col_touched_bytes(shape, gradient, value_bytes, l3_cache_bytes)
            for gradient in GRADIENT_KERNELS
        }
        buffers.append(
            ConvGradientBuffers(
                layer=layer.name,
                input_bytes=touched[INPUT_GRADIENT] if previous.kind != "input" else 0,
                filter_bytes=touched[FILTER_GRADIENT],
            )
        )
    return buffers


@lru_cache(maxsize=4096)
def _sharded_workspace_bytes(config: UNetConfig, l3_cache_bytes: int) -> int:
    layers = layer_outputs(config)
    buffers = _conv3d_buffers(config, layers, l3_cache_bytes)
    sharded = max((b.input_bytes + b.filter_bytes for b in buffers), default=0)
    # 2D kernels shard differently (conv_grad_input_ops.cc); they keep the one-image rule.
    return max(sharded, _largest_im2col_bytes(config, layers, PLANAR_IM2COL_KINDS))


def _largest_im2col_bytes(
    config: UNetConfig, layers: list[LayerOutput], kinds: frozenset[str] = IM2COL_KINDS
) -> int:
    """The largest one-image im2col buffer among ``layers`` of ``kinds``."""
    largest = 0
    for layer in layers:
        if layer.kind not in kinds:
            continue
        positions, patch, _ = _im2col_dims(layer)
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
        weight_bytes=per_sample.total_params * WEIGHT_BYTES_PER_PARAMETER
        + per_sample.weight_cast_bytes,
        gradient_bytes=trainable * GRADIENT_BYTES_PER_PARAMETER,
        optimizer_bytes=config.optimizer_slots * trainable * WEIGHT_BYTES_PER_PARAMETER,
        activation_bytes=batch * per_sample.kept_bytes,
        backward_bytes=batch * per_sample.backward_bytes,
        input_bytes=batch * per_sample.input_bytes,
    )
