"""Which tensors of one sample the backward pass keeps, and in which dtype.

The rules of the refined closed form (`core.analytical`) for activations, and
for what mixed precision adds: Keras keeps variables, their gradients and the
optimizer's slots in float32 under every policy, and casts what crosses
between float32 and the compute dtype. A layer computing in the compute dtype
reads its weights through a cast (`weight_cast_bytes`); BatchNormalization
reads its input in float32; the float32 output layer reads the last activation
in float32 and the first layer reads the float32 images in the compute dtype.
Each cast copy that a gradient needs is kept until the backward pass has used
it. BatchNormalization also differentiates in float32 (`backward_live`).
Checked against Keras 3.15's sources (layer autocasting in keras/src/layers/layer.py,
keras/src/layers/normalization/batch_normalization.py).
"""

from __future__ import annotations

from core.workloads.base import (
    BYTES_PER_ELEMENT,
    FLOAT32_BYTES,
    FLOAT32_KINDS,
    LayerOutput,
    WorkloadConfig,
    element_bytes,
)

# Layer kinds whose output the backward pass does not keep. A BatchNormalization
# output feeds only the ReLU after it, and TensorFlow's ReLU gradient is computed
# from the ReLU's *output*; the BN gradient needs its input (the conv output,
# kept under the conv's name). So each block keeps 2 of its 3 tensors.
# Every other output is needed: conv/transpose gradients need their input,
# ReLU and max-pool their output (pooling its input too), the concatenation is
# the next conv's input, the sigmoid's gradient needs the mask.
NOT_KEPT_KINDS = frozenset({"batchnorm"})
# Under mixed precision Keras's BatchNormalization casts its input to float32
# before normalising (keras/src/layers/normalization/batch_normalization.py,
# "BN is prone to overflow ... we upcast to float32"); the gradient needs that
# float32 copy, not the compute-dtype conv output, so the tensor kept under the
# conv's name is float32 whatever the policy.
BATCHNORM_INPUT_BYTES = FLOAT32_BYTES
# While differentiating a layer, the gradient arriving at its output and the one
# it passes to its input are both alive: two tensors of the widest layer, in its dtype.
BACKWARD_LIVE_GRADIENTS = 2
# BatchNormalization differentiates in float32 under every policy, since it upcast its
# input: its normalisation's, variance's and mean's gradients, and their sum, are four
# float32 tensors of its input alive at once (tf.nn.batch_normalization and Keras's
# moments, differentiated by TensorFlow). On the U-Net that ties under float32 with
# two gradients of the concatenation before it (4 x 16 channels x 4 bytes against 2 x
# 32 x 4), so float32 answers do not change; under mixed precision it is the larger.
BATCHNORM_GRADIENT_TENSORS = 4
# Layers that read no cast copy of their weights under mixed precision: BatchNormalization
# casts gamma, beta and its moving statistics to its float32 input's dtype, and the
# float32 output layer computes in float32.
NO_WEIGHT_CAST_KINDS = frozenset({"batchnorm", *FLOAT32_KINDS})


def _read_bytes(config: WorkloadConfig, layer: LayerOutput) -> int:
    """Bytes per value in which ``layer`` reads its input: BatchNormalization upcasts to
    float32, every other layer reads in its own compute dtype (the output layer float32)."""
    if layer.kind == "batchnorm":
        return BATCHNORM_INPUT_BYTES
    return element_bytes(config, layer)


def kept_tensors(config: WorkloadConfig, layers: list[LayerOutput]) -> list[tuple[int, int]]:
    """(elements, bytes per value) of each tensor of one sample the backward pass keeps.

    A layer's output, in its own dtype, unless only a BatchNormalization reads it (the
    gradient needs BatchNormalization's float32 copy, not the output). Where the next
    layer reads it in another dtype (mixed precision's casts: the images into the first
    layer, the last activation into the float32 output layer), the cast copy is kept
    too: that layer's kernel gradient needs its input as it read it.
    """
    kept = []
    for layer, following in zip(layers, [*layers[1:], None], strict=True):
        if layer.kind in NOT_KEPT_KINDS:
            continue
        own = element_bytes(config, layer)
        read = own if following is None else _read_bytes(config, following)
        if following is not None and following.kind == "batchnorm":
            kept.append((layer.elements, read))
            continue
        kept.append((layer.elements, own))
        if read != own:
            kept.append((layer.elements, read))
    return kept


def weight_cast_bytes(config: WorkloadConfig, layers: list[LayerOutput]) -> int:
    """The compute-dtype copies of the float32 weights that mixed precision casts.

    Keras reads each variable of a layer computing in a narrower dtype through a
    cast, and the layer's input gradient needs that copy, so it lives until the
    backward pass has used it. Zero under float32.
    """
    compute_bytes = BYTES_PER_ELEMENT[config.precision]
    if compute_bytes == FLOAT32_BYTES:
        return 0
    cast = sum(layer.params for layer in layers if layer.kind not in NO_WEIGHT_CAST_KINDS)
    return cast * compute_bytes


def backward_live(config: WorkloadConfig, layers: list[LayerOutput]) -> int:
    """Bytes of one sample's gradients alive at the backward pass's largest step: two
    gradients of the widest layer in its dtype, or BatchNormalization's four float32
    ones, whichever is larger.
    """
    widest = max(layer.elements * element_bytes(config, layer) for layer in layers)
    norms = [layer.elements for layer in layers if layer.kind == "batchnorm"]
    normalising = BATCHNORM_GRADIENT_TENSORS * max(norms, default=0) * BATCHNORM_INPUT_BYTES
    return max(BACKWARD_LIVE_GRADIENTS * widest, normalising)
