"""The sweep's pre-check: the refined analytical model with margins, never below a measurement."""

import subprocess
import sys

import pytest

from core.analytical import refined_breakdown
from core.workloads.unet3d import UNetConfig
from profiling.estimate import FRAMEWORK_BASELINE_BYTES, estimate_peak_bytes

GIB = 2**30

# Peaks (kernel high-water mark, GiB) measured on the 2-core reference VM, TF 2.21 CPU,
# rounded up: the pre-check must never claim less than these.
MEASURED_PEAKS_GIB = {
    ((32, 32, 32), 1): 1.05,
    ((32, 32, 32), 8): 1.28,
    ((48, 48, 48), 2): 1.22,
    ((64, 64, 64), 2): 1.65,
    ((64, 64, 64), 4): 2.35,
    ((96, 96, 96), 2): 3.2,
    ((96, 96, 96), 8): 9.1,
    ((80, 80, 80), 16): 10.5,
    ((128, 128, 128), 4): 10.6,
    ((112, 112, 112), 8): 13.0,
    ((144, 144, 144), 2): 7.4,
}


@pytest.mark.parametrize(("shape", "batch"), list(MEASURED_PEAKS_GIB))
def test_the_estimate_stays_above_every_measured_peak(shape, batch) -> None:
    estimate = estimate_peak_bytes(UNetConfig(shape, batch))

    assert estimate > 1.2 * MEASURED_PEAKS_GIB[(shape, batch)] * GIB


def test_the_estimate_is_the_refined_model_with_margins_on_top() -> None:
    config = UNetConfig((128, 128, 128), batch_size=4)

    refined = refined_breakdown(config, FRAMEWORK_BASELINE_BYTES).total_bytes

    assert refined < estimate_peak_bytes(config) < 1.35 * refined


def test_the_estimate_grows_with_image_size_and_batch() -> None:
    sizes = [estimate_peak_bytes(UNetConfig((s, s, s), 2)) for s in (32, 64, 96, 128)]
    batches = [estimate_peak_bytes(UNetConfig((64, 64, 64), b)) for b in (1, 2, 4, 8)]

    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert batches == sorted(batches) and len(set(batches)) == len(batches)


def test_the_pre_check_does_not_import_the_fitting_libraries() -> None:
    # The sweep imports the pre-check; it must not pay for scikit-learn or gplearn.
    code = (
        "import sys, profiling.estimate; "
        "print(sorted(m for m in ('sklearn', 'gplearn', 'xgboost') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()

    assert loaded == "[]"
