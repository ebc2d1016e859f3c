"""Runs and timelines as data files: read, check and bring to the current schema; write; insert.

An export is a runs file (columns RUN_COLUMNS) and optionally a samples file
(columns SAMPLE_COLUMNS), each CSV or Parquet by its suffix. In CSV an empty field
is NULL and ``""`` is an empty string, so a CSV round trip is as exact as Parquet.
Reading checks a file completely and names the first problem (column, row,
value) and what would be right; rows are numbered from 1, not counting the CSV
header line. It checks, in order: the size (`core.exportfile`: at most
MAX_FILE_BYTES, so memory stays bounded: a file is read in batches, and what is
kept is typed), the version and the columns (`core.exportversion`), each value's
type (`core.filecolumns`), and whether the values could have been measured
(`core.plausibility`). `profiling.exchange` moves exports in and out of a
database file, `core.database` fills the repository's new database from the
bundled exports; both insert with `insert_runs` on a connection they opened.
GPU runs measured outside memplan, one JSON object a line (`core.device_runs`), are
read into the same rows by `read_gpu_runs` and checked the same way; so are the runs of a
folder of run records (`core.record_files`: a folder sweep's), by `read_record_folder`.

Schema versions
---------------
Every export says which database schema (`core.schema`) wrote it:

* Parquet: the file's key-value metadata ``memplan_schema_version`` (e.g. ``"2"``);
* CSV, which has no metadata: a last column ``schema_version``, the same number
  on every row.

A file without either (written before schema 2, such as the bundled
``data/reference_*.parquet``, or by hand, e.g. with pandas) is taken as the
newest version whose columns it has: a runs file without ``workload`` is schema
1. An older export is read as it was written and then brought to the current
schema: the columns later versions added get the value older rows have
(``workload``: ``'unet3d'``; a nullable column: NULL). A newer export is refused
whole, naming both versions: this memplan cannot know what its columns mean.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from core import device_records, device_runs, plausibility, record_files, schema, targets
from core.errors import DataFileError
from core.exportfile import MAX_ROWS, VERSION_METADATA_KEY, check_size, listed, open_export
from core.exportversion import VERSION_COLUMN, check_columns, version_of
from core.filecolumns import ColumnRule, convert_value, typed_table
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS

# --- writing ----------------------------------------------------------------------------


def write(
    con: duckdb.DuckDBPyConnection,
    target: Path,
    suffix: str,
    columns: Sequence[str],
    source_sql: str,
    params: Sequence[Any] = (),
) -> None:
    """Write ``SELECT columns source_sql`` to ``target`` as a ``suffix`` export of this schema.

    ``source_sql`` is the rest of the query (``FROM ... WHERE ... ORDER BY ...``);
    ``target`` may be a temporary name, so the format is given.
    """
    selected = ", ".join(columns)
    literal = str(target).replace("'", "''")
    if suffix == ".csv":
        query = f"SELECT {selected}, {schema.SCHEMA_VERSION} AS {VERSION_COLUMN} {source_sql}"
        options = "FORMAT csv, HEADER true"
    else:
        query = f"SELECT {selected} {source_sql}"
        options = (
            f"FORMAT parquet, KV_METADATA {{{VERSION_METADATA_KEY}: '{schema.SCHEMA_VERSION}'}}"
        )
    con.execute(f"COPY ({query}) TO '{literal}' ({options})", list(params))


# --- reading ----------------------------------------------------------------------------


def _typed_rows(
    path: Path,
    name: str,
    columns: tuple[str, ...],
    column_types: dict[str, type],
    nullable: frozenset[str],
    arrow_schema: pa.Schema,
) -> pa.Table:
    """An export of table ``name``, checked as of its version, brought to now, typed by column."""
    with open_export(path, name) as export:
        in_column = export.distinct(VERSION_COLUMN) if VERSION_COLUMN in export.names else set()
        version = version_of(path, name, export.names, export.tag, in_column)
        present = [column for column in export.names if column != VERSION_COLUMN]
        check_columns(path, present, schema.columns_as_of(name, columns, version), version)
        parts = [arrow_schema.empty_table()]
        first_row = 1
        for batch in export.batches(present):
            rows = schema.upgrade_export(name, pa.Table.from_batches([batch]), version)
            parts.append(
                typed_table(path, rows, column_types, nullable, export.from_text, first_row)
            )
            first_row += batch.num_rows
    return pa.concat_tables(parts)


def read_runs(path: Path) -> pa.Table:
    """A runs file of any schema up to this one, fully checked, as rows of today's ``runs``."""
    path = Path(path)
    table = _typed_rows(
        path,
        "runs",
        RUN_COLUMNS,
        schema.RUN_TYPES,
        schema.NULLABLE_RUN_COLUMNS,
        schema.RUNS_ARROW_SCHEMA,
    )
    plausibility.check_runs(path, {name: table.column(name).to_pylist() for name in RUN_COLUMNS})
    return table


