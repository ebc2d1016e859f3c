"""The GPU runs a fresh default database starts with, beside the CPU exports.

`core.database` seeds a new default database with the bundled CPU exports
(``BUNDLED_EXPORTS``) and, through this module, with the bundled GPU runs: files of
JSON lines (`core.device_runs`) read by the same import as ``memplan import
FILE.jsonl`` (`core.datafiles.read_gpu_runs`), so every line is checked as an
imported one is. data/REFERENCE.md says where and how they were measured.
"""

from __future__ import annotations

from pathlib import Path

import duckdb

from core import datafiles

DATA_GPU_DIR = Path(__file__).resolve().parent.parent / "data" / "gpu"
# (file, the PYTORCH_CUDA_ALLOC_CONF its lines were measured with when they do not say):
# the H200 lines were measured by the shared folder's gpu/measure.py, which sets no allocator
# setting, so with the allocator's default ("").
BUNDLED_GPU_RUNS: tuple[tuple[Path, str], ...] = (
    (DATA_GPU_DIR / "h200-torch-2026-11-28.jsonl", ""),
)


def insert_bundled_gpu_runs(con: duckdb.DuckDBPyConnection, target: Path) -> int:
    """Insert every bundled GPU file present on disk through ``con``; how many runs."""
    added = 0
    for path, alloc_conf in BUNDLED_GPU_RUNS:
        if not path.exists():
            continue
        runs = datafiles.read_gpu_runs(path, default_alloc_conf=alloc_conf)
        datafiles.insert_runs(con, runs, None, source=path, target=target)
        added += runs.num_rows
    return added
