"""The measurement floor: how exactly the stored runs know their own peaks.

No model can be judged more finely than the measurements it is compared with.
Two figures, computed from the ``runs`` table alone (`core.store.load_runs`):

* `sampling_gap` — the kernel's high-water mark (VmHWM) minus the peak that
  memory_profiler saw sampling every 0.1 s, over the ``ok`` runs that have both:
  how much a short spike between two samples can hide;
* `repeat_spreads` — for every point measured more than once, the spread
  (max - min) / mean of its peak: run-to-run noise.

Pure pandas, no TensorFlow and no database: `benchmarks.measurement_floor`
prints these as Markdown and the dashboard's Models page shows them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import workloads
from core.store import POINT_COLUMNS
from core.workloads.base import format_image_shape

MIB = 2**20
OK_STATUS = "ok"
# What makes two runs the same point: the workload, its configuration and the steps.
REPEAT_KEY: tuple[str, ...] = POINT_COLUMNS


@dataclass(frozen=True)
class SamplingGap:
    """High-water mark minus sampled peak over ``n_runs`` runs, in MiB and in % of the HWM."""

    n_runs: int
    median_mib: float
    mean_mib: float
    max_mib: float
    min_mib: float
    median_pct: float
    mean_pct: float
    max_pct: float
    min_pct: float
    worst_point: str  # the run with the largest relative gap, e.g. "32^3 batch 2"


@dataclass(frozen=True)
class RepeatSpread:
    """One point measured ``runs`` times: its mean peak and the spread of its peaks."""

    point: str  # e.g. "32^3 batch 2"
    runs: int
    mean_hwm_mib: float
    hwm_spread_pct: float  # (max - min) / mean of the high-water marks
    sampled_spread_pct: float  # the same for the sampled peaks


def point_label(row: Mapping[str, Any]) -> str:
    """``32^3 batch 2`` for a cube (``224^2`` a square), ``240x240x144 batch 16`` otherwise."""
    module = workloads.get(row.get("workload") or workloads.DEFAULT_WORKLOAD)
    shape = tuple(int(row[column]) for column in module.SHAPE_COLUMNS)
    power = f"^{len(shape)}" if len(set(shape)) == 1 else ""
    return f"{format_image_shape(shape)}{power} batch {int(row['batch_size'])}"


def sampling_gap(runs: pd.DataFrame) -> SamplingGap | None:
    """The sampled-vs-high-water gap over the ``ok`` runs with both peaks; None without any."""
    measured = runs[
        (runs["status"] == OK_STATUS)
        & runs["peak_hwm_bytes"].notna()
        & runs["peak_sampled_bytes"].notna()
    ]
    if measured.empty:
        return None
    hwm = measured["peak_hwm_bytes"].astype(float)
    gap_bytes = hwm - measured["peak_sampled_bytes"].astype(float)
    gap_mib = gap_bytes / MIB
    gap_pct = gap_bytes / hwm * 100
    worst = measured.loc[gap_pct.idxmax()]
    return SamplingGap(
        n_runs=len(measured),
        median_mib=float(gap_mib.median()),
        mean_mib=float(gap_mib.mean()),
        max_mib=float(gap_mib.max()),
        min_mib=float(gap_mib.min()),
        median_pct=float(gap_pct.median()),
        mean_pct=float(gap_pct.mean()),
        max_pct=float(gap_pct.max()),
        min_pct=float(gap_pct.min()),
        worst_point=point_label(worst),
    )


def _spread_pct(values: pd.Series) -> float:
    values = values.astype(float)
    return float((values.max() - values.min()) / values.mean() * 100)


def repeat_spreads(runs: pd.DataFrame) -> list[RepeatSpread]:
    """Every point with two or more ``ok`` runs, in point order, with the spread of its peaks."""
    measured = runs[(runs["status"] == OK_STATUS) & runs["peak_hwm_bytes"].notna()]
    spreads = []
    # A workload leaves other workloads' columns empty: NaN keys must still group.
    for _, group in measured.groupby(list(REPEAT_KEY), sort=True, dropna=False):
        if len(group) < 2:
            continue
        spreads.append(
            RepeatSpread(
                point=point_label(group.iloc[0]),
                runs=len(group),
                mean_hwm_mib=float(group["peak_hwm_bytes"].astype(float).mean() / MIB),
                hwm_spread_pct=_spread_pct(group["peak_hwm_bytes"]),
                sampled_spread_pct=_spread_pct(group["peak_sampled_bytes"]),
            )
        )
    return spreads


def largest_spread_pct(spreads: list[RepeatSpread]) -> float | None:
    """The largest high-water-mark spread, or None when no point was repeated."""
    return max((spread.hwm_spread_pct for spread in spreads), default=None)