def read_gpu_runs(
    path: Path, created_at: str | None = None, default_alloc_conf: str | None = None
) -> pa.Table:
    """A file of GPU runs, one JSON object a line (`core.device_runs`), as checked ``runs`` rows.

    Each line is read and typed by `core.device_runs` (a bad line: a `DataFileError` naming
    the line and the field), converted by `core.device_records`, then checked as any
    import's rows are (`core.plausibility`, row N being the Nth run). All or nothing.
    """
    path = Path(path)
    check_size(path, path.stat().st_size, "runs")
    texts = path.read_text(encoding="utf-8").splitlines()
    runs = device_runs.read_lines(path, texts, default_alloc_conf)
    if not runs:
        raise DataFileError(f"{path}: no GPU run in the file; give one JSON object a line")
    when = device_records.created_at_of(path, created_at)
    rows = [
        device_records.run_row(run, device_records.run_id_of(path, run, texts[run.line - 1]), when)
        for run in runs
    ]
    table = pa.Table.from_pylist(rows, schema=schema.RUNS_ARROW_SCHEMA)
    plausibility.check_runs(path, {name: table.column(name).to_pylist() for name in RUN_COLUMNS})
    return table


def read_record_folder(folder: Path) -> tuple[pa.Table, pa.Table]:
    """The runs and samples of a folder of run records (`core.record_files`), fully checked.

    Each record's checksum first (a record changed after it was written is refused), then
    its run and samples as `check_record` checks them, then the runs together as an
    import's rows. All or nothing: the first problem raises, naming the record's file.
    """
    rows, sample_rows = [], []
    for path in record_files.record_paths(folder):
        run, samples = record_files.load(path)
        typed, pairs = check_record(path, run, samples)
        rows.append(typed)
        sample_rows += [{"run_id": typed["run_id"], "t_s": t, "rss_bytes": r} for t, r in pairs]
    runs = pa.Table.from_pylist(rows, schema=schema.RUNS_ARROW_SCHEMA)
    plausibility.check_runs(folder, {name: runs.column(name).to_pylist() for name in RUN_COLUMNS})
    samples_table = pa.Table.from_pylist(sample_rows, schema=schema.SAMPLES_ARROW_SCHEMA)
    return runs, samples_table


def read_samples(path: Path, run_ids: set[str]) -> pa.Table:
    """A samples file, fully checked against the runs it belongs to."""
    path = Path(path)
    table = _typed_rows(
        path,
        "samples",
        SAMPLE_COLUMNS,
        schema.SAMPLE_TYPES,
        frozenset(),
        schema.SAMPLES_ARROW_SCHEMA,
    )
    plausibility.check_samples(path, table, sorted(run_ids))
    return table


