"""What every workload's PyTorch builder shares: a model that runs a closed-form layer list.

A workload's ``TORCH_BUILDER`` module turns each `LayerOutput` of its closed form
into one ``torch.nn`` module under the layer's Keras name; `layer_graph` runs them,
in model order, as a `LayerGraph`; forward hooks on ``graph.layers[name]`` then see each
layer's output as Keras' layer of that name does, channels first. The helpers
here make the modules behave as Keras' layers: Keras' initialisers, Keras'
batch-normalisation settings, and a float32 output layer under mixed precision.

Imports torch: only a torch builder loads it, never the registry, the CLI or the
dashboard (``tests/unit/test_suite.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn

from core.workloads.base import LayerOutput

# Keras' BatchNormalization defaults. Keras keeps 0.99 of the moving average per step,
# torch names the weight of the new batch, 1 - 0.99.
KERAS_BATCHNORM_EPSILON = 1e-3
KERAS_BATCHNORM_MOMENTUM = 0.01


class LayerGraph(nn.Module):
    """Runs ``layers`` in order, each on the previous output; a join also reads an earlier one.

    layers : the modules by Keras layer name, in model order (the closed form's).
    joins : a layer name -> the earlier layer whose output is its second input.
    """

    def __init__(self, layers: Mapping[str, nn.Module], joins: Mapping[str, str]) -> None:
        super().__init__()
        self.layers = nn.ModuleDict(layers)
        self.joins = dict(joins)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept: dict[str, torch.Tensor] = {}
        wanted = set(self.joins.values())
        for name, layer in self.layers.items():
            x = layer(x, kept.pop(self.joins[name])) if name in self.joins else layer(x)
            if name in wanted:
                kept[name] = x
        return x


def layer_graph(
    layers: Sequence[LayerOutput],
    module: Callable[[LayerOutput, int], nn.Module],
    joins: Mapping[str, str],
) -> LayerGraph:
    """A `LayerGraph` of ``module(layer, in_channels)`` for each closed-form layer, in order.

    ``in_channels`` is the previous layer's last axis (channels, or units once flat);
    the first layer, the input, gets its own.
    """
    modules: dict[str, nn.Module] = {}
    channels = layers[0].shape[-1]
    for layer in layers:
        modules[layer.name] = module(layer, channels)
        channels = layer.shape[-1]
    return LayerGraph(modules, joins)


class Concat(nn.Module):
    """Keras' ``Concatenate`` of two tensors on the channel axis (the second, channels first)."""

    def forward(self, x: torch.Tensor, joined: torch.Tensor) -> torch.Tensor:
        return torch.cat([x, joined], dim=1)


class Float32(nn.Module):
    """A layer built with Keras' ``dtype="float32"``: float32 in and out under mixed precision."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(x.device.type, enabled=False):
            return self.layer(x.float())


def keras_initialised(layer: nn.Module, initializer: str) -> nn.Module:
    """``layer`` with Keras' kernel initialiser (``he_uniform`` or ``glorot_uniform``), zero biases.

    Both read fan-in and fan-out as Keras does, so a layer starts from the same distribution.
    """
    if initializer == "he_uniform":
        nn.init.kaiming_uniform_(layer.weight, nonlinearity="relu")
    elif initializer == "glorot_uniform":
        nn.init.xavier_uniform_(layer.weight)
    else:
        raise ValueError(f"initializer {initializer!r} is not he_uniform or glorot_uniform")
    nn.init.zeros_(layer.bias)
    return layer


def _normalise_any_batch(self: nn.Module, inputs: torch.Tensor) -> torch.Tensor:
    """torch's batch normalisation, also where a training batch has one value per channel.

    torch refuses that (``F.batch_norm``'s batch-size check): the U-Net's deepest level is
    1x1x1 at 16^3 with 5 levels, batch 1, a configuration Keras trains (variance 0, the
    output is beta). The ATen op ``F.batch_norm`` calls does the same arithmetic on the same
    buffers without the check. Its unbiased update of the running variance then divides by
    zero, which only inference would read; memplan's runs never infer.
    """
    return torch.batch_norm(
        inputs,
        self.weight,
        self.bias,
        self.running_mean,
        self.running_var,
        self.training,
        self.momentum,
        self.eps,
        torch.backends.cudnn.enabled,
    )


# Each torch batch norm, trained as Keras' trains (`_normalise_any_batch`), by image rank.
_KERAS_BATCH_NORMS = {
    dims: type(f"Keras{kind.__name__}", (kind,), {"forward": _normalise_any_batch})
    for dims, kind in ((1, nn.BatchNorm1d), (2, nn.BatchNorm2d), (3, nn.BatchNorm3d))
}


def keras_batch_norm(channels: int, dims: int) -> nn.Module:
    """Keras' ``BatchNormalization`` over ``channels`` of a ``dims``-dimensional image.

    Keras holds gamma, beta and the moving mean and variance, no batch counter: torch's
    ``num_batches_tracked`` only matters without a momentum, so it is dropped, and the
    module's parameters and buffers count what Keras' weights count.
    """
    kind = _KERAS_BATCH_NORMS[dims]
    norm = kind(channels, eps=KERAS_BATCHNORM_EPSILON, momentum=KERAS_BATCHNORM_MOMENTUM)
    norm.num_batches_tracked = None
    return norm
