"""Copies of stored runs as new runs: at another step count (a smoke test) or re-measured.

The tests of what a fit rests on (`modeling.evaluation.steps`) add such runs to a
database of the bundled runs: a 1-step sweep of a few configurations the 6-step
runs measured, or new 6-step runs of one machine profile.
"""

from __future__ import annotations

import math
import uuid
from pathlib import Path
from typing import Any

from core import store
from core.records import RUN_COLUMNS, RunRecord

# The bundled U-Net runs' machine profile (data/reference_runs.parquet, an Intel Xeon).
BUNDLED_UNET_MACHINE = "9b59349f74"
# The bundled U-Net grid again on an AVX-512 AMD EPYC (data/unet3d_amd_runs.parquet).
BUNDLED_AMD_MACHINE = "b42ae893fe"
# What the bundled runs trained for (`memplan sweep --steps`, data/REFERENCE.md).
PRODUCTION_STEPS = 6
# The sidebar sweep of issue 26's finding 1: a smoke test of one step.
SMOKE_STEPS = 1


def _plain(value: Any) -> Any:
    """A value of a pandas row as the record's type: NaN is None, numpy scalars are Python's."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def add_copies(
    db: Path, machine: str, steps: int, count: int, peak_scale: float = 1.0
) -> list[str]:
    """Store copies of the ``count`` smallest ok U-Net runs of ``machine`` as new runs.

    steps : the copies' training steps; peak_scale : their peaks, relative to the
    originals'. Returns the new run ids.
    """
    runs = store.load_runs(db, store.RunFilter(status="ok", workload="unet3d", machine=machine))
    runs = runs[runs["steps"] == PRODUCTION_STEPS].sort_values(["height", "batch_size", "run_id"])
    added = []
    for row in runs.head(count).to_dict("records"):
        values = {name: _plain(row[name]) for name in RUN_COLUMNS}
        peak = int(values["peak_hwm_bytes"] * peak_scale)
        values |= {
            "run_id": uuid.uuid4().hex,
            "sweep_id": None,
            "created_at": store.now_iso(),
            "steps": steps,
            "peak_hwm_bytes": peak,
            "peak_sampled_bytes": peak,
        }
        store.insert_run(db, RunRecord(**values))
        added.append(values["run_id"])
    return added
