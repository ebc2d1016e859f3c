"""Runs and timelines as data files: read, check and bring to the current schema; write; insert.

An export is a runs file (columns RUN_COLUMNS) and optionally a samples file
(columns SAMPLE_COLUMNS), each CSV or Parquet by its suffix. In CSV an empty field
is NULL and ``""`` is an empty string, so a CSV round trip is as exact as Parquet.
Reading checks a file completely and names the first problem (column, row,
value) and what would be right; rows are numbered from 1, not counting the CSV
header line. It checks, in order: the size (at most MAX_FILE_BYTES, so memory
stays bounded: a file is read in batches, and what is kept is typed), the
version and the columns, each value's type (`core.filecolumns`), and whether the
values could have been measured (`core.plausibility`). `profiling.exchange`
moves exports in and out of a database file, `core.database` fills the
repository's new database from the bundled exports; both insert with
`insert_runs` on a connection they opened.

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

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core import plausibility, schema
from core.errors import DataFileError
from core.filecolumns import ColumnRule, convert_value, typed_table
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS
from core.units import GIB, MIB, format_bytes

FORMATS: tuple[str, ...] = (".csv", ".parquet")
# Parquet key-value metadata and CSV column that carry an export's schema version.
VERSION_METADATA_KEY = "memplan_schema_version"
VERSION_COLUMN = "schema_version"
# Every field as text so `core.filecolumns`, not the sniffer, decides types; a quoted ""
# stays an empty string while an empty field is NULL, as DuckDB's COPY writes them.
_READ_CSV = (
    "SELECT {columns} FROM read_csv($1, header = true, all_varchar = true, delim = ',',"
    " quote = '\"', escape = '\"', allow_quoted_nulls = false)"
)
# How many offending values a message lists before "...".
SHOWN = 5
# The largest export an import reads, by table, in bytes and in rows: far above any
# real sweep (a run is ~1 KB of CSV, a sample ~55 bytes of CSV or ~8 of Parquet), and
# low enough that checking one fits in memory (a samples file at the limits needs about
# 2.5 GiB; what is kept of it is typed: ~50 bytes a sample).
MAX_FILE_BYTES: dict[str, int] = {"runs": 64 * MIB, "samples": 1 * GIB}
MAX_ROWS: dict[str, int] = {"runs": 200_000, "samples": 20_000_000}
# Rows per batch read: the text of a batch is converted and dropped before the next.
BATCH_ROWS = 256 * 1024
_INT_TEXT = re.compile(r"\s*([+-]?\d+)(?:\.0*)?\s*")


def format_of(path: Path) -> str:
    """The export format of ``path`` by its suffix (``.csv`` or ``.parquet``)."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataFileError(
            f"{path}: unsupported file type {suffix or '(no suffix)'!r}; "
            f"use one of {', '.join(FORMATS)}"
        )
    return suffix


def listed(values: Sequence[Any]) -> str:
    shown = ", ".join(str(value) for value in values[:SHOWN])
    return shown + (", ..." if len(values) > SHOWN else "")


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


# --- reading, versions and type checking ------------------------------------------------


_IN_PARTS = (
    "; export and import it in parts, e.g. one sweep at a time (`memplan export --sweep ID`)"
)


def check_size(name: Path | str, size: int, table: str) -> None:
    """Refuse a ``table`` ("runs" or "samples") export of ``size`` bytes above its limit."""
    limit = MAX_FILE_BYTES[table]
    if size > limit:
        raise DataFileError(
            f"{name} is {format_bytes(size)} ({size:,} bytes), more than the "
            f"{format_bytes(limit)} a {table} file may have{_IN_PARTS}"
        )


def _check_rows(name: Path | str, rows: int, table: str) -> None:
    if rows > MAX_ROWS[table]:
        raise DataFileError(
            f"{name} holds more than {MAX_ROWS[table]:,} rows, the most a {table} file may "
            f"have{_IN_PARTS}"
        )


def _reason(error: BaseException) -> str:
    return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__


@contextlib.contextmanager
def _reading(path: Path, suffix: str) -> Iterator[None]:
    """Turn what a reader raises for a malformed file into a DataFileError naming it."""
    try:
        yield
    except (duckdb.Error, pa.ArrowException, OSError, UnicodeDecodeError) as error:
        raise DataFileError(
            f"cannot read {path} as {suffix[1:].upper()}: {_reason(error)}; "
            f"give a file written by memplan export (or the same columns in a {suffix})"
        ) from error


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class _Export:
    """One export file, read in batches of BATCH_ROWS rows so memory stays bounded.

    ``names`` are its columns, ``tag`` its Parquet version metadata, ``from_text``
    whether its values are text to parse (CSV).
    """

    def __init__(
        self, path: Path, suffix: str, con: duckdb.DuckDBPyConnection | None, table: str
    ) -> None:
        self.path, self.suffix, self._con, self.table = path, suffix, con, table
        self.from_text = con is not None
        self.tag: str | None = None
        if con is not None:
            self.names = con.sql(_READ_CSV.format(columns="*"), params=[str(path)]).columns
        else:
            self._parquet = pq.ParquetFile(path)
            arrow_schema = self._parquet.schema_arrow
            self.names = arrow_schema.names
            found = (arrow_schema.metadata or {}).get(VERSION_METADATA_KEY.encode())
            self.tag = None if found is None else found.decode(errors="replace")
            _check_rows(path, self._parquet.metadata.num_rows, table)

    def batches(self, columns: Sequence[str]) -> Iterator[pa.RecordBatch]:
        """The file's rows in batches; DataFileError past MAX_ROWS (CSV says only when read)."""
        rows = 0
        with _reading(self.path, self.suffix):
            if self._con is None:
                batches = self._parquet.iter_batches(batch_size=BATCH_ROWS, columns=list(columns))
            else:
                query = _READ_CSV.format(columns=", ".join(_quoted(name) for name in columns))
                relation = self._con.sql(query, params=[str(self.path)])
                batches = relation.to_arrow_reader(BATCH_ROWS)
            for batch in batches:
                rows += batch.num_rows
                _check_rows(self.path, rows, self.table)
                yield batch

    def distinct(self, column: str) -> set[Any]:
        """The different values of ``column`` (up to SHOWN + 1 of them)."""
        found: set[Any] = set()
        for batch in self.batches([column]):
            found.update(pc.unique(batch.column(0)).to_pylist())
            if len(found) > SHOWN:
                break
        return found