def check_record(
    path: Path, row: Mapping[str, Any], samples: Sequence[Any]
) -> tuple[dict[str, Any], list[tuple[float, int]]]:
    """One run (column -> value) and its timeline ([t_s, rss_bytes] pairs), as an import checks.

    For the records that reach the database without a file import (a sweep's
    pending records, a Slurm job's result): every column typed as
    `core.filecolumns` types a file's, then `core.plausibility`'s checks, with the
    same messages (row 1 is the record). Returns the typed row and samples;
    `DataFileError` names ``path`` and the first problem.
    """
    if not isinstance(row, Mapping):
        raise DataFileError(f"{path}: the run is a {type(row).__name__}, not an object of columns")
    # A record written before schema 9 (a pending one kept across an upgrade) says no
    # target: every run then measured host RAM, as a migrated database's older runs did.
    row = {targets.TARGET_COLUMN: targets.HOST_RAM, **row}
    unknown = sorted(set(row) - set(RUN_COLUMNS))
    if unknown:
        raise DataFileError(
            f"{path}: {listed(unknown)} is not a column of runs; the columns are "
            f"{', '.join(RUN_COLUMNS)}"
        )
    typed = {
        name: convert_value(
            ColumnRule(path, name, kind, nullable=name in schema.NULLABLE_RUN_COLUMNS),
            row.get(name),
            row=1,
        )
        for name, kind in schema.RUN_TYPES.items()
    }
    plausibility.check_runs(path, {name: [typed[name]] for name in RUN_COLUMNS})
    if not isinstance(samples, list | tuple) or len(samples) > MAX_ROWS["samples"]:
        raise DataFileError(f"{path}: samples is not a list of [t_s, rss_bytes] pairs")
    pairs = []
    for number, pair in enumerate(samples, start=1):
        if not isinstance(pair, list | tuple) or len(pair) != 2:
            raise DataFileError(f"{path}: sample {number}: {pair!r} is not a [t_s, rss_bytes] pair")
        t_s = convert_value(ColumnRule(path, "t_s", float), pair[0], row=number)
        rss = convert_value(ColumnRule(path, "rss_bytes", int), pair[1], row=number)
        pairs.append((t_s, rss))
    table = pa.table(
        {
            "run_id": pa.array([typed["run_id"]] * len(pairs), pa.string()),
            "t_s": pa.array([t for t, _ in pairs], pa.float64()),
            "rss_bytes": pa.array([r for _, r in pairs], pa.int64()),
        }
    )
    plausibility.check_samples(path, table, [typed["run_id"]])
    return typed, pairs


# --- inserting --------------------------------------------------------------------------


def insert_runs(
    con: duckdb.DuckDBPyConnection,
    runs: pa.Table,
    samples: pa.Table | None,
    *,
    source: Path,
    target: Path,
) -> None:
    """Insert checked runs (and timelines) unless any run is stored already.

    Call it inside a transaction on ``con``, so no other writer slips the same
    id in between the check and the insert. ``source`` (the runs file) and
    ``target`` (the database) only name them in the error.
    """
    con.register("_import_ids", runs.select(["run_id"]))
    try:
        # Ignoring case, as `core.plausibility` compares the ids of one file.
        stored = [
            row[0]
            for row in con.execute(
                "SELECT run_id FROM runs WHERE lower(run_id) IN"
                " (SELECT lower(run_id) FROM _import_ids) ORDER BY run_id"
            ).fetchall()
        ]
    finally:
        con.unregister("_import_ids")
    if stored:
        cased = set(stored) - set(runs.column("run_id").to_pylist())
        case_note = " (run ids are compared ignoring case)" if cased else ""
        raise DataFileError(
            f"{source}: {len(stored)} run(s) already stored in {target} "
            f"({listed(stored)}); nothing was imported. Remove those rows from the file "
            f"to import the rest{case_note}"
        )
    schema.insert_table(con, "runs", runs)
    if samples is not None and samples.num_rows:
        schema.insert_table(con, "samples", samples)
