"""Training a workload in native PyTorch: its model, optimizer and loss, and the steps.

`build` loads the workload's ``TORCH_BUILDER`` module by name (its module declares
it) and returns a `TorchTraining`; `train_steps` trains it on the workload's own
seeded `synthetic_batch`, as the profiled child trains the Keras model, so the two
frameworks see the same data. Images are channels last in the synthetic batch
and channels first, ``(N, C, D, H, W)`` or ``(N, C, H, W)``, in torch.

Imports torch: only what trains in PyTorch loads this module.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from core import workloads
from core.workloads.base import COMPUTE_DTYPE, WorkloadConfig


@dataclass
class TorchTraining:
    """One workload's network in PyTorch, ready to train.

    loss : (predicted, targets) -> a scalar tensor; the model's output is float32.
    targets : the synthetic batch's targets (NumPy) -> the tensor ``loss`` takes.
    precision : the workload's precision knob; a mixed policy runs the forward pass under
        ``torch.autocast`` in its compute dtype, as Keras' policy does, weights float32.
    """

    model: nn.Module
    optimizer: torch.optim.Optimizer
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    targets: Callable[[np.ndarray], torch.Tensor]
    precision: str

    def step(self, inputs: torch.Tensor, targets: torch.Tensor) -> float:
        """One forward, backward and optimizer step on the batch; the loss before the step."""
        self.model.train()
        self.optimizer.zero_grad()
        compute = COMPUTE_DTYPE[self.precision]
        with torch.autocast(
            inputs.device.type, dtype=getattr(torch, compute), enabled=compute != "float32"
        ):
            predicted = self.model(inputs)
        loss = self.loss(predicted, targets)
        loss.backward()
        self.optimizer.step()
        return float(loss.detach())


def build(config: WorkloadConfig) -> TorchTraining:
    """``config``'s network, optimizer and loss in PyTorch, from its workload's TORCH_BUILDER."""
    builder = importlib.import_module(workloads.of(config).TORCH_BUILDER)
    return builder.build(config)


def channels_first(images: np.ndarray) -> torch.Tensor:
    """A channels-last batch ``(N, ..., C)`` as the channels-first tensor ``(N, C, ...)``."""
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(images, -1, 1)))


def train_steps(
    config: WorkloadConfig,
    steps: int,
    seed: int,
    after_step: Callable[[int], None] | None = None,
    after_build: Callable[[], None] | None = None,
    device: str | torch.device = "cpu",
) -> list[float]:
    """Train ``config`` in PyTorch for ``steps`` steps on its seeded synthetic batch.

    Seeds torch's initialisers and dropout and NumPy's batch with ``seed``; calls
    ``after_build()`` once the model and the batch exist, and ``after_step(step)`` after
    each step (0-based): where the profiled child records its phases, step times and
    memory. ``device`` is where the model and the batch live (``"cuda:0"``: on the GPU, as
    ``shared/gpu/measure.py`` moved them). Returns each step's loss.
    """
    torch.manual_seed(seed)
    training = build(config)
    training.model.to(device)  # in place: the optimizer keeps the same parameters
    images, targets = workloads.of(config).synthetic_batch(config, np.random.default_rng(seed))
    inputs = channels_first(images).to(device)
    target_tensor = training.targets(targets).to(device)
    if after_build is not None:
        after_build()
    losses = []
    for step in range(steps):
        losses.append(training.step(inputs, target_tensor))
        if after_step is not None:
            after_step(step)
    return losses


def value_counts(model: nn.Module) -> tuple[int, int]:
    """(parameters + buffers, trainable parameters): what Keras counts as (total, trainable)."""
    values = [*model.parameters(), *model.buffers()]
    trainable = [parameter for parameter in model.parameters() if parameter.requires_grad]
    return sum(value.numel() for value in values), sum(value.numel() for value in trainable)
