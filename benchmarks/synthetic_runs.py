"""A large, realistic but synthetic run history, for timing the dashboard on a big database.

Every run is a configuration the network accepts (sides multiple of 16, cubes
and non-cubes, batch sizes, base filters, precisions) measured on one of a few
made-up hosts. Its peak is the refined analytical model
(`core.analytical.refined_breakdown`) plus the ~0.2 GiB runtime overhead it
misses on the reference machine, times a few percent of noise (the measured
run-to-run spread, docs/measurement.md); a point over its host's memory limit
is stored as ``oom`` (or ``skipped``, never launched), as a real sweep stores
it. A few runs carry a timeline: the shape of a real bundled timeline, scaled to
the run's peak and wall time. Runs are grouped into sweeps of ~100 points.

Nothing here is a measurement; it only gives the pages realistic volumes to read.
Written in bulk (Arrow tables, one transaction), not one insert per run.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from core import database, schema, store
from core.analytical import refined_breakdown
from core.targets import HOST_RAM
from core.units import GIB
from core.workloads.unet3d import UNetConfig, config_columns, valid_sides

MIB = 2**20
# (hostname, CPU, cores, RAM): machines a team might compare side by side.
HOSTS = (
    ("synthetic-xeon-768g", "Intel(R) Xeon(R) Gold 6248", 40, 768 * GIB),
    ("synthetic-epyc-1t", "AMD EPYC 7763 64-Core Processor", 128, 1024 * GIB),
    ("synthetic-xeon-256g", "Intel(R) Xeon(R) Platinum 8380", 80, 256 * GIB),
    ("synthetic-laptop-32g", "Intel(R) Core(TM) i7-1185G7", 8, 32 * GIB),
)
# A sweep's memory limit is this share of its host's RAM (profiling.sweep's default).
MEMORY_LIMIT_FRACTION = 0.75
BATCH_SIZES = (1, 2, 4, 8, 16, 32)
BASE_FILTERS = (8, 16, 16, 16, 32)  # repeated: most runs use the reference network's 16
PRECISIONS = ("float32", "float32", "float32", "mixed_float16", "mixed_bfloat16")
# Sides a sweep on these hosts would try, all multiples of 16 (5 levels).
MIN_SIDE, MAX_SIDE = 32, 256
CUBE_SHARE = 0.8
# What the refined model misses on the reference machine (graph tracing, caches).
RUNTIME_OVERHEAD_BYTES = 200 * MIB
# Framework baseline after the TensorFlow import, and its spread between hosts.
FRAMEWORK_BYTES = 700 * MIB
FRAMEWORK_SPREAD = 0.05
# Relative run-to-run noise of a peak (docs/measurement.md: 1-7%).
PEAK_NOISE = 0.03
# The sampler misses up to ~1% of the high-water mark.
SAMPLER_GAP_MAX = 0.01
# The pre-launch estimate is conservative by about this factor.
ESTIMATE_MARGIN = 1.15
# Shares of runs that fail for reasons other than memory.
ERROR_SHARE, TIMEOUT_SHARE = 0.005, 0.005
STEPS = 6
# Wall time: import and tracing, then per voxel per sample per step (profiling.sweep's weights).
POINT_OVERHEAD_S, STEP_S_PER_VOXEL = 14.0, 4e-6
RUNS_PER_SWEEP = 100
SAMPLE_INTERVAL_S = 0.1
FIRST_RUN_AT = datetime(2025, 1, 6, 9, 0, tzinfo=UTC)


def _configs(rng: np.random.Generator, count: int) -> list[UNetConfig]:
    sides = valid_sides(5, MIN_SIDE, MAX_SIDE)
    configs = []
    for _ in range(count):
        if rng.random() < CUBE_SHARE:
            shape = (int(rng.choice(sides)),) * 3
        else:
            shape = tuple(int(side) for side in rng.choice(sides, size=3))
        configs.append(
            UNetConfig(
                image_shape=shape,  # type: ignore[arg-type]
                batch_size=int(rng.choice(BATCH_SIZES)),
                base_filters=int(rng.choice(BASE_FILTERS)),
                precision=str(rng.choice(PRECISIONS)),
            )
        )
    return configs


def runs_frame(count: int, seed: int = 0) -> pd.DataFrame:
    """``count`` synthetic runs (all RUN_COLUMNS), in sweeps of RUNS_PER_SWEEP, oldest first."""
    rng = np.random.default_rng(seed)
    rows = []
    for index, config in enumerate(_configs(rng, count)):
        sweep_number = index // RUNS_PER_SWEEP
        hostname, cpu_model, cores, ram_bytes = HOSTS[sweep_number % len(HOSTS)]
        limit_bytes = int(ram_bytes * MEMORY_LIMIT_FRACTION)
        framework_bytes = int(FRAMEWORK_BYTES * (1 + FRAMEWORK_SPREAD * rng.standard_normal()))
        refined_bytes = refined_breakdown(config, framework_bytes).total_bytes
        noise = 1 + PEAK_NOISE * rng.standard_normal()
        peak_bytes = int((refined_bytes + RUNTIME_OVERHEAD_BYTES) * noise)
        estimate_bytes = int(refined_bytes * ESTIMATE_MARGIN)
        voxels = int(np.prod(config.image_shape))
        step_s = STEP_S_PER_VOXEL * voxels * config.batch_size
        created = FIRST_RUN_AT + timedelta(days=sweep_number, minutes=index % RUNS_PER_SWEEP)
        row = {
            "run_id": uuid.UUID(bytes=rng.bytes(16)).hex,
            "sweep_id": f"synthetic{sweep_number:04d}",
            "created_at": created.isoformat(timespec="seconds"),
            "status": "ok",
            "message": "",
            "workload": "unet3d",
            **config_columns(config),
            "steps": STEPS,
            "seed": 0,
            "repeat": 0,
            "sample_interval_s": SAMPLE_INTERVAL_S,
            "timeout_s": 1800.0,
            "memory_limit_bytes": limit_bytes,
            "estimate_bytes": estimate_bytes,
            "peak_sampled_bytes": int(peak_bytes * (1 - SAMPLER_GAP_MAX * rng.random())),
            "peak_hwm_bytes": peak_bytes,
            "baseline_bytes": framework_bytes,
            "wall_s": round(POINT_OVERHEAD_S + STEPS * step_s, 3),
            # The first step also traces the graph; the high-water mark creeps up to the peak.
            "step_times_s": json.dumps(
                [round(step_s + POINT_OVERHEAD_S / 2, 4)] + [round(step_s, 4)] * (STEPS - 1)
            ),
            "step_hwm_bytes": json.dumps(
                [int(peak_bytes * share) for share in np.linspace(0.95, 1.0, STEPS)]
            ),
            "hostname": hostname,
            "cpu_model": cpu_model,
            "cpu_cores": cores,
            "total_ram_bytes": ram_bytes,
            "os": "Linux-6.1.0-amd64-x86_64-with-glibc2.36",
            "python_version": "3.11.7",
            "tensorflow_version": "2.21.0",
            "framework": "tensorflow",
            "framework_version": "2.21.0",
            "memory_target": HOST_RAM,
            "keras_version": "3.15.1",
            "numpy_version": "2.4.6",
            "onednn_enabled": True,
        }
        if estimate_bytes > limit_bytes:
            row |= _not_measured("skipped", "estimated peak exceeds the memory limit")
        elif peak_bytes > limit_bytes:
            row |= {
                "status": "oom",
                "message": "crossed the memory limit; killed",
                "peak_sampled_bytes": limit_bytes,
                "peak_hwm_bytes": limit_bytes,
            }
        elif (draw := rng.random()) < ERROR_SHARE:
            row |= _not_measured("error", "ResourceExhaustedError: OOM when allocating tensor")
        elif draw < ERROR_SHARE + TIMEOUT_SHARE:
            row |= _not_measured("timeout", "no result after 1800 s")
        rows.append(row)
    return pd.DataFrame(rows, columns=list(store.RUN_COLUMNS))


def _not_measured(status: str, message: str) -> dict[str, object]:
    return {
        "status": status,
        "message": message,
        "peak_sampled_bytes": None,
        "peak_hwm_bytes": None,
        "wall_s": None,
        "step_times_s": "[]",
        "step_hwm_bytes": "[]",
    }


def sweeps_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """One finished sweep per sweep_id of ``runs``, with its grid and progress."""
    rows = []
    for sweep_id, points in runs.groupby("sweep_id", sort=True):
        shapes = points[["depth", "height", "width"]].itertuples(index=False)
        sides = sorted({f"{depth}x{height}x{width}" for depth, height, width in shapes})
        grid = {"image_sizes": sides, "batch_sizes": sorted(points["batch_size"].unique().tolist())}
        rows.append(
            {
                "sweep_id": sweep_id,
                "created_at": points["created_at"].min(),
                "finished_at": points["created_at"].max(),
                "status": "finished",
                "command": "python -m profiling sweep (synthetic)",
                "grid_json": json.dumps(grid, sort_keys=True),
                "hostname": points["hostname"].iloc[0],
                "points_total": len(points),
                "points_done": len(points),
            }
        )
    return pd.DataFrame(rows)


def timelines_table(runs: pd.DataFrame, template: pd.DataFrame, count: int) -> pa.Table:
    """Timelines for the first ``count`` ``ok`` runs: ``template`` scaled to each run."""
    shape_t = template["t_s"].to_numpy() / template["t_s"].max()
    shape_rss = template["rss_bytes"].to_numpy() / template["rss_bytes"].max()
    chosen = runs[runs["status"] == "ok"].head(count)
    tables = []
    for run in chosen.itertuples(index=False):
        tables.append(
            pa.table(
                {
                    "run_id": pa.array([run.run_id] * len(shape_t), pa.string()),
                    "t_s": pa.array(shape_t * run.wall_s, pa.float64()),
                    "rss_bytes": pa.array(
                        (shape_rss * run.peak_hwm_bytes).astype(np.int64), pa.int64()
                    ),
                },
                schema=schema.SAMPLES_ARROW_SCHEMA,
            )
        )
    return pa.concat_tables(tables)


def add_synthetic_runs(db_path: Path, count: int, timelines: int, seed: int = 0) -> pd.DataFrame:
    """Append ``count`` synthetic runs, their sweeps and ``timelines`` timelines to ``db_path``.

    The timeline shape is the longest bundled timeline in the database; returns the runs.
    """
    runs = runs_frame(count, seed)
    samples = store.load_samples(db_path)
    longest = samples.groupby("run_id").size().idxmax()
    template = samples[samples["run_id"] == longest]
    runs_table = pa.Table.from_pandas(runs, schema=schema.RUNS_ARROW_SCHEMA, preserve_index=False)
    sweeps = sweeps_frame(runs)
    with database.transaction(db_path) as con:
        schema.insert_table(con, "runs", runs_table)
        schema.insert_table(con, "samples", timelines_table(runs, template, timelines))
        schema.insert_table(con, "sweeps", pa.Table.from_pandas(sweeps, preserve_index=False))
    return runs
