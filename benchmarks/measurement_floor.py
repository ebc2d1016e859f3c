"""The measurement floor every prediction is judged against.

Prints, as Markdown:

(a) the gap between the sampled peak (memory_profiler, every 0.1 s) and the
    kernel's high-water mark (VmHWM) over the stored ``ok`` runs;
(b) the profiler's overhead: wall time of the same point with sampling and
    without (a bare child), measured side by side, alternating, as a ratio;
(c) run-to-run noise of the peak over points measured more than once.

    python -m benchmarks.measurement_floor [--db FILE] [--pairs 3] > docs/measurement.md

(a) and (c) read the database (default: the bundled reference data); (b) runs
real TensorFlow children on this machine, a few minutes.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import pandas as pd

from core import database, store
from core.machine import machine_info, software_info
from core.workloads.unet3d import UNetConfig
from profiling import floor
from profiling.runner import REPO_ROOT, RunSettings, child_command, run_point
from profiling.sweep import default_memory_limit_bytes

OVERHEAD_POINTS = (UNetConfig((32, 32, 32), 1), UNetConfig((64, 64, 64), 2))


def sampling_gap(runs: pd.DataFrame) -> str:
    gap = floor.sampling_gap(runs)
    if gap is None:
        return "## (a) Sampled peak vs kernel high-water mark\n\nNo `ok` run has both peaks."
    return "\n".join(
        [
            "## (a) Sampled peak vs kernel high-water mark",
            "",
            f"Over {gap.n_runs} `ok` runs, high-water mark minus sampled peak:",
            "",
            "| statistic | MiB | % of high-water mark |",
            "|---|---|---|",
            f"| median | {gap.median_mib:.1f} | {gap.median_pct:.2f}% |",
            f"| mean | {gap.mean_mib:.1f} | {gap.mean_pct:.2f}% |",
            f"| largest | {gap.max_mib:.1f} | {gap.max_pct:.2f}% |",
            f"| smallest | {gap.min_mib:.1f} | {gap.min_pct:.2f}% |",
            "",
            f"The largest relative gap is at {gap.worst_point}. "
            "A negative gap means the sampler saw memory after the child's last VmHWM reading "
            "(interpreter shutdown).",
        ]
    )


def _bare_wall_s(config: UNetConfig, settings: RunSettings) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        command = child_command(config, settings, Path(tmp) / "result.json")
        started = time.monotonic()
        subprocess.run(command, cwd=REPO_ROOT, check=True, capture_output=True)
        return time.monotonic() - started


def profiler_overhead(pairs: int) -> str:
    settings = RunSettings(memory_limit_bytes=default_memory_limit_bytes())
    lines = [
        "## (b) Profiler overhead",
        "",
        f"Each point run {pairs} times with memory_profiler sampling every "
        f"{settings.sample_interval_s} s and {pairs} times as a bare child (no sampler), "
        f"alternating, {settings.steps} steps each; median wall time.",
        "",
        "| point | sampled (s) | bare (s) | ratio |",
        "|---|---|---|---|",
    ]
    for config in OVERHEAD_POINTS:
        sampled, bare = [], []
        for _ in range(pairs):
            sampled.append(run_point(config, settings).wall_s)
            bare.append(_bare_wall_s(config, settings))
        s, b = statistics.median(sampled), statistics.median(bare)
        lines.append(
            f"| {config.image_label}^3 batch {config.batch_size} | {s:.2f} | {b:.2f} "
            f"| {s / b:.3f} |"
        )
    return "\n".join(lines)


def repeat_noise(runs: pd.DataFrame) -> str:
    lines = [
        "## (c) Run-to-run noise",
        "",
        "Points measured more than once: spread (max - min) / mean of the peak.",
        "",
        "| point | runs | mean peak HWM (MiB) | HWM spread | sampled spread |",
        "|---|---|---|---|---|",
    ]
    spreads = floor.repeat_spreads(runs)
    for spread in spreads:
        lines.append(
            f"| {spread.point} | {spread.runs} | {spread.mean_hwm_mib:.0f} "
            f"| {spread.hwm_spread_pct:.2f}% | {spread.sampled_spread_pct:.2f}% |"
        )
    largest = floor.largest_spread_pct(spreads)
    if largest is not None:
        lines += ["", f"Largest high-water-mark spread: {largest:.2f}%."]
    return "\n".join(lines)


# Printed first: what the figures below are about.
WHICH_PEAK = """## Which peak the models fit, and why

Every run stores two peaks: the **sampled peak** (`peak_sampled_bytes`, the largest
resident-memory sample memory_profiler took of the training process, every 0.1 s by default) and
the **kernel high-water mark** (`peak_hwm_bytes`, `VmHWM` in `/proc/<pid>/status`). The models
fit, and are judged against, the **high-water mark** (`modeling/features.py`:
`MEASURED_PEAK_COLUMN`):

- it is the kernel's own maximum of resident memory, so a spike shorter than the sampling
  interval (a step's transient buffers, oneDNN scratch space) still counts; a sampler sees such
  a spike only if a sample happens to land on it;
- the kernel's out-of-memory killer (and a cgroup's memory limit, such as a Slurm job's) acts on
  resident memory as it is, not on samples of it: a machine sized by the sampled peak can fail
  on a spike the sampler missed.

The sampled peak is kept for the memory timeline and as a check on the high-water mark. The
Sweeps page's runs table and the sizing report's list both peaks side by side; a verified sizing
answer quotes the sampled peak beside the high-water mark where the two differ by 0.5% or more.
How large the gap gets on the runs at hand: section (a) below.
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument(
        "--sections",
        nargs="+",
        choices=("a", "b", "c"),
        default=["a", "b", "c"],
        help="which figures to produce (b runs TensorFlow; a and c only read)",
    )
    args = parser.parse_args()
    db_path = database.ensure_database(args.db or database.default_db_path())
    runs = store.load_runs(db_path)
    machine, software = machine_info(), software_info()
    print("# Measurement floor\n")
    print(
        f"Produced by `python -m benchmarks.measurement_floor` on {machine['cpu_model']}, "
        f"{machine['cpu_cores']} cores, {machine['total_ram_bytes'] / 2**30:.1f} GiB RAM, "
        f"TensorFlow {software['tensorflow_version']}, Python {software['python_version']}; "
        f"database {db_path.name} ({len(runs)} runs).\n"
    )
    print(WHICH_PEAK)
    sections = {
        "a": lambda: sampling_gap(runs),
        "b": lambda: profiler_overhead(args.pairs),
        "c": lambda: repeat_noise(runs),
    }
    for name in sorted(args.sections):
        print(sections[name](), end="\n\n", flush=True)


if __name__ == "__main__":
    main()
