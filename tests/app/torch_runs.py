"""Synthetic PyTorch U-Net runs and their models, for the tests of answers per framework.

Fabricated, not measured: the synthetic law of `tests.conftest.synthetic_peak_bytes`
(the refined closed form plus a constant) times `TORCH_SCALE`, on build_record's "Test
CPU" machine trained with torch, stored through the real store and fitted by the real
``memplan evaluate --framework torch`` (smoke-test settings). The scale stands for what
issue 29 measured between frameworks (15.2 GB on JAX against 37.5 GB on torch, one H100):
a torch answer must come out well apart from the TensorFlow one.
"""

from __future__ import annotations

from pathlib import Path

from core import store, workloads
from core.profiles import profile_of
from core.workloads.unet3d import UNetConfig
from memplan import cli as memplan_cli
from tests.conftest import SYNTHETIC_FRAMEWORK_BYTES, build_record, synthetic_peak_bytes

TORCH_SCALE = 2.3
# The synthetic AlexNet runs (`tests.app.helpers.add_alexnet_runs`) again in torch on the
# same machine, this many times their TensorFlow peaks: the frameworks compared.
ALEXNET_TORCH_SCALE = 1.8
TORCH_SIDES = (32, 48, 64, 80, 96, 112, 128)
TORCH_BATCHES = (1, 2, 4, 8)
# The columns of a torch run (schema 8): its framework, version and intra-op threads;
# TensorFlow's thread count is None for it, as a torch child records.
TORCH_COLUMNS = {
    "framework": "torch",
    "framework_version": "2.13.0+cpu",
    "torch_intra_op_threads": 8,
    "intra_op_threads": None,
}


def torch_record(side: int, batch: int, scale: float = TORCH_SCALE):
    """One synthetic torch run of the default U-Net at ``side``^3 and ``batch``."""
    config = UNetConfig((side,) * 3, batch)
    peak = int(synthetic_peak_bytes(config) * scale)
    return build_record(
        **workloads.config_columns(config),
        peak_hwm_bytes=peak,
        peak_sampled_bytes=int(peak * 0.995),
        baseline_bytes=SYNTHETIC_FRAMEWORK_BYTES,
        hostname="torch-host",
        timeline=5,
        **TORCH_COLUMNS,
    )


def torch_key() -> str:
    """The machine profile key of the synthetic torch runs."""
    return profile_of(torch_record(32, 1).row()).key


def add_torch_runs(path: Path) -> int:
    """Store the synthetic torch U-Net runs in ``path``; returns how many."""
    records = [torch_record(side, batch) for side in TORCH_SIDES for batch in TORCH_BATCHES]
    store.insert_runs(path, records)
    return len(records)


def evaluate_torch(path: Path) -> None:
    """Fit and store the torch runs' U-Net models on ``path`` (smoke-test settings)."""
    code = memplan_cli.main(
        ["evaluate", "--db", str(path), "--workload", "unet3d", "--framework", "torch"]
        + ["--quick", "--seeds", "3", "--extrapolation-seeds", "1"]
        + ["--models", "paper", "refined", "least_squares"]
    )
    assert code == 0
