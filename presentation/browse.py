"""What browsing the stored runs shows, as plain frames: filters, tables, timelines, peaks.

The Sweeps page draws these; nothing here needs Streamlit, so each is tested
with plain pytest. Runs of every workload sit side by side: a 3D image is
labelled by every side (``64×64×64``), a 2D one as its workload writes it
(``224`` for a square, ``227x200`` otherwise). Storage is in bytes; every
frame made for reading is in GiB, with the unit in the column name.

Machines are told apart by their profile (`core.profiles`), never by host
name: a frame with the ``machine_profile`` column (`core.profiles.with_keys`)
can be filtered and compared by it; `presentation.machines` tabulates them.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from core import profiles, workloads
from core.records import RUN_COLUMNS
from core.units import GIB
from presentation import workload_labels

OK = "ok"
IMAGE = "image"  # the derived "D×H×W" (or 2D "224", "227x200") column
WORKLOAD = workload_labels.WORKLOAD_COLUMN
MACHINE = profiles.KEY_COLUMN  # a run's profile key (`core.profiles.with_keys`)
# Every run's two peaks, side by side: the kernel's high-water mark (VmHWM, which the models
# fit: no spike between samples escapes it) and the largest sample memory_profiler took.
HWM_HEADING = "high-water mark (GiB)"
SAMPLED_HEADING = "sampled peak (GiB)"
PEAK_HELP: dict[str, str] = {
    HWM_HEADING: "The kernel's high-water mark of resident memory (VmHWM): the peak the "
    "models fit. No spike between two samples escapes it.",
    SAMPLED_HEADING: "The largest resident memory memory_profiler sampled (every 0.1 s "
    "unless the sweep said otherwise): a spike between two samples escapes it.",
}
# The knobs the runs are filtered by and listed with (`core.workloads.LISTED_KNOBS`):
# filter label -> runs column, and runs column -> heading, each as its `Knob` says.
KNOB_FILTERS: dict[str, str] = {
    workloads.KNOBS[name].label: name for name in workloads.LISTED_KNOBS
}
KNOB_HEADINGS: dict[str, str] = {
    name: workloads.KNOBS[name].words for name in workloads.LISTED_KNOBS
}
# Filter label on the page -> runs column; an empty choice means "all".
FILTERS: dict[str, str] = {
    "Workload": WORKLOAD,
    "Machine": MACHINE,
    "Sweep": "sweep_id",
    "Host": "hostname",
    "Status": "status",
    "Image size": IMAGE,
    "Batch size": "batch_size",
    **KNOB_FILTERS,
}
# The runs table: runs column -> heading (units in the heading).
RUNS_TABLE: dict[str, str] = {
    "run_id": "run",
    "sweep_id": "sweep",
    "status": "status",
    WORKLOAD: "workload",
    IMAGE: "image (D×H×W or H×W)",
    "batch_size": "batch",
    **KNOB_HEADINGS,
    "steps": "steps",
    "peak_hwm_bytes": HWM_HEADING,
    "peak_sampled_bytes": SAMPLED_HEADING,
    "baseline_bytes": "after import (GiB)",
    "estimate_bytes": "estimate (GiB)",
    "memory_limit_bytes": "memory limit (GiB)",
    "wall_s": "wall time (s)",
    "hostname": "host",
    MACHINE: "machine profile",
    "slurm_job_id": "Slurm job",
    "created_at": "created (UTC)",
    "message": "message",
}
SWEEPS_TABLE: dict[str, str] = {
    "sweep_id": "sweep",
    "status": "status",
    "points": "points done / total",
    "grid": "grid",
    "hostname": "host",
    "created_at": "created (UTC)",
    "finished_at": "finished (UTC)",
    "command": "command",
}
# How a sweep's grid is summarised, in this order: sizes, batches, then the knob each
# workload's run picker tells networks apart by (``LABELS.short_knob``); other knobs
# show only when swept.
GRID_SUMMARY = {
    "image_sizes": "sizes",
    "batch_sizes": "batch",
    **{
        workloads.KNOBS[labels.short_knob[0]].sweep_key: labels.short_knob[1]
        for labels in (module.LABELS for module in workloads.REGISTERED)
        if labels.short_knob
    },
}
SHORT_ID = 12  # characters of a run or sweep id worth showing
# Rules drawn over a timeline: label -> runs column.
PEAK_MARKS: dict[str, str] = {
    "sampled peak": "peak_sampled_bytes",
    "kernel high-water mark": "peak_hwm_bytes",
    "after framework import": "baseline_bytes",
}


def image_label(depth: int | None, height: int, width: int) -> str:
    """``16×16×16``: every side of a 3D image, so a cube and a slab read alike.

    A 2D image (no depth) reads as its workload writes it: ``224``, ``227x200``.
    """
    if depth is None or pd.isna(depth):
        return workload_labels.image_label((int(height), int(width)))
    return f"{int(depth)}×{int(height)}×{int(width)}"


def with_image(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a workload in every row, the ``image`` label and ``voxels`` (its size).

    ``voxels`` counts a 2D image's pixels, to sort images by size.
    """
    runs = workload_labels.with_workload(runs)
    depth = runs["depth"].astype("Float64").fillna(1) if "depth" in runs else 1
    return runs.assign(
        **{
            IMAGE: [
                image_label(*shape)
                for shape in zip(runs["depth"], runs["height"], runs["width"], strict=True)
            ],
            "voxels": (depth * runs["height"] * runs["width"]).astype(float),
        }
    )


