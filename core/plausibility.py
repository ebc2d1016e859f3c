"""Whether the typed rows of an import could have been measured: ranges, consistency, uniqueness.

`core.datafiles` converts each column to its type (`core.filecolumns`) and then
asks here whether the values make sense, so that no file can put a 9e18-byte
peak, a NaN time or a run with no peak marked ``ok`` into the database. Each
check names the first offending row (numbered from 1, not counting a CSV
header), its value, and what would be right:

* memory figures measured on a machine (peaks, baseline, memory limit, RAM) lie
  between MIN_MEMORY_BYTES and MAX_MEMORY_BYTES; an estimate and a sampled
  resident size may be 0 (memory_profiler's first sample often is) but never
  negative or above MAX_MEMORY_BYTES (an estimate may exceed any machine: it
  is why a point was skipped);
* times are finite; the sampling interval and the timeout more than 0 s, the
  rest 0 s or more;
* steps and CPU cores at least 1, repeats 0 or more, seeds what NumPy and Keras
  take (0 to 2^32 - 1);
* ``created_at`` is an ISO 8601 time no later than now (plus MAX_CLOCK_SKEW_S for
  a node whose clock runs a little ahead);
* an ``ok`` run has its target's figures (`core.targets`: host RAM, both peaks and a
  baseline); its target's facts and the device's limits are `core.target_checks`';
* text is at most MAX_TEXT_CHARS long (a message MAX_MESSAGE_CHARS, a step list
  MAX_STEP_LIST_CHARS, a run id MAX_RUN_ID_CHARS), so no file can store a 300 MB
  message that every later reader loads;
* a run id has no control character and no leading or trailing blank, and each
  run appears once, ignoring case (``Case1`` and ``case1`` would be two runs that
  look like one); each sample (run_id, t_s) once, and every sample belongs to a
  run being imported.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from core import target_checks, targets, workloads
from core.errors import ConfigError, DataFileError
from core.filecolumns import first_true
from core.frameworks import FRAMEWORKS
from core.records import ADDED_KNOB_COLUMNS, STATUSES
from core.units import GIB, MIB, format_bytes

MIN_MEMORY_BYTES = 1 * MIB
MAX_MEMORY_BYTES = targets.MAX_HOST_BYTES  # 64 TiB
MAX_SEED = 2**32 - 1
MAX_CPU_CORES = 2**16
MAX_ESTIMATE_BYTES = 2**62
# Ten times the largest L3 cache of 2026's CPUs (1.1 GiB, AMD EPYC 9684X).
MAX_L3_CACHE_BYTES = 16 * GIB
# The measurements an ``ok`` host-RAM run must have (a GPU run's: `core.targets`).
OK_NEEDS = targets.HOST_RAM_TARGET.ok_needs
JSON_LIST_COLUMNS: dict[str, type] = {"step_times_s": float, "step_hwm_bytes": int}
# How far ahead of this machine's clock a run's created_at may be (a node's clock drifts).
MAX_CLOCK_SKEW_S = 3600
# The longest text a column may hold, in characters: far above what memplan writes (a
# uuid's 32 for an id, ~1,100 for the longest bundled message, 15 lines of a child's
# stderr at most), so only a file made to fill memory is refused.
MAX_RUN_ID_CHARS = 128
MAX_MESSAGE_CHARS = 64 * 1024
# A JSON list with one number per training step: ~20 characters a step, ~200,000 steps.
MAX_STEP_LIST_CHARS = 4 * MIB
MAX_TEXT_CHARS = 1024
TEXT_LIMITS: dict[str, int] = {
    "run_id": MAX_RUN_ID_CHARS,
    "message": MAX_MESSAGE_CHARS,
    "step_times_s": MAX_STEP_LIST_CHARS,
    "step_hwm_bytes": MAX_STEP_LIST_CHARS,
}


@dataclass(frozen=True)
class Range:
    """The values a column may hold: from ``low`` (excluded if ``open_low``) to ``high``."""

    low: float
    high: float | None
    words: str
    open_low: bool = False

    def holds(self, value: float) -> bool:
        above_low = value > self.low if self.open_low else value >= self.low
        return above_low and (self.high is None or value <= self.high)


def _bytes_range(low: int, high: int, what: str) -> Range:
    return Range(
        low,
        high,
        f"{what} from {format_bytes(low) if low else '0'} to {format_bytes(high)} "
        f"({low} to {high} bytes)",
    )


_MEASURED = _bytes_range(MIN_MEMORY_BYTES, MAX_MEMORY_BYTES, "bytes")
RUN_RANGES: dict[str, Range] = {
    "steps": Range(1, None, "a whole number of at least 1"),
    "seed": Range(0, MAX_SEED, f"a seed from 0 to {MAX_SEED}, as NumPy and Keras take"),
    "repeat": Range(0, None, "a whole number, 0 or more"),
    "sample_interval_s": Range(0, None, "seconds, more than 0", open_low=True),
    "timeout_s": Range(0, None, "seconds, more than 0", open_low=True),
    "memory_limit_bytes": _MEASURED,
    "estimate_bytes": _bytes_range(0, MAX_ESTIMATE_BYTES, "bytes"),
    "peak_sampled_bytes": _MEASURED,
    "peak_hwm_bytes": _MEASURED,
    "baseline_bytes": _MEASURED,
    "wall_s": Range(0, None, "seconds, 0 or more"),
    "cpu_cores": Range(1, MAX_CPU_CORES, f"a whole number from 1 to {MAX_CPU_CORES}"),
    "total_ram_bytes": _MEASURED,
    "l3_cache_bytes": _bytes_range(1, MAX_L3_CACHE_BYTES, "bytes"),
}
SAMPLE_RANGES: dict[str, Range] = {
    "t_s": Range(0, None, "seconds since the run started, 0 or more"),
    "rss_bytes": _bytes_range(0, MAX_MEMORY_BYTES, "bytes"),
}


def _out_of_range(path: Path, name: str, row: int, value: Any, allowed: Range) -> DataFileError:
    if isinstance(value, float) and not math.isfinite(value):
        problem = "is not a finite number"
    elif value < 0:
        problem = "is negative"
    else:
        problem = "is too small" if value <= allowed.low else "is too large"
    return DataFileError(
        f"{path}: column {name}, row {row}: {value!r} {problem}; {name} must be {allowed.words}"
    )


def _check_ranges(path: Path, columns: dict[str, list[Any]], ranges: dict[str, Range]) -> None:
    for name, allowed in ranges.items():
        for row, value in enumerate(columns[name], start=1):
            if value is None:
                continue
            finite = not isinstance(value, float) or math.isfinite(value)
            if not (finite and allowed.holds(value)):
                raise _out_of_range(path, name, row, value, allowed)


def _check_json_lists(path: Path, columns: dict[str, list[Any]]) -> None:
    for name, kind in JSON_LIST_COLUMNS.items():
        for row, text in enumerate(columns[name], start=1):
            try:
                items = json.loads(text)
            except (ValueError, RecursionError):
                items = None
            allowed = (int, float) if kind is float else (int,)
            good = isinstance(items, list) and all(
                isinstance(item, allowed)
                and not isinstance(item, bool)
                and math.isfinite(item)
                and 0 <= item <= MAX_MEMORY_BYTES
                for item in items
            )
            if not good:
                words = (
                    "seconds (finite numbers, 0 or more), e.g. [0.5, 0.42]"
                    if kind is float
                    else f"bytes (whole numbers from 0 to {MAX_MEMORY_BYTES}, i.e. "
                    f"{format_bytes(MAX_MEMORY_BYTES)}), e.g. [1073741824, 1090519040]"
                )
                raise DataFileError(
                    f"{path}: column {name}, row {row}: {text!r} is not a JSON list of "
                    f"{words} or []"
                )


def _check_configs(path: Path, columns: dict[str, list[Any]]) -> None:
    """Each run's workload is known, fills exactly its own columns, and is a valid configuration."""
    stored = (*workloads.STORED_COLUMNS, "batch_size")
    for index, (run_id, name) in enumerate(
        zip(columns["run_id"], columns["workload"], strict=True)
    ):
        row = index + 1
        try:
            module = workloads.get(name)
        except ConfigError as error:
            raise DataFileError(f"{path}: column workload, row {row}: {error}") from None
        used = (*module.SHAPE_COLUMNS, "batch_size", *module.NETWORK_KNOBS)
        values = {column: columns[column][index] for column in stored}
        # A knob column added after schema 5 is empty in runs stored before it: the default.
        empty = [
            column for column in used if values[column] is None and column not in ADDED_KNOB_COLUMNS
        ]
        if empty:
            raise DataFileError(
                f"{path}: row {row} (run {run_id}): {', '.join(empty)} is empty; "
                f"workload {name} needs {', '.join(used)}"
            )
        foreign = [column for column in stored if column not in used and values[column] is not None]
        if foreign:
            raise DataFileError(
                f"{path}: row {row} (run {run_id}): {', '.join(foreign)} must be empty for "
                f"workload {name}, which has no such setting"
            )
        try:
            module.config_from_row(values)
        except (ConfigError, ArithmeticError) as error:
            raise DataFileError(
                f"{path}: row {row} (run {run_id}) is not a valid workload: {error}"
            ) from None


