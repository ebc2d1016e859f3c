"""The im2col workspace memplan predicts is memory TensorFlow's own kernels really spend.

`core.analytical.backprop_workspace_bytes` is a feature the fitted models weigh
on oneDNN-off profiles. `benchmarks.conv_buffers` runs single gradient ops and
compares each op's workspace with `core.analytical.im2col_touched_bytes`;
`benchmarks.conv_workspace` trains a whole network with the gradient kernels
that allocate the buffers and with those that do not, each in a fresh process,
so the difference of the two peaks is the workspace.
"""

from __future__ import annotations

import pytest

from benchmarks import conv_buffers, conv_workspace
from core.analytical import backprop_workspace_bytes
from core.machine import l3_cache_bytes
from core.units import MIB
from core.workloads.unet3d import UNetConfig

pytestmark = pytest.mark.tensorflow

# What else an op may move the peak by: the runtime's own allocations, a few MiB.
OP_NOISE_BYTES = 24 * MIB
# The whole network's comparison: its predicted workspace (0.71 GiB with a 256 MiB L3) is
# about 30x that noise; 32^3's would be 4x.
SIDE = 48
# Two levels, not the reference five: the workspace is the full-resolution decode0_conv0's,
# which every depth has (0.71 GiB at either), and the network traces and trains in about
# half the CPU (~11 against ~21 s a child: the deeper levels' layers are most of the trace).
LEVELS = 2


CASES = (
    "input:float32:32x1",  # one image, whatever the cache
    "filter:float32:32x2",  # falls back on Eigen with a cache of 64 MiB or more
    "filter:float32:32x4",
    "input:float32:32x4",
    "input:bfloat16:32x4",  # half the bytes a value, twice the images a buffer
)


@pytest.fixture(scope="module")
def l3_bytes() -> int:
    l3_bytes = l3_cache_bytes()
    if l3_bytes is None:
        pytest.skip("this machine does not report its L3 cache (getconf LEVEL3_CACHE_SIZE)")
    return l3_bytes


@pytest.fixture(scope="module")
def measured_workspaces(l3_bytes: int) -> dict[str, int]:
    """Each case's op workspace, bytes: all of `CASES` in one TensorFlow child, as the
    benchmark measures them (`conv_buffers.measure_each`), one import instead of five."""
    ops = [conv_buffers.parse_case(case) for case in CASES]
    return dict(zip(CASES, conv_buffers.measure_each(ops), strict=True))


@pytest.mark.parametrize("case", CASES)
def test_a_gradient_op_writes_the_im2col_bytes_memplan_predicts(
    case: str, l3_bytes: int, measured_workspaces: dict[str, int]
) -> None:
    predicted = conv_buffers.parse_case(case).predicted_bytes(l3_bytes)
    measured = measured_workspaces[case]

    words = f"{case}: measured {measured} B, predicted {predicted} B on a {l3_bytes} B L3"
    assert abs(measured - predicted) <= 0.1 * predicted + OP_NOISE_BYTES, words


def test_the_custom_kernels_peak_above_eigen_by_about_the_predicted_workspace() -> None:
    # 48^3 batch 1: decode0_conv0's buffers are 48^3 x 27 x 32 x 4 bytes = 0.36 GiB
    # each, far above the run-to-run noise of a peak, in 42% of 64^3's training work
    # (the benchmark's own points are 64^3 and up). Its two gradients overlap only in
    # part, so the difference lies between one buffer and both.
    config = UNetConfig((SIDE,) * 3, levels=LEVELS)
    workspace = backprop_workspace_bytes(config, l3_cache_bytes())
    custom = conv_workspace._measure(SIDE, 1, "custom", steps=1, levels=LEVELS)
    eigen = conv_workspace._measure(SIDE, 1, "eigen_tensor", steps=1, levels=LEVELS)

    measured = f"custom {custom} B, eigen_tensor {eigen} B, workspace {workspace} B"
    assert 0.4 * workspace < custom - eigen < 1.5 * workspace, measured


def test_a_case_that_is_not_gradient_precision_point_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        conv_buffers.main(["--cases", "filter:float16:32x4"])

    assert "e.g. filter:float32:32x4; got 'filter:float16:32x4'" in capsys.readouterr().err


def test_a_point_that_is_not_side_x_batch_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        conv_workspace.main(["--points", "64-1"])

    assert "a point is SIDExBATCH, e.g. 64x1; got '64-1'" in capsys.readouterr().err
