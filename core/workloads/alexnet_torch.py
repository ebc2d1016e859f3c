"""Seed 004's AlexNet in native PyTorch (``torch.nn``), built from `alexnet`'s closed form.

One module per layer of `alexnet.layer_outputs`, under its Keras name: the
layers and initialisers of the Keras model (ReLU inside each convolution and
hidden dense layer, a float32 softmax fc8), SGD with momentum 0.9 at learning
rate 0.01, and sparse categorical cross-entropy on the softmax as Keras computes
it; channels first ``(N, C, H, W)``. 50,844,008 parameters at 224x224 and 1000
classes, as in Keras. The workload declares this module as
``alexnet.TORCH_BUILDER``; `core.workloads.torch_training` loads it.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from core.workloads import alexnet
from core.workloads.base import LayerOutput
from core.workloads.torch_layers import Float32, keras_initialised, layer_graph
from core.workloads.torch_training import TorchTraining

# Keras clips probabilities to [epsilon, 1 - epsilon] before the log of its cross-entropy.
KERAS_EPSILON = 1e-7


def build(config: alexnet.AlexNetConfig) -> TorchTraining:
    """The AlexNet of ``config`` with its SGD-momentum optimizer and cross-entropy."""
    model = layer_graph(alexnet.layer_outputs(config), _module, joins={})
    optimizer = torch.optim.SGD(
        model.parameters(), lr=alexnet.LEARNING_RATE, momentum=alexnet.SGD_MOMENTUM
    )
    return TorchTraining(model, optimizer, cross_entropy, _labels, config.precision)


def _module(layer: LayerOutput, in_channels: int) -> nn.Module:
    """The torch module of one closed-form layer whose input has ``in_channels`` (or units)."""
    units = layer.shape[-1]
    if layer.kind == "input":
        return nn.Identity()
    if layer.kind == "conv2d":
        spec = alexnet.CONVOLUTION_NAMED[layer.name]
        conv = nn.Conv2d(in_channels, units, spec.kernel, stride=spec.stride, padding=spec.padding)
        return nn.Sequential(keras_initialised(conv, "glorot_uniform"), nn.ReLU())
    if layer.kind == "maxpool":
        return nn.MaxPool2d(alexnet.POOL_SIZE, stride=alexnet.POOL_STRIDE)
    if layer.kind == "flatten":
        return nn.Flatten()
    if layer.kind == "dense":
        dense = keras_initialised(nn.Linear(in_channels, units), "glorot_uniform")
        return nn.Sequential(dense, nn.ReLU())
    if layer.kind == "dropout":
        return nn.Dropout(alexnet.DROPOUT_RATE)
    output = keras_initialised(nn.Linear(in_channels, units), "glorot_uniform")
    return Float32(nn.Sequential(output, nn.Softmax(dim=1)))


def _labels(labels: np.ndarray) -> torch.Tensor:
    """The synthetic batch's int32 labels as the int64 class indices torch's loss takes."""
    return torch.from_numpy(labels.astype(np.int64))


def cross_entropy(probabilities: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Sparse categorical cross-entropy of softmax outputs, clipped as Keras clips them."""
    clipped = probabilities.clamp(KERAS_EPSILON, 1.0 - KERAS_EPSILON)
    return nn.functional.nll_loss(torch.log(clipped), labels)