def _check_created_at(path: Path, columns: dict[str, list[Any]]) -> None:
    latest = datetime.now(UTC) + timedelta(seconds=MAX_CLOCK_SKEW_S)
    for row, text in enumerate(columns["created_at"], start=1):
        try:
            when = datetime.fromisoformat(text)
        except (TypeError, ValueError):
            raise DataFileError(
                f"{path}: column created_at, row {row}: {text!r} is not an ISO 8601 time; "
                "created_at must be like 2025-01-31T12:00:00+00:00"
            ) from None
        if (when if when.tzinfo else when.replace(tzinfo=UTC)) > latest:
            raise DataFileError(
                f"{path}: column created_at, row {row}: {text!r} is in the future; created_at "
                f"is when the run was measured, at most {MAX_CLOCK_SKEW_S // 60} minutes ahead "
                f"of this machine's clock ({datetime.now(UTC).isoformat(timespec='seconds')})"
            )


def _check_framework(path: Path, columns: dict[str, list[Any]]) -> None:
    """Each run trained with a framework memplan knows (its profile names it)."""
    for row, framework in enumerate(columns["framework"], start=1):
        if framework not in FRAMEWORKS:
            raise DataFileError(
                f"{path}: column framework, row {row}: {framework!r} is not one of "
                f"{', '.join(FRAMEWORKS)}"
            )


