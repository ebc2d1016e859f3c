"""One export file opened for reading: its format, its size and row limits, its rows in batches.

`core.datafiles` reads runs and samples exports through `open_export`; a file
is refused before it is read when it is larger than MAX_FILE_BYTES, when a Parquet
file's metadata says it decompresses to more than MAX_DECOMPRESSED_BYTES or a
column to more than its rows could hold at `core.plausibility`'s text limits (a
few KB of zstd can hold a 300 MB message), and while it is read once it holds
more than MAX_ROWS rows, so memory stays bounded. What
a reader raises for a malformed file becomes a `DataFileError` naming the file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from core.errors import DataFileError
from core.plausibility import text_limit
from core.units import GIB, MIB, format_bytes

FORMATS: tuple[str, ...] = (".csv", ".parquet")
# Parquet key-value metadata that carries an export's schema version (`core.exportversion`).
VERSION_METADATA_KEY = "memplan_schema_version"
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
# What a Parquet export may decompress to: four times the file limit.
MAX_DECOMPRESSED_BYTES: dict[str, int] = {name: 4 * size for name, size in MAX_FILE_BYTES.items()}
# A value's bytes besides its text in a Parquet page (a length, a level), and a column's
# besides its values (page headers, statistics), generously.
_VALUE_OVERHEAD_BYTES = 16
_COLUMN_OVERHEAD_BYTES = 1 * MIB
# Rows per batch read: the text of a batch is converted and dropped before the next.
BATCH_ROWS = 256 * 1024
_IN_PARTS = (
    "; export and import it in parts, e.g. one sweep at a time (`memplan export --sweep ID`)"
)


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
    """The first SHOWN of ``values`` for a message, then "..." if there are more."""
    shown = ", ".join(str(value) for value in values[:SHOWN])
    return shown + (", ..." if len(values) > SHOWN else "")


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


def check_decompressed(path: Path, metadata: pq.FileMetaData, table: str) -> None:
    """Refuse a Parquet ``table`` export whose metadata says it decompresses to too much.

    A column larger than its rows could be at the column's text limit (4 bytes a
    character) holds an over-long value: refused here, before a page is read.
    """
    sizes: dict[str, int] = {}
    text: set[str] = set()
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        for index in range(row_group.num_columns):
            chunk = row_group.column(index)
            name = chunk.path_in_schema
            sizes[name] = sizes.get(name, 0) + chunk.total_uncompressed_size
            if chunk.physical_type == "BYTE_ARRAY":
                text.add(name)
    rows = metadata.num_rows
    for name, size in sizes.items():
        per_value = (4 * text_limit(name) if name in text else 8) + _VALUE_OVERHEAD_BYTES
        if size > rows * per_value + metadata.num_row_groups * _COLUMN_OVERHEAD_BYTES:
            raise DataFileError(
                f"{path}: column {name} decompresses to {format_bytes(size)} ({size:,} bytes), "
                f"more than {rows:,} row(s) can hold; a {name} may have at most "
                f"{text_limit(name):,} characters"
            )
    total, limit = sum(sizes.values()), MAX_DECOMPRESSED_BYTES[table]
    if total > limit:
        raise DataFileError(
            f"{path} decompresses to {format_bytes(total)} ({total:,} bytes), more than the "
            f"{format_bytes(limit)} a {table} file may{_IN_PARTS}"
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


class ExportFile:
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
            check_decompressed(path, self._parquet.metadata, table)

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
def open_export(path: Path, table: str) -> Iterator[ExportFile]:
    """The ``table`` ("runs" or "samples") export at ``path``, checked to exist and fit."""
    suffix = format_of(path)
    if not path.is_file():
        raise DataFileError(f"{path} does not exist or is not a file; give an exported {suffix}")
    check_size(path, path.stat().st_size, table)
    with _reading(path, suffix):
        con = duckdb.connect() if suffix == ".csv" else None
    try:
        with _reading(path, suffix):
            export = ExportFile(path, suffix, con, table)
        yield export
    finally:
        if con is not None:
            con.close()
