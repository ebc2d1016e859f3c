"""A conservative closed-form estimate of a point's peak, for the sweep's pre-check.

Deliberately simple and on the high side: its only job is to keep a sweep from
launching a point that cannot fit. The fitted models in `modeling/` predict;
this guards. The kill-on-limit watchdog in `profiling.runner` stays the real
safety net.
"""

from __future__ import annotations

from modeling.architecture import activation_bytes_per_sample, parameter_counts
from profiling.workload import UNetConfig

# TensorFlow's import plus the built model, rounded up: DESIGN.md measured
# ~630 MiB for the import, and the child here reports ~725 MiB on TF 2.21.
FRAMEWORK_BASELINE_BYTES = 1 * 2**30
# Weights, their gradients and Adam's two slots, all float32.
WEIGHT_COPIES = 4
WEIGHT_BYTES = 4
# Measured here (docs/steps.md): 64^3 grows by ~285 MiB per sample, about
# 0.88x the paper's Eq. 1 bytes. 1.25x Eq. 1 leaves ~40% for the backward
# pass' temporaries at large sizes, where the paper saw Eq. 1 fall short.
ACTIVATION_SAFETY_FACTOR = 1.25


def estimate_peak_bytes(config: UNetConfig) -> int:
    """Conservative peak resident bytes of training ``config`` (see module docstring)."""
    total_params, _ = parameter_counts(config)
    weights = total_params * WEIGHT_BYTES * WEIGHT_COPIES
    activations = config.batch_size * activation_bytes_per_sample(config)
    return int(FRAMEWORK_BASELINE_BYTES + weights + ACTIVATION_SAFETY_FACTOR * activations)
