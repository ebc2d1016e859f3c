"""The im2col workspace memplan predicts is memory TensorFlow's own kernels really spend.

`core.analytical.backprop_workspace_bytes` is a feature the fitted models weigh
on oneDNN-off profiles; `benchmarks.conv_workspace` trains the same network
with the gradient kernels that allocate it and with those that do not, each
in a fresh process, so the difference of the two peaks is the workspace.
"""

from __future__ import annotations

import pytest

from benchmarks import conv_workspace
from core.analytical import backprop_workspace_bytes
from core.workloads.unet3d import UNetConfig

pytestmark = pytest.mark.tensorflow


def test_the_custom_kernels_peak_above_eigen_by_about_the_predicted_buffer() -> None:
    # 64^3 batch 1: the largest buffer is 64^3 x 27 x 32 x 4 bytes = 0.84 GiB, far above
    # the run-to-run noise of a peak (at 32^3 its 108 MiB were not).
    workspace = backprop_workspace_bytes(UNetConfig((64, 64, 64)))
    custom = conv_workspace._measure(64, 1, "custom", steps=1)
    eigen = conv_workspace._measure(64, 1, "eigen_tensor", steps=1)

    measured = f"custom {custom} B, eigen_tensor {eigen} B, largest buffer {workspace} B"
    assert 0.5 * workspace < custom - eigen < 3 * workspace, measured


def test_a_point_that_is_not_side_x_batch_is_refused(capsys) -> None:
    with pytest.raises(SystemExit):
        conv_workspace.main(["--points", "64-1"])

    assert "a point is SIDExBATCH, e.g. 64x1; got '64-1'" in capsys.readouterr().err
