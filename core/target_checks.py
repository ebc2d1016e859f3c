"""Whether each imported run's memory figures fit the target it measured (`core.targets`).

`core.plausibility.check_runs` calls `check_targets` on the typed columns of an
import. Each check names the first offending row (numbered from 1) and field, its
value, and what would be right:

* ``memory_target`` is a declared target;
* a run records the facts its target needs: a host-RAM run its host and protocol facts
  (`core.targets.HOST_FACT_COLUMNS`), a GPU run the device's facts and its context;
  a host-RAM run has no GPU facts or figures (they would describe no device);
* an ``ok`` run has its target's figures (`core.plausibility` checks that);
* a GPU's total is from 1 GiB to `core.targets.MAX_DEVICE_BYTES`; every device figure is
  a positive number of bytes no larger than that device's total; the allocated peak is
  no larger than the reserved one (the caching allocator holds every byte it hands out).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core import schema, targets
from core.errors import DataFileError
from core.filecolumns import TYPE_WORDS
from core.units import GIB, format_bytes

MIN_DEVICE_BYTES = 1 * GIB
_DEVICE_COLUMNS = (*targets.DEVICE_FACT_COLUMNS, *targets.DEVICE_FIGURE_COLUMNS)


def _error(path: Path, row: int, run_id: str, field: str, problem: str) -> DataFileError:
    return DataFileError(f"{path}: row {row} (run {run_id}), field {field}: {problem}")


def _check_device_figures(
    path: Path, row: int, run_id: str, values: dict[str, Any], figures: Sequence[str]
) -> None:
    total = values["gpu_total_bytes"]
    if not MIN_DEVICE_BYTES <= total <= targets.MAX_DEVICE_BYTES:
        raise _error(
            path,
            row,
            run_id,
            "gpu_total_bytes",
            f"{total!r} is not a GPU's memory; gpu_total_bytes must be from "
            f"{format_bytes(MIN_DEVICE_BYTES)} to {format_bytes(targets.MAX_DEVICE_BYTES)}",
        )
    for name in figures:
        value = values[name]
        if value is None:
            continue
        if value <= 0:
            raise _error(path, row, run_id, name, f"{value!r} is not a positive number of bytes")
        if value > total:
            raise _error(
                path,
                row,
                run_id,
                name,
                f"{format_bytes(value)} is more than the device has ({format_bytes(total)}, "
                "gpu_total_bytes)",
            )
    allocated, reserved = values["allocated_peak_bytes"], values["reserved_peak_bytes"]
    if allocated is not None and reserved is not None and allocated > reserved:
        raise _error(
            path,
            row,
            run_id,
            "allocated_peak_bytes",
            f"{allocated} is larger than reserved_peak_bytes ({reserved}); the caching "
            "allocator holds every byte it hands out",
        )


def check_targets(path: Path, columns: dict[str, list[Any]]) -> None:
    """Each run's target is declared, and its facts and figures fit it (module docstring)."""
    for index, name in enumerate(columns[targets.TARGET_COLUMN]):
        row, run_id = index + 1, columns["run_id"][index]
        if name not in targets.TARGETS:
            raise _error(
                path,
                row,
                run_id,
                targets.TARGET_COLUMN,
                f"{name!r} is not one of {', '.join(targets.TARGETS)}",
            )
        target = targets.TARGETS[name]
        values = {column: columns[column][index] for column in (*target.facts, *_DEVICE_COLUMNS)}
        missing = [column for column in target.facts if values[column] is None]
        if missing:
            # As `core.filecolumns` says of an empty value a column always needs.
            raise DataFileError(
                f"{path}: row {row}: {missing[0]} is empty; it needs "
                f"{TYPE_WORDS[schema.RUN_TYPES[missing[0]]]} (run {run_id}: a {target.label} "
                f"run records {', '.join(target.facts)})"
            )
        if name == targets.GPU_MEMORY:
            _check_device_figures(path, row, run_id, values, targets.DEVICE_FIGURE_COLUMNS)
            continue
        foreign = [column for column in _DEVICE_COLUMNS if values[column] is not None]
        if foreign:
            raise _error(
                path,
                row,
                run_id,
                foreign[0],
                f"must be empty for a {target.label} run, which measured no GPU "
                f"(memory_target {targets.GPU_MEMORY!r} says a run did)",
            )
