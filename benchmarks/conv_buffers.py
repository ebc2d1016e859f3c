"""Do TensorFlow's 3D convolution-gradient kernels allocate the im2col buffers memplan predicts?

    python -m benchmarks.conv_buffers [--cases filter:float32:32x4 ...]

Each case runs one gradient op of a 3x3x3 convolution (``Conv3DBackpropInputV2``
or ``Conv3DBackpropFilterV2``) with oneDNN off, so that TensorFlow's custom CPU
kernels run, and prints how far the op raised the process's peak resident memory
beside `core.analytical.im2col_touched_bytes` on this machine's L3 cache
(`core.machine.l3_cache_bytes`). The peak is reset to the current resident
memory right before the op (``/proc/self/clear_refs``), and the op's own output
is subtracted, so what is left is the op's workspace. The cases run one after
another in one fresh process (TensorFlow imported once, not once a case): its
allocator's mmap threshold is held at glibc's default, and each case's tensors
are dropped and the freed heap given back (``malloc_trim``) before the next, so
an op's buffers are new pages, never memory a previous op left resident.
The default cases are the U-Net's widest convolution at 32^3 (32 channels in,
16 out) at batch 1, 2 and 4 in both precisions: on a 256 MiB L3 they show both
kernels falling back on Eigen at batch 2 and writing 3 (float32) or 4
(bfloat16) images' buffers at batch 4.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.children import child_lines
from core.analytical import (
    GRADIENT_KERNELS,
    INPUT_GRADIENT,
    Conv3DShape,
    im2col_touched_bytes,
)
from core.machine import l3_cache_bytes, read_proc_status_bytes
from core.units import MIB
from core.workloads.base import BYTES_PER_ELEMENT
from core.workloads.unet3d import BLOCK_KERNEL_VOLUME

# The U-Net's widest convolution (decode0_conv0): a skip and an upsampled map of 16 channels.
DEFAULT_IN_CHANNELS = 32
DEFAULT_FILTERS = 16
PRECISIONS = ("float32", "bfloat16")
DEFAULT_CASES = tuple(
    f"{gradient}:{precision}:32x{batch}"
    for precision in PRECISIONS
    for batch in (1, 2, 4)
    for gradient in GRADIENT_KERNELS
)
# /proc/<pid>/clear_refs: writing 5 resets the peak resident size to the current one.
_RESET_PEAK = "5"
# mallopt(3): the parameter, and glibc's default threshold.
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_BYTES = 128 * 1024


@dataclass(frozen=True)
class Case:
    """One gradient op of a 3x3x3, stride-1, same-padded convolution on a cube."""

    gradient: str  # `core.analytical.INPUT_GRADIENT` or `FILTER_GRADIENT`
    precision: str  # "float32" or "bfloat16"
    side: int
    batch: int
    in_channels: int = DEFAULT_IN_CHANNELS
    filters: int = DEFAULT_FILTERS

    @property
    def value_bytes(self) -> int:
        return BYTES_PER_ELEMENT["float32" if self.precision == "float32" else "mixed_bfloat16"]

    @property
    def shape(self) -> Conv3DShape:
        voxels = self.side**3
        return Conv3DShape(
            batch=self.batch,
            input_elements=voxels * self.in_channels,
            positions=voxels,
            patch=BLOCK_KERNEL_VOLUME * self.in_channels,
            filters=self.filters,
        )

    @property
    def output_bytes(self) -> int:
        """The op's own result: the input's gradient, or the kernel's."""
        if self.gradient == INPUT_GRADIENT:
            elements = self.batch * self.shape.input_elements
        else:
            elements = self.shape.patch * self.filters
        return elements * self.value_bytes

    def predicted_bytes(self, l3_bytes: int) -> int:
        return im2col_touched_bytes(self.shape, self.gradient, self.value_bytes, l3_bytes)

    def label(self) -> str:
        return f"{self.gradient}:{self.precision}:{self.side}x{self.batch}"


