"""A run as one JSON record file, written where memplan's stack is not, read back on import.

A folder sweep (`profiling.folder_sweep`) runs on a GPU machine that has only the
child's imports (Python, torch, numpy, psutil, nvidia-ml-py: no DuckDB, no pandas,
no pyarrow) and writes each run as one file ``<NNN>-<run_id>.json`` of a folder::

    {"memplan_run_record": 1, "run": {<every runs column>}, "samples": [[t_s, rss_bytes], ...],
     "sha256": "<hex of the canonical JSON of run and samples>"}

`check_written` checks a record before it is written with what such a machine has (the
columns, the target's facts and figures: `core.targets`); `memplan import FOLDER`
(`read_folder`) checks every record in full, as any import's rows
(`core.datafiles.check_record`: types, plausibility), after its checksum: a record
changed after it was written is refused, naming the file, and nothing is imported.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from core import targets
from core.errors import DataFileError
from core.records import RUN_COLUMNS

FORMAT_KEY = "memplan_run_record"
FORMAT_VERSION = 1
SUFFIX = ".json"
# A record is one run and its timeline: far below this (a 30-minute run sampled every
# 0.1 s is 18,000 samples, about 0.5 MB).
MAX_RECORD_BYTES = 16 * 2**20


def checksum(run: Mapping[str, Any], samples: Sequence[Any]) -> str:
    """The SHA-256 of ``run`` and ``samples`` as canonical JSON (sorted keys, no spaces)."""
    text = json.dumps({"run": run, "samples": samples}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def check_written(run: Mapping[str, Any]) -> None:
    """What a record must hold before it is written: every runs column and its target's
    facts, and for an ``ok`` run its figures (`core.targets`); `DataFileError` otherwise."""
    columns = set(run)
    if columns != set(RUN_COLUMNS):
        odd = sorted(columns ^ set(RUN_COLUMNS))
        raise DataFileError(f"the record's columns are not the runs columns ({', '.join(odd)})")
    name = run[targets.TARGET_COLUMN]
    if name not in targets.TARGETS:
        raise DataFileError(f"memory_target {name!r} is not one of {', '.join(targets.TARGETS)}")
    target = targets.TARGETS[name]
    needed = [*target.facts, *(target.ok_needs if run["status"] == "ok" else ())]
    missing = [column for column in needed if run[column] is None]
    if missing:
        raise DataFileError(
            f"run {run['run_id']} ({target.label}, {run['status']}) lacks {', '.join(missing)}"
        )


def write_record(folder: Path, number: int, run: Mapping[str, Any], samples: Sequence[Any]) -> Path:
    """Check ``run``, write it with ``samples`` as record ``number`` of ``folder`` (atomically)."""
    check_written(run)
    body = {FORMAT_KEY: FORMAT_VERSION, "run": dict(run), "samples": [list(s) for s in samples]}
    body["sha256"] = checksum(body["run"], body["samples"])
    path = Path(folder) / f"{number:03d}-{run['run_id']}{SUFFIX}"
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(body))
    os.replace(partial, path)
    return path


def load(path: Path) -> tuple[dict[str, Any], list[Any]]:
    """The run and samples of record ``path``, its format and checksum checked (not its values)."""
    if path.stat().st_size > MAX_RECORD_BYTES:
        raise DataFileError(f"{path}: over {MAX_RECORD_BYTES // 2**20} MiB; not a run record")
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as error:
        raise DataFileError(f"{path}: not a JSON run record ({error})") from None
    if not isinstance(body, dict) or body.get(FORMAT_KEY) != FORMAT_VERSION:
        raise DataFileError(
            f"{path}: not a memplan run record ({FORMAT_KEY}: {FORMAT_VERSION} expected); "
            "a folder to import holds only what `python -m profiling.folder_sweep` wrote"
        )
    run, samples = body.get("run"), body.get("samples")
    if not isinstance(run, dict) or not isinstance(samples, list):
        raise DataFileError(f"{path}: a run record holds a run (an object) and samples (a list)")
    if body.get("sha256") != checksum(run, samples):
        raise DataFileError(
            f"{path}: its checksum does not match its run: the record was changed after it "
            "was written; nothing was imported (measure that point again)"
        )
    return run, samples


def record_paths(folder: Path) -> list[Path]:
    """The record files of ``folder``, in the order they were written; refused when none."""
    paths = sorted(Path(folder).glob(f"*{SUFFIX}"))
    if not paths:
        raise DataFileError(
            f"{folder}: no run record (*{SUFFIX}) in the folder; give the folder a "
            "folder sweep wrote (`python -m profiling.folder_sweep --out FOLDER ...`)"
        )
    return paths
