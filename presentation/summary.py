"""A sweep at a glance: peak memory by image size (rows) and batch size (columns).

Images read as their workload writes them: ``64`` (a cube or a square),
``240x240x144``, ``227x200``.

Measured cells show the median peak in GiB over their repeats; points that did
not measure show their status instead, so what did not fit stays visible. A
median over two networks would be neither's peak: `networks` splits runs by
workload and network knobs, one table each.
"""

from __future__ import annotations

import math

import pandas as pd

from core import workloads
from presentation import workload_labels

PEAK_COLUMNS = {"hwm": "peak_hwm_bytes", "sampled": "peak_sampled_bytes"}
# How a cell reads when the point has no measurement, most informative first.
_STATUS_ORDER = ("oom", "timeout", "error", "killed", "skipped", "interrupted")


def _cell(group: pd.DataFrame, column: str) -> str:
    ok = group[group["status"] == "ok"]
    if not ok.empty:
        repeats = f" (x{len(ok)})" if len(ok) > 1 else ""
        return f"{ok[column].median() / 2**30:.2f}{repeats}"
    statuses = set(group["status"])
    return next((status for status in _STATUS_ORDER if status in statuses), "")


def networks(runs: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    """``runs`` split by workload and network, most runs first: (label, that network's runs).

    The label names the workload and every knob (``unet3d: 8 base filters, 5 levels,
    float32, transpose``).
    """
    runs = workload_labels.with_workload(runs)
    found = []
    for workload, mine in runs.groupby(workload_labels.WORKLOAD_COLUMN, sort=True):
        knobs = list(workloads.get(str(workload)).NETWORK_KNOBS)
        for values, group in mine.groupby(knobs, sort=True, dropna=False):
            setting = dict(zip(knobs, values, strict=True))
            label = f"{workload}: {workload_labels.network_label(setting, str(workload))}"
            found.append((label, group))
    return sorted(found, key=lambda item: -len(item[1]))


def peak_table(runs: pd.DataFrame, metric: str = "hwm") -> pd.DataFrame:
    """Image size x batch size table of peaks (GiB) or statuses, as strings."""
    if metric not in PEAK_COLUMNS:
        raise ValueError(f"metric {metric!r} is not one of {', '.join(PEAK_COLUMNS)}")
    if runs.empty:
        return pd.DataFrame()
    shapes = [workload_labels.image_shape(row) for row in runs.to_dict("records")]
    runs = runs.assign(
        image=[workload_labels.image_label(shape) for shape in shapes],
        voxels=[math.prod(shape) for shape in shapes],
    )
    cells = {
        (image, batch): _cell(group, PEAK_COLUMNS[metric])
        for (image, batch), group in runs.groupby(["image", "batch_size"])
    }
    images = runs.sort_values("voxels")["image"].drop_duplicates().tolist()
    batches = sorted(runs["batch_size"].unique())
    table = pd.DataFrame(
        [[cells.get((image, batch), "") for batch in batches] for image in images],
        index=pd.Index(images, name="image size"),
        columns=[f"batch {batch}" for batch in batches],
    )
    return table


def to_markdown(table: pd.DataFrame) -> str:
    header = ["image size", *table.columns]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += [
        "| " + " | ".join([index, *row]) + " |"
        for index, row in zip(table.index, table.values, strict=True)
    ]
    return "\n".join(lines)