def _check_status(path: Path, columns: dict[str, list[Any]]) -> None:
    for row, status in enumerate(columns["status"], start=1):
        if status not in STATUSES:
            raise DataFileError(
                f"{path}: column status, row {row}: {status!r} is not one of {', '.join(STATUSES)}"
            )
        if status != "ok":
            continue
        target = targets.target(columns[targets.TARGET_COLUMN][row - 1])
        missing = [name for name in target.ok_needs if columns[name][row - 1] is None]
        kind = "" if target is targets.HOST_RAM_TARGET else f" {target.label}"
        if missing:
            raise DataFileError(
                f"{path}: row {row} (run {columns['run_id'][row - 1]}): status is ok but "
                f"{', '.join(missing)} is empty; an ok{kind} run has "
                f"{', '.join(target.ok_needs)} "
                "(give a run that did not measure them another status, e.g. error)"
            )


def text_limit(column: str) -> int:
    """The most characters ``column`` (of runs or samples) may hold."""
    return TEXT_LIMITS.get(column, MAX_TEXT_CHARS)


def _check_lengths(path: Path, columns: dict[str, list[Any]]) -> None:
    for name, values in columns.items():
        limit = text_limit(name)
        if not isinstance(next((value for value in values if value is not None), None), str):
            continue  # not text (a column has one type: `core.filecolumns`)
        # The longest first (fast), the row only when one is too long.
        if max((len(value) for value in values if value is not None), default=0) <= limit:
            continue
        for row, value in enumerate(values, start=1):
            if isinstance(value, str) and len(value) > limit:
                raise DataFileError(
                    f"{path}: column {name}, row {row}: {len(value):,} characters, more than "
                    f"the {limit:,} a {name} may have"
                )


