"""A conservative estimate of a point's peak, for the sweep's pre-check.

It decides what a sweep never launches, so it must stay on the high side; its
only job is to keep a sweep from starting a point that cannot fit. It is the
refined closed-form model of `core.analytical` (weights, gradients, Adam's
slots, kept activations, backward buffers, the input batch) with explicit
margins on each uncertain part:

* the framework baseline is taken as 1 GiB: TensorFlow 2.21's post-import
  memory measured 0.65-0.72 GiB on the reference machines;
* building the model and tracing the training step cost a further ~0.22 GiB
  there, which the refined model leaves out; 0.5 GiB is allowed for it;
* the per-batch terms (activations, backward buffers, input) get 25% on top:
  measured per-sample growth was 0.9-1.06x these terms from 32^3 to 96^3.

No fitted model is used: the pre-check must work on a fresh checkout with an
empty database. The kill-on-limit watchdog in `profiling.runner` stays the real
safety net.
"""

from __future__ import annotations

from core.analytical import refined_breakdown
from core.records import PeakBound
from core.workloads.base import WorkloadConfig

FRAMEWORK_BASELINE_BYTES = 1 * 2**30
RUNTIME_ALLOWANCE_BYTES = 2**29  # 0.5 GiB
PER_BATCH_SAFETY_FACTOR = 1.25
# How a skip message names this estimate (`PeakBound.source`).
CLOSED_FORM_SOURCE = "the closed form with margins"


def estimate_peak_bytes(config: WorkloadConfig) -> int:
    """Conservative peak resident bytes of training ``config`` (see module docstring)."""
    terms = refined_breakdown(config, framework_bytes=FRAMEWORK_BASELINE_BYTES)
    fixed = terms.framework_bytes + terms.weight_bytes + terms.gradient_bytes
    fixed += terms.optimizer_bytes + RUNTIME_ALLOWANCE_BYTES
    per_batch = terms.activation_bytes + terms.backward_bytes + terms.input_bytes
    return int(fixed + PER_BATCH_SAFETY_FACTOR * per_batch)


def closed_form_bound(config: WorkloadConfig) -> PeakBound:
    """`estimate_peak_bytes` as the pre-check's bound, named."""
    return PeakBound(bound_bytes=estimate_peak_bytes(config), source=CLOSED_FORM_SOURCE)
