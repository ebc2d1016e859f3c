"""A sweep that writes each run as a record file: for a machine without memplan's stack.

Run from a checkout, on a machine that has only what the child imports (Python, torch,
numpy, psutil; nvidia-ml-py for a GPU)::

    python -m profiling.folder_sweep --out FOLDER [--device cuda[:N]] [--budget-s S]
        [--timeout-s S] [--steps N] [--seed S] CONFIG [CONFIG ...]

CONFIG is ``WORKLOAD:SHAPE:BATCH:PRECISION[:FILTERS[:LEVELS]]`` (``unet3d:128x128x128:2:float32``,
as ``shared/gpu/measure.py`` takes it; ``-`` for a default knob). Each configuration
trains in its own fresh child, as every memplan sweep measures it (`profiling.runner`,
torch only), in the order given: put the most useful first, since the sweep stops
before a configuration that the time budget no longer leaves ``--timeout-s`` for (a
point's timeout is then what is left). Each run is checked and written as one record
file (`core.record_files`); a configuration whose ``ok`` or ``oom`` record the folder
already holds is not measured again. ``memplan import FOLDER`` stores the runs on a
machine with memplan's stack, checking each record in full.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from core import record_files, workloads
from core.errors import INTERRUPTED_EXIT_CODE, ConfigError, DataFileError
from core.frameworks import TORCH
from core.records import RunRecord
from core.units import format_gib
from core.workloads.base import WorkloadConfig, parse_image_shape
from profiling import gpu
from profiling.runner import DEFAULT_STEPS, RunSettings, run_point
from profiling.sweep import default_memory_limit_bytes

USAGE_EXIT_CODE = 2
DONE_STATUSES = ("ok", "oom")
# A point no shorter than this is worth starting: a fresh child imports torch (import_s
# 4.54 s in data/gpu/h200-torch-2026-11-28.jsonl) and makes a CUDA context first.
MIN_POINT_S = 15.0
DEFAULT_TIMEOUT_S = 150.0


@dataclass(frozen=True)
class FolderSweep:
    """What to measure, where, and within how long."""

    out: Path
    configs: tuple[WorkloadConfig, ...]
    settings: RunSettings
    budget_s: float


def parse_config(spec: str) -> WorkloadConfig:
    """``WORKLOAD:SHAPE:BATCH:PRECISION[:FILTERS[:LEVELS]]`` as the workload's config."""
    parts = spec.split(":")
    if not 4 <= len(parts) <= 6:
        raise ConfigError(
            f"{spec!r} is not a configuration; give WORKLOAD:SHAPE:BATCH:PRECISION"
            "[:FILTERS[:LEVELS]], e.g. unet3d:128x128x128:2:float32"
        )
    module = workloads.get(parts[0])
    knobs = {
        name: int(text)
        for name, text in zip(("base_filters", "levels"), parts[4:], strict=False)
        if text != "-"
    }
    try:
        batch = int(parts[2])
        return module.Config(
            image_shape=parse_image_shape(parts[1], module.DIMS),
            batch_size=batch,
            precision=parts[3],
            **knobs,
        )
    except (ValueError, TypeError) as error:
        raise ConfigError(f"{spec!r} is not a {parts[0]} configuration: {error}") from None


def _done(out: Path) -> set[tuple]:
    """The configurations the folder already holds an ``ok`` or ``oom`` record of."""
    runs = [record_files.load(path)[0] for path in sorted(out.glob(f"*{record_files.SUFFIX}"))]
    return {_key(workloads.config_from_row(run)) for run in runs if run["status"] in DONE_STATUSES}


def _key(config: WorkloadConfig) -> tuple:
    return tuple(sorted(workloads.config_columns(config).items()))


def describe(record: RunRecord) -> str:
    """One line of a run: its configuration, status, peaks and seconds."""
    figures = [
        f"{label} {format_gib(value)}"
        for label, value in (
            ("allocated", record.allocated_peak_bytes),
            ("reserved", record.reserved_peak_bytes),
            ("nvml used", record.nvml_used_peak_bytes),
            ("host peak", record.peak_hwm_bytes),
        )
        if value is not None
    ]
    shape = "x".join(str(side) for side in (record.depth, record.height, record.width) if side)
    line = f"{record.status}: {record.workload} {shape} batch {record.batch_size} "
    line += f"{record.precision}: {', '.join(figures) or 'no figures'}, {record.wall_s or 0:.1f} s"
    return line + (f" ({record.message.splitlines()[0]})" if record.message else "")


def run(sweep: FolderSweep) -> int:
    """Measure each configuration not yet in the folder, within the budget; the count written."""
    sweep.out.mkdir(parents=True, exist_ok=True)
    started, done = time.monotonic(), _done(sweep.out)
    number = len(list(sweep.out.glob(f"*{record_files.SUFFIX}")))
    written = 0
    for index, config in enumerate(sweep.configs):
        if _key(config) in done:
            continue
        left_s = sweep.budget_s - (time.monotonic() - started)
        if left_s < MIN_POINT_S:
            left = {_key(other) for other in sweep.configs[index:]} - done
            print(f"time budget reached: {len(left)} configuration(s) not run")
            break
        timeout_s = min(sweep.settings.timeout_s, left_s)
        settings = dataclasses.replace(sweep.settings, timeout_s=timeout_s)
        record = run_point(config, settings)
        samples = [(s.t_s, s.rss_bytes) for s in record.samples]
        try:
            record_files.write_record(sweep.out, number + 1, record.row(), samples)
        except DataFileError as error:  # a record an import would refuse: say so, go on
            print(f"not written: {describe(record)}: {error}", flush=True)
            continue
        number, written = number + 1, written + 1
        if record.status in DONE_STATUSES:  # a repeat later in the list is not run again
            done.add(_key(config))
        print(describe(record), flush=True)
    return written


def parse_args(argv: list[str] | None) -> FolderSweep:
    parser = argparse.ArgumentParser(
        prog="python -m profiling.folder_sweep", description=__doc__.split("\n")[0]
    )
    parser.add_argument("configs", nargs="+", metavar="CONFIG")
    parser.add_argument("--out", type=Path, required=True, help="the folder of run records")
    parser.add_argument("--device", default=gpu.CPU, help="cpu (default), cuda or cuda:N")
    parser.add_argument("--budget-s", type=float, default=float("inf"), help="stop after this")
    parser.add_argument("--timeout-s", type=float, default=DEFAULT_TIMEOUT_S, help="per point")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    gpu.parse_device(args.device)
    settings = RunSettings(
        memory_limit_bytes=default_memory_limit_bytes(),
        steps=args.steps,
        seed=args.seed,
        timeout_s=args.timeout_s,
        framework=TORCH,
        device=args.device,
    )
    configs = tuple(parse_config(spec) for spec in args.configs)
    return FolderSweep(args.out, configs, settings, args.budget_s)


def main(argv: list[str] | None = None) -> int:
    try:
        sweep = parse_args(argv)
        gpu.check_available(sweep.settings.device, sys.executable)
        written = run(sweep)
    except (ConfigError, DataFileError) as error:
        print(f"error: {error}", file=sys.stderr)
        return USAGE_EXIT_CODE
    except KeyboardInterrupt:  # the runner killed the child in flight; the folder keeps the rest
        print("interrupted: run the same command to go on", file=sys.stderr)
        return INTERRUPTED_EXIT_CODE
    print(f"{written} run record(s) written to {sweep.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
