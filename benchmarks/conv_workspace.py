"""How much of a oneDNN-off peak is the convolution gradients' im2col workspace?

    python -m benchmarks.conv_workspace [--points 64x1 96x1 64x2] [--steps 2] [--levels 5]

With oneDNN off, TensorFlow computes 3D convolution gradients with its
"custom" CPU kernels, which allocate im2col buffers
(`core.analytical.conv_gradient_buffers`, sized by this machine's L3 cache);
its "eigen_tensor" kernels, selectable by kernel label, compute the same
gradients without them. Each point trains the reference U-Net (or one of
``--levels`` levels: the workspace is the widest, full-resolution layer's, which
every depth has) for ``--steps`` steps in a fresh process twice, once per
kernel, and prints both processes' high-water marks (``VmHWM``, the peak
memplan's runs record), their difference and that difference as a multiple
of the workspace memplan predicts (the
largest layer's input- and filter-gradient buffers together,
`core.analytical.backprop_workspace_bytes`). `benchmarks.conv_buffers`
checks the buffers op by op. Not ``ru_maxrss``: Linux
carries it across exec, so a child started from a large process (a test
suite) would report its parent's size. The training step is a
``tf.function`` over the model `core.workloads.unet3d.build_model` builds
(Adam, Dice loss), because a kernel label applies only where a graph is built.
"""

from __future__ import annotations

import argparse
import os
import time

from benchmarks.children import run_child
from core.analytical import backprop_workspace_bytes
from core.machine import l3_cache_bytes, read_proc_status_bytes
from core.units import GIB
from core.workloads.unet3d import UNetConfig

KERNELS = ("custom", "eigen_tensor")
GRADIENT_OPS = ("Conv3DBackpropInputV2", "Conv3DBackpropFilterV2")
DEFAULT_POINTS = ("64x1", "96x1", "64x2")


def _parse_point(text: str) -> tuple[int, int]:
    side, _, batch = text.partition("x")
    if not (side.isdigit() and batch.isdigit()):
        raise argparse.ArgumentTypeError(f"a point is SIDExBATCH, e.g. 64x1; got {text!r}")
    UNetConfig((int(side),) * 3, batch_size=int(batch))  # refuses an invalid size
    return int(side), int(batch)


def _config(side: int, batch: int, levels: int | None) -> UNetConfig:
    """The reference U-Net at ``side``^3 and ``batch``, of ``levels`` levels if given."""
    depth = {} if levels is None else {"levels": levels}
    return UNetConfig((side,) * 3, batch_size=batch, **depth)


def _child(side: int, batch: int, kernel: str, steps: int, levels: int | None) -> None:
    """Train in this process and print its high-water mark in bytes."""
    import numpy as np
    import tensorflow as tf

    from core.workloads.unet3d import build_model, dice_loss, synthetic_batch

    config = _config(side, batch, levels)
    model = build_model(config)
    images, masks = synthetic_batch(config, np.random.default_rng(0))
    labels = {} if kernel == "custom" else dict.fromkeys(GRADIENT_OPS, kernel)

    @tf.function
    def step(x, y):
        with tf.compat.v1.get_default_graph()._kernel_label_map(labels):
            with tf.GradientTape() as tape:
                loss = dice_loss(y, model(x, training=True))
            gradients = tape.gradient(loss, model.trainable_variables)
        model.optimizer.apply(gradients, model.trainable_variables)
        return loss

    for _ in range(steps):
        step(images, masks)
    print(read_proc_status_bytes(os.getpid(), "VmHWM"))


def _measure(side: int, batch: int, kernel: str, steps: int, levels: int | None = None) -> int:
    depth = [] if levels is None else ["--levels", str(levels)]
    answer = run_child(
        "benchmarks.conv_workspace",
        [f"{side}x{batch}", kernel, str(steps), *depth],
        f"{side}^3 batch {batch} ({kernel})",
    )
    return int(answer)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", nargs="+", type=_parse_point, default=None)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--levels", type=int, default=None, help="the reference network's")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        point, kernel, steps = args.child
        _child(*_parse_point(point), kernel, int(steps), args.levels)
        return 0
    points = args.points or [_parse_point(text) for text in DEFAULT_POINTS]
    started = time.monotonic()
    print(
        "| point | custom kernels, GiB | eigen_tensor kernels, GiB | difference, GiB "
        "| workspace predicted, GiB | difference / workspace |"
    )
    print("|---|---|---|---|---|---|")
    for side, batch in points:
        custom, eigen = (
            _measure(side, batch, kernel, args.steps, args.levels) for kernel in KERNELS
        )
        config = _config(side, batch, args.levels)
        workspace = backprop_workspace_bytes(config, l3_cache_bytes())
        print(
            f"| {side}^3 batch {batch} | {custom / GIB:.2f} | {eigen / GIB:.2f} "
            f"| {(custom - eigen) / GIB:.2f} | {workspace / GIB:.2f} "
            f"| {(custom - eigen) / workspace:.2f} |",
            flush=True,
        )
    print(
        f"\n{len(points)} points, {args.steps} steps each, in "
        f"{(time.monotonic() - started) / 60:.1f} min"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