def filter_options(runs: pd.DataFrame, column: str) -> list[Any]:
    """The distinct values of ``column`` a filter offers: images by size, the rest sorted."""
    if runs.empty:
        return []
    if column == IMAGE:
        ordered = runs.sort_values(["voxels", "depth", "height"])
        return list(dict.fromkeys(ordered[IMAGE]))
    if column == WORKLOAD:
        present = set(runs[WORKLOAD].dropna())
        return [name for name in workload_labels.names() if name in present] + sorted(
            present - set(workload_labels.names())
        )
    if column == MACHINE:  # most runs first, as the machines table lists them
        counts = runs[MACHINE].dropna().value_counts()
        return sorted(counts.index, key=lambda key: (-counts[key], key))
    values = runs[column].dropna().unique().tolist()
    return sorted(values, key=lambda value: (isinstance(value, str), value))


def filter_runs(runs: pd.DataFrame, chosen: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """The runs whose every filtered column takes one of the chosen values (empty = any)."""
    keep = pd.Series(True, index=runs.index)
    for column, values in chosen.items():
        if values:
            keep &= runs[column].isin(list(values))
    return runs[keep]


def _gib(values: pd.Series) -> pd.Series:
    return (values.astype("Float64") / GIB).round(3)


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs as the page lists them: short ids, memory in GiB, newest first.

    The machine profile is listed when ``runs`` has it.
    """
    columns = [column for column in RUNS_TABLE if column != MACHINE or MACHINE in runs]
    table = runs.sort_values(["created_at", "run_id"], ascending=False)[columns].copy()
    for column in table.columns:
        if column.endswith("_bytes"):
            table[column] = _gib(table[column])
    for column in ("run_id", "sweep_id"):
        table[column] = table[column].str[:SHORT_ID]
    return table.rename(columns=RUNS_TABLE).reset_index(drop=True)


def runs_csv(runs: pd.DataFrame) -> bytes:
    """The runs as CSV in the export format, so `memplan import` takes it back."""
    frame = runs[list(RUN_COLUMNS)]
    with tempfile.TemporaryDirectory(prefix="memplan-csv-") as tmp:
        path = Path(tmp) / "runs.csv"
        with duckdb.connect() as con:
            con.register("runs_frame", frame)
            # As profiling.exchange writes: an empty field is NULL, "" an empty string.
            con.execute(f"COPY runs_frame TO '{path}' (FORMAT csv, HEADER true)")
        return path.read_bytes()


def run_label(run: Mapping[str, Any]) -> str:
    """How a run is named in a picker: what, how it ended, where and when."""
    image = image_label(run.get("depth"), run["height"], run["width"])
    return (
        f"{image} batch {run['batch_size']}, {network_label(run)}"
        f" · {run['status']} · {run['hostname']} · {run['created_at'][:19]}"
        f" · {run['run_id'][:8]}"
    )


def timeline(samples: pd.DataFrame) -> pd.DataFrame:
    """A run's resident memory over time: ``t_s`` and ``rss_gib``."""
    return pd.DataFrame(
        {"t_s": samples["t_s"].astype(float), "rss_gib": samples["rss_bytes"].astype(float) / GIB}
    ).reset_index(drop=True)


def peak_marks(run: Mapping[str, Any]) -> pd.DataFrame:
    """Horizontal marks for a run's timeline: ``mark`` and ``gib``, those it has."""
    rows = [
        {"mark": label, "gib": float(run[column]) / GIB}
        for label, column in PEAK_MARKS.items()
        if run.get(column) is not None and not pd.isna(run[column])
    ]
    return pd.DataFrame(rows, columns=["mark", "gib"])


def step_ends(run: Mapping[str, Any], samples: pd.DataFrame) -> pd.DataFrame:
    """Each training step on the run's timeline: ``step``, ``start_s``, ``end_s``, ``hwm_gib``.

    The child records each step's duration, not its clock time; the steps are
    its last work before it writes its result and exits, so they are placed back
    from the last sample, accurate to about one sampling interval. Only a run
    that completed every step has them (a killed run's steps did not end there).
    """
    columns = ["step", "start_s", "end_s", "hwm_gib"]
    durations = json.loads(run.get("step_times_s") or "[]")
    if run.get("status") != OK or samples.empty or len(durations) != run.get("steps"):
        return pd.DataFrame(columns=columns)
    hwm = json.loads(run.get("step_hwm_bytes") or "[]")
    end_s = float(samples["t_s"].max())
    ends = end_s - np.concatenate([np.cumsum(durations[::-1])[::-1][1:], [0.0]])
    return pd.DataFrame(
        {
            "step": np.arange(1, len(durations) + 1),
            "start_s": ends - np.asarray(durations, dtype=float),
            "end_s": ends,
            "hwm_gib": [v / GIB for v in hwm] if len(hwm) == len(durations) else np.nan,
        }
    )


def network_label(run: Mapping[str, Any]) -> str:
    """``16 filters, float32`` (a U-Net), ``1000 classes, float32`` (an AlexNet)."""
    return workload_labels.short_network(run)


def batch_peaks(
    runs: pd.DataFrame, batch_size: int, machine_names: Mapping[str, str] | None = None
) -> pd.DataFrame:
    """Measured peaks at one batch size, for comparing machines.

    Columns: machine (its profile's name in ``machine_names``, else its key;
    "unknown" without the ``machine_profile`` column), host, network, image,
    side (the side of the cube or square with as many voxels or pixels),
    peak_gib (kernel high-water mark), steps, run. With several workloads among
    ``runs``, each network is prefixed with its workload's name; with several
    step counts, each network ends with its runs' (a 1-step smoke test is its
    own series, never joined to the 6-step runs).
    """
    columns = ["machine", "host", "network", IMAGE, "side", "peak_gib", "steps", "run"]
    ok = runs[(runs["status"] == OK) & (runs["batch_size"] == batch_size)]
    ok = ok[ok["peak_hwm_bytes"].notna()]
    if ok.empty:
        return pd.DataFrame(columns=columns)
    ok = with_image(ok) if IMAGE not in ok else workload_labels.with_workload(ok)
    dims = np.where(ok["depth"].isna(), 2, 3) if "depth" in ok else 3
    rows = ok.to_dict("records")
    several = ok[WORKLOAD].nunique() > 1
    several_steps = ok["steps"].nunique() > 1
    keys = ok[MACHINE] if MACHINE in ok else pd.Series("unknown", index=ok.index)
    named = dict(machine_names or {})

    def network(row: Mapping[str, Any]) -> str:
        label = f"{row[WORKLOAD]}: {network_label(row)}" if several else network_label(row)
        steps = int(row["steps"])
        return f"{label}, {steps} step{'' if steps == 1 else 's'}" if several_steps else label

    return (
        pd.DataFrame(
            {
                "machine": [named.get(key, key) for key in keys],
                "host": ok["hostname"],
                "network": [network(row) for row in rows],
                IMAGE: ok[IMAGE],
                "side": np.power(ok["voxels"].astype(float), 1 / dims).round(1),
                "peak_gib": ok["peak_hwm_bytes"].astype(float) / GIB,
                "steps": ok["steps"].astype(int),
                "run": ok["run_id"].str[:8],
            }
        )
        .sort_values(["machine", "network", "side"])
        .reset_index(drop=True)
    )


def _grid_summary(grid_json: str | None) -> str:
    try:
        grid = json.loads(grid_json or "{}")
    except json.JSONDecodeError:
        return ""
    workload = grid.get(WORKLOAD)
    parts = [str(workload)] if isinstance(workload, str) else []
    parts += [
        f"{name} {' '.join(map(str, grid[knob]))}"
        for knob, name in GRID_SUMMARY.items()
        if grid.get(knob)
    ]
    parts += [
        f"{knob.replace('_', ' ')} {' '.join(map(str, values))}"
        for knob, values in grid.items()
        if knob not in GRID_SUMMARY and isinstance(values, list) and len(values) > 1
    ]
    return "; ".join(parts)


def sweeps_table(sweeps: pd.DataFrame) -> pd.DataFrame:
    """The sweeps, newest first: status, points done / total, grid, when."""
    if sweeps.empty:
        return pd.DataFrame(columns=list(SWEEPS_TABLE.values()))
    table = sweeps.assign(
        points=[
            f"{done} / {total}"
            for done, total in zip(sweeps["points_done"], sweeps["points_total"], strict=True)
        ],
        grid=[_grid_summary(text) for text in sweeps["grid_json"]],
        sweep_id=sweeps["sweep_id"].str[:SHORT_ID],
    ).sort_values("created_at", ascending=False)
    return table[list(SWEEPS_TABLE)].rename(columns=SWEEPS_TABLE).reset_index(drop=True)
