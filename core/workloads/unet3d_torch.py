"""The reference 3D U-Net in native PyTorch (``torch.nn``), built from `unet3d`'s closed form.

One module per layer of `unet3d.layer_outputs`, under its Keras name, joined by
`unet3d.skip_connections`: the layers, initialisers and optimizer of the Keras
model (Adam 1e-3 with Keras' epsilon, Dice loss), channels first
``(N, C, D, H, W)`` as PyTorch convolves. Parameters plus buffers equal Keras'
weights: 5,650,801 for the reference network. The workload declares this module
as ``unet3d.TORCH_BUILDER``; `core.workloads.torch_training` loads it.
"""

from __future__ import annotations

import torch
from torch import nn

from core.workloads import unet3d
from core.workloads.base import LayerOutput
from core.workloads.torch_layers import (
    Concat,
    Float32,
    keras_batch_norm,
    keras_initialised,
    layer_graph,
)
from core.workloads.torch_training import TorchTraining, channels_first

ADAM_EPSILON = 1e-7  # Keras' Adam default (torch's is 1e-8)


def build(config: unet3d.UNetConfig) -> TorchTraining:
    """The U-Net of ``config`` with its Adam optimizer and Dice loss."""
    model = layer_graph(unet3d.layer_outputs(config), _module, unet3d.skip_connections(config))
    optimizer = torch.optim.Adam(model.parameters(), lr=unet3d.LEARNING_RATE, eps=ADAM_EPSILON)
    # The masks are images too: channels first.
    return TorchTraining(model, optimizer, dice_loss, channels_first, config.precision)


def _module(layer: LayerOutput, in_channels: int) -> nn.Module:
    """The torch module of one closed-form layer whose input has ``in_channels``."""
    channels = layer.shape[-1]
    if layer.kind == "input":
        return nn.Identity()
    if layer.kind == "conv3d":
        conv = nn.Conv3d(in_channels, channels, layer.kernel, padding="same")
        return keras_initialised(conv, "he_uniform")
    if layer.kind == "batchnorm":
        return keras_batch_norm(channels, unet3d.DIMS)
    if layer.kind == "relu":
        return nn.ReLU()
    if layer.kind == "maxpool":
        return nn.MaxPool3d(unet3d.POOL_FACTOR)
    if layer.kind == "conv3d_transpose":
        # Its stride is its window (`unet3d.UP_KERNEL`): the windows tile the doubled image.
        up = nn.ConvTranspose3d(in_channels, channels, layer.kernel, stride=layer.kernel)
        return keras_initialised(up, "glorot_uniform")
    if layer.kind == "upsampling":
        return nn.Upsample(scale_factor=unet3d.POOL_FACTOR, mode="nearest")
    if layer.kind == "concat":
        return Concat()
    mask = nn.Conv3d(in_channels, channels, layer.kernel)
    return Float32(nn.Sequential(keras_initialised(mask, "glorot_uniform"), nn.Sigmoid()))


def dice_loss(predicted: torch.Tensor, masks: torch.Tensor) -> torch.Tensor:
    """Soft Dice loss over the whole batch (smoothing 1), as `unet3d.dice_loss` in Keras."""
    intersection = torch.sum(masks * predicted)
    return 1.0 - (2.0 * intersection + 1.0) / (torch.sum(masks) + torch.sum(predicted) + 1.0)
