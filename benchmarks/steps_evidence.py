"""Evidence for the default number of training steps per profiled point.

Trains a few points for more steps than the default and prints the child's
kernel high-water mark (VmHWM) after every step, and the growth over the last
step relative to the peak. The default (`profiling.runner.DEFAULT_STEPS`) is
the step after which the peak stops growing.

    python -m benchmarks.steps_evidence [--steps 6] [--points 32:1 64:2 ...] > docs/steps.md
"""

from __future__ import annotations

import argparse
import json

import psutil

from core.workloads.unet3d import UNetConfig, parse_image_shape
from profiling.runner import RunSettings, run_point

_MIB = 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--points", nargs="+", default=["32:1", "64:2", "64:4", "96:2"])
    args = parser.parse_args()
    settings = RunSettings(
        memory_limit_bytes=int(psutil.virtual_memory().available * 0.75), steps=args.steps
    )
    print("| point | VmHWM after each step (MiB) | growth after step 2 | step times (s) |")
    print("|---|---|---|---|")
    for point in args.points:
        size, batch = point.split(":")
        config = UNetConfig(parse_image_shape(size), batch_size=int(batch))
        record = run_point(config, settings)
        hwm = [value / _MIB for value in json.loads(record.step_hwm_bytes)]
        times = json.loads(record.step_times_s)
        growth = (hwm[-1] - hwm[1]) / hwm[-1] * 100 if len(hwm) > 1 else float("nan")
        print(
            f"| {size}^3 batch {batch} ({record.status}) | {', '.join(f'{v:.0f}' for v in hwm)} "
            f"| {growth:+.2f}% | {', '.join(f'{t:.2f}' for t in times)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