@contextlib.contextmanager
def _open_export(path: Path, table: str) -> Iterator[_Export]:
    suffix = format_of(path)
    if not path.is_file():
        raise DataFileError(f"{path} does not exist or is not a file; give an exported {suffix}")
    check_size(path, path.stat().st_size, table)
    with _reading(path, suffix):
        con = duckdb.connect() if suffix == ".csv" else None
    try:
        with _reading(path, suffix):
            export = _Export(path, suffix, con, table)
        yield export
    finally:
        if con is not None:
            con.close()


def _parse_version(path: Path, text: Any, where: str) -> int:
    match = _INT_TEXT.fullmatch(str(text))
    version = int(match.group(1)) if match else 0
    if version < 1:
        raise DataFileError(
            f"{path}: {where} {text!r} is not a schema version (a whole number from 1); "
            "give a file written by memplan export"
        )
    return version


def _version(path: Path, name: str, names: Sequence[str], tag: str | None, column: set) -> int:
    """The schema version of an export of ``name`` with columns ``names``; see the docstring.

    ``tag`` is its version metadata, ``column`` the values of its version column.
    """
    declared: int | None = None
    if tag is not None:
        declared = _parse_version(path, tag, f"metadata {VERSION_METADATA_KEY}")
    if len(column) > 1:
        raise DataFileError(
            f"{path}: column {VERSION_COLUMN} holds several versions "
            f"({listed(sorted(str(value) for value in column))}); an export has one"
        )
    if column:
        in_column = _parse_version(path, next(iter(column)), f"column {VERSION_COLUMN}:")
        if declared is not None and in_column != declared:
            raise DataFileError(
                f"{path}: column {VERSION_COLUMN} says schema version {in_column}, "
                f"its metadata {declared}; an export has one"
            )
        declared = in_column
    others = [column_name for column_name in names if column_name != VERSION_COLUMN]
    version = declared if declared is not None else schema.infer_version(name, others)
    if version > schema.SCHEMA_VERSION:
        raise DataFileError(
            f"{path} was exported with schema version {version}, newer than this memplan's "
            f"{schema.SCHEMA_VERSION}; upgrade memplan to import it"
        )
    return version


def export_version(path: Path, table: pa.Table, name: str, tag: str | None) -> tuple[int, pa.Table]:
    """The schema version of an export of table ``name``, and its rows without the version column.

    Refuses a version newer than this memplan's (see the module docstring).
    """
    values: set[Any] = set()
    if VERSION_COLUMN in table.column_names:
        values = set(table.column(VERSION_COLUMN).to_pylist())
        table = table.drop_columns([VERSION_COLUMN])
    return _version(path, name, table.column_names, tag, values), table


def _check_columns(path: Path, names: Sequence[str], expected: Sequence[str], version: int) -> None:
    missing = [name for name in expected if name not in names]
    extra = [name for name in names if name not in expected]
    problems = []
    if missing:
        problems.append(f"missing columns: {', '.join(missing)}")
    if extra:
        problems.append(f"extra columns: {', '.join(extra)}")
    if problems:
        which = "" if version == schema.SCHEMA_VERSION else f" (of schema version {version})"
        raise DataFileError(
            f"{path}: {'; '.join(problems)}. The file{which} needs exactly these columns: "
            f"{', '.join(expected)}"
        )


def _typed_rows(
    path: Path,
    name: str,
    columns: tuple[str, ...],
    column_types: dict[str, type],
    nullable: frozenset[str],
    arrow_schema: pa.Schema,
) -> pa.Table:
    """An export of table ``name``, checked as of its version, brought to now, typed by column."""
    with _open_export(path, name) as export:
        in_column = export.distinct(VERSION_COLUMN) if VERSION_COLUMN in export.names else set()
        version = _version(path, name, export.names, export.tag, in_column)
        present = [column for column in export.names if column != VERSION_COLUMN]
        _check_columns(path, present, schema.columns_as_of(name, columns, version), version)
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
        stored = [
            row[0]
            for row in con.execute(
                "SELECT run_id FROM runs WHERE run_id IN (SELECT run_id FROM _import_ids)"
                " ORDER BY run_id"
            ).fetchall()
        ]
    finally:
        con.unregister("_import_ids")
    if stored:
        raise DataFileError(
            f"{source}: {len(stored)} run(s) already stored in {target} "
            f"({listed(stored)}); nothing was imported. Remove those rows from the file "
            "to import the rest"
        )
    schema.insert_table(con, "runs", runs)
    if samples is not None and samples.num_rows:
        schema.insert_table(con, "samples", samples)