def _check_run_id(path: Path, row: int, run_id: str) -> None:
    """A run id is text a person can type and read back: no control character, no blank ends."""
    if not run_id.strip():
        raise DataFileError(f"{path}: row {row}: run_id is empty; every run needs an id")
    if run_id != run_id.strip() or not run_id.isprintable():
        raise DataFileError(
            f"{path}: row {row}: run_id {run_id!r} has a control character or a blank at "
            "either end; a run id is printable text without leading or trailing blanks"
        )


def check_runs(path: Path, columns: dict[str, list[Any]]) -> None:
    """The typed columns of a runs file (lists by RUN_COLUMNS) could have been measured."""
    _check_lengths(path, columns)
    first_row: dict[str, tuple[int, str]] = {}
    for row, run_id in enumerate(columns["run_id"], start=1):
        _check_run_id(path, row, run_id)
        if run_id.lower() in first_row:
            before, first = first_row[run_id.lower()]
            same = "appears twice" if first == run_id else f"and {first!r} differ only in case"
            raise DataFileError(
                f"{path}: run_id {run_id!r} {same} (rows {before} and {row}); each run must "
                "appear once, and run ids are compared ignoring case"
            )
        first_row[run_id.lower()] = (row, run_id)
    _check_ranges(path, columns, RUN_RANGES)
    _check_created_at(path, columns)
    target_checks.check_targets(path, columns)
    _check_status(path, columns)
    _check_framework(path, columns)
    _check_json_lists(path, columns)
    _check_configs(path, columns)


# --- samples: vectorised, as a timeline file may hold millions of rows --------------------


def _check_sample_range(path: Path, table: pa.Table, name: str, allowed: Range) -> None:
    column = table.column(name)
    bad = pc.less(column, allowed.low)
    if allowed.high is not None:
        bad = pc.or_(bad, pc.greater(column, allowed.high))
    if pa.types.is_floating(column.type):
        bad = pc.or_(bad, pc.invert(pc.is_finite(column)))
    row = first_true(bad)
    if row is not None:
        raise _out_of_range(path, name, row + 1, column[row].as_py(), allowed)


def check_samples(path: Path, table: pa.Table, run_ids: Sequence[str]) -> None:
    """A typed samples table (run_id, t_s, rss_bytes) is a timeline of the runs ``run_ids``."""
    for name, allowed in SAMPLE_RANGES.items():
        _check_sample_range(path, table, name, allowed)
    known = pa.array(sorted(set(run_ids)), pa.string())
    # Each sample's run as its position among the sorted run ids: null for a stranger.
    codes = pc.index_in(table.column("run_id"), value_set=known)
    row = first_true(pc.is_null(codes))
    if row is not None:
        raise DataFileError(
            f"{path}: row {row + 1}: run_id {table.column('run_id')[row].as_py()!r} is not "
            "among the runs being imported; import each timeline together with its run"
        )
    _check_unique_samples(path, codes.to_numpy(), table.column("t_s").to_numpy())


def _check_unique_samples(path: Path, codes: np.ndarray, times: np.ndarray) -> None:
    if len(codes) < 2:
        return
    # An export is ordered by run and time: then a repeat is next to its first. Only an
    # unordered file needs the sort (a stable one, so each pair is in file order).
    ordered = bool(
        np.all((codes[1:] > codes[:-1]) | ((codes[1:] == codes[:-1]) & (times[1:] >= times[:-1])))
    )
    order = np.arange(len(codes)) if ordered else np.lexsort((times, codes))
    if not ordered:
        codes, times = codes[order], times[order]
    repeats = np.flatnonzero((codes[1:] == codes[:-1]) & (times[1:] == times[:-1]))
    if not len(repeats):
        return
    # The earliest row that repeats one before it, and the first row it repeats.
    at = repeats[np.argmin(order[repeats + 1])]
    first = at
    while first > 0 and codes[first - 1] == codes[at] and times[first - 1] == times[at]:
        first -= 1
    raise DataFileError(
        f"{path}: rows {order[first] + 1} and {order[at + 1] + 1} are both a sample at "
        f"t_s {float(times[at])!r} of the same run; a timeline has one sample per run and time"
    )
