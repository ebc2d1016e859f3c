"""Export and import of runs, so measurements made on other machines can be pooled.

An export is a runs file and optionally a samples file, each CSV or Parquet by
its suffix, stamped with the schema version that wrote it; `core.datafiles`
defines the format, how versions are carried, and which older exports still
import (all of them: a schema-1 export's runs become ``unet3d`` runs). An import
is checked completely before anything is written and then stored in one
transaction: a file with any problem stores nothing, and the error names the
problem (column, row, value) and what would be right. The checks are of size
(`core.exportfile.MAX_FILE_BYTES`, MAX_ROWS), columns, types and plausibility
(`core.plausibility`: finite times, memory between 1 MiB and 64 TiB, an ``ok``
run with its peaks, one sample per run and time). GPU runs measured outside memplan
import from JSON lines (`core.datafiles.read_gpu_runs`) with the same checks.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from core import database, datafiles, device_records, exportfile
from core.datafiles import read_runs, read_samples
from core.errors import DataFileError
from core.exportfile import FORMATS
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS

__all__ = ["FORMATS", "export_runs", "import_runs", "read_runs", "read_samples"]


def export_runs(
    db_path: Path,
    runs_out: Path,
    samples_out: Path | None = None,
    *,
    sweep_id: str | None = None,
    workload: str | None = None,
) -> int:
    """Write runs (and their timelines) to CSV/Parquet files; returns the number of runs.

    Only runs of ``sweep_id`` and of ``workload`` when given. Each file is written under a temporary
    name and renamed when complete, so a failed export leaves no partial file.
    """
    runs_out = Path(runs_out)
    outputs = [(runs_out, exportfile.format_of(runs_out))]
    if samples_out is not None:
        samples_out = Path(samples_out)
        if samples_out.resolve() == runs_out.resolve():
            raise DataFileError(
                f"runs and samples would both be written to {runs_out}; give two different files"
            )
        outputs.append((samples_out, exportfile.format_of(samples_out)))

    chosen = {
        name: value
        for name, value in (("sweep_id", sweep_id), ("workload", workload))
        if value is not None
    }
    conditions = [f"{name} = ${index}" for index, name in enumerate(chosen, start=1)]
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    params = list(chosen.values())
    sources = [
        (RUN_COLUMNS, f"FROM runs {where} ORDER BY created_at, run_id"),
        (
            SAMPLE_COLUMNS,
            f"FROM samples WHERE run_id IN (SELECT run_id FROM runs {where}) ORDER BY run_id, t_s",
        ),
    ]
    temps: list[tuple[Path, Path]] = []
    try:
        # One read-only connection: the count and both files see the same snapshot.
        with database.connect(db_path, read_only=True) as con:
            count = con.execute(f"SELECT count(*) FROM runs {where}", params).fetchone()[0]
            for (out, suffix), (columns, source) in zip(outputs, sources, strict=False):
                out.parent.mkdir(parents=True, exist_ok=True)
                temp = out.with_name(f".{out.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
                temps.append((temp, out))
                datafiles.write(con, temp, suffix, columns, source, params)
        for temp, out in temps:
            os.replace(temp, out)
    finally:
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
    return int(count)


def import_runs(
    db_path: Path,
    runs_file: Path,
    samples_file: Path | None = None,
    *,
    created_at: str | None = None,
    alloc_conf: str | None = None,
) -> int:
    """Store the runs (and timelines) of an export; returns how many runs were stored.

    A ``.jsonl`` file holds GPU runs, one JSON object a line (`core.device_runs`), as an
    outside script measured them: ``created_at`` (ISO 8601) says when, if the file's name
    carries no date, and ``alloc_conf`` the PYTORCH_CUDA_ALLOC_CONF of lines that do not
    say theirs ("": the allocator's default). They have no timelines. A folder holds run
    records (`core.record_files`: what a folder sweep wrote), each with its timeline.
    All or nothing: every check runs before the first write, and the writes are
    one transaction. Raises DataFileError naming the first problem found.
    """
    database.check_writable(db_path, "an import")
    runs_file = Path(runs_file)
    if runs_file.is_dir():
        if samples_file is not None:
            raise DataFileError(f"{runs_file}: a folder of run records holds its timelines")
        runs, samples = datafiles.read_record_folder(runs_file)
        with database.transaction(db_path) as con:
            datafiles.insert_runs(con, runs, samples, source=runs_file, target=Path(db_path))
        return runs.num_rows
    gpu_lines = runs_file.suffix.lower() == device_records.SUFFIX
    if gpu_lines and samples_file is not None:
        raise DataFileError(f"{runs_file}: GPU runs have no timelines; import it without one")
    if gpu_lines:
        runs = datafiles.read_gpu_runs(runs_file, created_at, alloc_conf)
    else:
        runs = read_runs(runs_file)
    run_ids = runs.column("run_id").to_pylist()
    samples = read_samples(Path(samples_file), set(run_ids)) if samples_file is not None else None
    with database.transaction(db_path) as con:
        datafiles.insert_runs(con, runs, samples, source=runs_file, target=Path(db_path))
    return len(run_ids)