def parse_case(text: str) -> Case:
    """``GRADIENT:PRECISION:SIDExBATCH``, e.g. ``filter:float32:32x4``."""
    parts = text.split(":")
    side, _, batch = parts[-1].partition("x") if len(parts) == 3 else ("", "", "")
    if (
        len(parts) != 3
        or parts[0] not in GRADIENT_KERNELS
        or parts[1] not in PRECISIONS
        or not (side.isdigit() and batch.isdigit() and int(side) > 0 and int(batch) > 0)
    ):
        raise argparse.ArgumentTypeError(
            f"a case is GRADIENT:PRECISION:SIDExBATCH with GRADIENT one of "
            f"{', '.join(GRADIENT_KERNELS)} and PRECISION one of {', '.join(PRECISIONS)}, "
            f"e.g. filter:float32:32x4; got {text!r}"
        )
    return Case(parts[0], parts[1], int(side), int(batch))


def _op_workspace_bytes(case: Case) -> int:
    """Run ``case``'s op in this process: the bytes it raised the peak by, its output aside."""
    import tensorflow as tf

    dtype = tf.float32 if case.precision == "float32" else tf.bfloat16
    images = [case.batch, case.side, case.side, case.side]
    x = tf.cast(tf.random.normal([*images, case.in_channels]), dtype)
    kernel = tf.cast(tf.random.normal([3, 3, 3, case.in_channels, case.filters]), dtype)
    dy = tf.cast(tf.random.normal([*images, case.filters]), dtype)
    # A first op loads the runtime, so the peak reset below sees only the op measured.
    tf.raw_ops.Conv3D(input=x[:, :4, :4, :4], filter=kernel, strides=[1] * 5, padding="SAME")
    Path("/proc/self/clear_refs").write_text(_RESET_PEAK)
    before = read_proc_status_bytes(os.getpid(), "VmRSS")
    if case.gradient == INPUT_GRADIENT:
        tf.raw_ops.Conv3DBackpropInputV2(
            input_sizes=tf.constant([*images, case.in_channels]),
            filter=kernel,
            out_backprop=dy,
            strides=[1] * 5,
            padding="SAME",
        )
    else:
        tf.raw_ops.Conv3DBackpropFilterV2(
            input=x,
            filter_sizes=tf.constant([3, 3, 3, case.in_channels, case.filters]),
            out_backprop=dy,
            strides=[1] * 5,
            padding="SAME",
        )
    peak = read_proc_status_bytes(os.getpid(), "VmHWM")
    return peak - before - case.output_bytes


def _child(cases: list[Case]) -> None:
    """Run each case's op in this process, in order, and print its workspace in bytes."""
    libc = ctypes.CDLL("libc.so.6")
    # glibc raises its mmap threshold as large blocks are freed (up to 32 MiB), after which
    # a tensor could reuse heap pages a previous case left resident and go uncounted; fixed
    # at its default, every block of 128 KiB or more is new pages, returned when freed.
    libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES)
    for case in cases:
        print(_op_workspace_bytes(case), flush=True)
        # The case's tensors are gone; the heap's free pages go back too.
        gc.collect()
        libc.malloc_trim(0)


def measure_each(cases: list[Case]) -> list[int]:
    """The workspace of each case's op, bytes (oneDNN off), all in one fresh process."""
    labels = [case.label() for case in cases]
    answers = child_lines("benchmarks.conv_buffers", labels, ", ".join(labels))
    return [int(answer) for answer in answers[-len(cases) :]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", nargs="+", type=parse_case, default=None)
    parser.add_argument("--child", nargs="+", type=parse_case, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child(args.child)
        return 0
    l3_bytes = l3_cache_bytes()
    if l3_bytes is None:
        raise SystemExit("this machine's L3 cache size cannot be read (getconf LEVEL3_CACHE_SIZE)")
    cases = args.cases or [parse_case(text) for text in DEFAULT_CASES]
    started = time.monotonic()
    print(f"L3 cache as TensorFlow reads it: {l3_bytes / MIB:.0f} MiB\n")
    print("| op | precision | point | predicted, MiB | measured, MiB |")
    print("|---|---|---|---|---|")
    for case, measured in zip(cases, measure_each(cases), strict=True):
        print(
            f"| {case.gradient} gradient | {case.precision} | {case.side}^3 batch {case.batch} "
            f"| {case.predicted_bytes(l3_bytes) / MIB:.0f} | {measured / MIB:.0f} |",
            flush=True,
        )
    print(f"\n{len(cases)} ops in {(time.monotonic() - started) / 60:.1f} min")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
