"""GPU runs read from JSON lines (`core.device_runs`) as rows of the ``runs`` table.

A `core.device_runs.GpuRun` becomes one run whose target is GPU memory
(`core.targets.GPU_MEMORY`): its configuration's columns, its status and steps, the
device's facts and its figures. What the outside script that measured it did not
record stays NULL (`core.targets` says why): the host figures, the host facts and
the child's protocol settings. The seed is 0 (``measure.py`` seeds torch with 0, as
memplan's child does), the repeat 0, the step list the script's per-step seconds
and the host high-water list empty (no host memory was measured).

Which run a line is: ``run_id`` is ``gpu-`` and a hash of the file's name, the line
number and its text, so importing the same file again is refused as already stored
(`core.datafiles.insert_runs`) rather than stored twice.

When it was measured: the lines carry no time. ``created_at`` is the date the file's
name carries (``h200-torch-2026-11-28.jsonl``: 2026-11-28, midnight UTC) unless given
(``memplan import --created-at``); a name without a date and no time given is refused.
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core import targets, workloads
from core.device_runs import GpuRun
from core.errors import DataFileError
from core.records import RUN_COLUMNS

# The suffix of a file of GPU runs, one JSON object a line.
SUFFIX = ".jsonl"
_DATE_IN_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})")
# What ``measure.py`` seeds torch with (`torch.manual_seed(0)`), as memplan's child does.
MEASURED_SEED = 0


def created_at_of(path: Path, given: str | None) -> str:
    """When the runs of ``path`` were measured: ``given``, else the date in the file's name."""
    if given is not None:
        return given
    found = _DATE_IN_NAME.search(Path(path).name)
    if found is None:
        raise DataFileError(
            f"{path}: the name carries no date (YYYY-MM-DD) and no --created-at was given; "
            "say when the runs were measured, e.g. --created-at 2026-11-28T00:00:00+00:00"
        )
    try:
        day = datetime.strptime(found.group(1), "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise DataFileError(
            f"{path}: {found.group(1)!r} in the name is not a date; give --created-at"
        ) from None
    return day.isoformat(timespec="seconds")


def run_id_of(path: Path, run: GpuRun, text: str) -> str:
    """The id of line ``run.line`` of ``path`` (its text ``text``): the same on every import."""
    digest = hashlib.sha256(f"{Path(path).name}\n{run.line}\n{text}".encode()).hexdigest()
    return f"gpu-{digest[:28]}"


def run_row(run: GpuRun, run_id: str, created_at: str) -> dict[str, Any]:
    """``run`` as a ``runs`` row (column -> value, every RUN_COLUMNS)."""
    device = run.device
    row: dict[str, Any] = dict.fromkeys(RUN_COLUMNS)
    row |= workloads.config_columns(run.config)
    row |= {
        "run_id": run_id,
        "created_at": created_at,
        "status": run.status,
        "message": run.message,
        "steps": run.steps,
        "seed": MEASURED_SEED,
        "repeat": 0,
        "step_times_s": json.dumps(list(run.step_times_s)),
        "step_hwm_bytes": "[]",
        "framework": device.framework,
        "framework_version": device.framework_version,
        targets.TARGET_COLUMN: targets.GPU_MEMORY,
        "gpu_name": device.name,
        "gpu_total_bytes": device.total_bytes,
        "gpu_compute_capability": device.compute_capability,
        "gpu_driver": device.driver,
        "cuda_version": device.cuda,
        "cudnn_version": device.cudnn,
        "alloc_conf": device.alloc_conf,
        "allocated_peak_bytes": run.allocated_peak_bytes,
        "reserved_peak_bytes": run.reserved_peak_bytes,
        "nvml_used_peak_bytes": run.nvml_used_peak_bytes,
        "context_bytes": run.context_bytes,
    }
    return row
