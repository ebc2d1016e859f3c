"""Runs and timelines as data files: read, check and bring to the current schema; write; insert.

An export is a runs file (columns RUN_COLUMNS) and optionally a samples file
(columns SAMPLE_COLUMNS), each CSV or Parquet by its suffix. In CSV an empty field
is NULL and ``""`` is an empty string, so a CSV round trip is as exact as Parquet.
Reading checks a file completely and names the first problem (column, row,
value) and what would be right; rows are numbered from 1, not counting the CSV
header line. `profiling.exchange` moves exports in and out of a database file,
`core.store` fills a new default database from the bundled one; both insert with
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
import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from core import schema, workloads
from core.errors import ConfigError, DataFileError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, STATUSES

FORMATS: tuple[str, ...] = (".csv", ".parquet")
# Parquet key-value metadata and CSV column that carry an export's schema version.
VERSION_METADATA_KEY = "memplan_schema_version"
VERSION_COLUMN = "schema_version"
# Every field as text so this module, not the sniffer, decides types; a quoted ""
# stays an empty string while an empty field is NULL, as DuckDB's COPY writes them.
_READ_CSV = (
    "SELECT * FROM read_csv($1, header = true, all_varchar = true, delim = ',',"
    " quote = '\"', escape = '\"', allow_quoted_nulls = false)"
)
# How many offending values a message lists before "...".
SHOWN = 5
JSON_LIST_COLUMNS: dict[str, type] = {"step_times_s": float, "step_hwm_bytes": int}

# pandas writes a whole-number column with gaps as "5.0", so a zero fraction is accepted.
_INT_TEXT = re.compile(r"\s*([+-]?\d+)(?:\.0*)?\s*")
_TRUE_FALSE = {"true": True, "false": False}
_TYPE_WORDS: dict[type, str] = {
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
}


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


def _read_table(path: Path) -> tuple[pa.Table, bool, str | None]:
    """The file's rows as an Arrow table, whether they are text to parse (CSV), its version tag."""
    suffix = format_of(path)
    if not path.is_file():
        raise DataFileError(f"{path} does not exist or is not a file; give an exported {suffix}")
    try:
        if suffix == ".parquet":
            table = pq.read_table(path)
            metadata = table.schema.metadata or {}
            tag = metadata.get(VERSION_METADATA_KEY.encode())
            return table, False, None if tag is None else tag.decode(errors="replace")
        with contextlib.closing(duckdb.connect()) as con:
            return con.sql(_READ_CSV, params=[str(path)]).to_arrow_table(), True, None
    except (duckdb.Error, pa.ArrowException, OSError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataFileError(
            f"cannot read {path} as {suffix[1:].upper()}: {reason}; "
            f"give a file written by memplan export (or the same columns in a {suffix})"
        ) from error


def _parse_version(path: Path, text: Any, where: str) -> int:
    match = _INT_TEXT.fullmatch(str(text))
    version = int(match.group(1)) if match else 0
    if version < 1:
        raise DataFileError(
            f"{path}: {where} {text!r} is not a schema version (a whole number from 1); "
            "give a file written by memplan export"
        )
    return version


def export_version(path: Path, table: pa.Table, name: str, tag: str | None) -> tuple[int, pa.Table]:
    """The schema version of an export of table ``name``, and its rows without the version column.

    Refuses a version newer than this memplan's (see the module docstring).
    """
    declared: int | None = None
    if tag is not None:
        declared = _parse_version(path, tag, f"metadata {VERSION_METADATA_KEY}")
    if VERSION_COLUMN in table.column_names:
        values = set(table.column(VERSION_COLUMN).to_pylist())
        if len(values) > 1:
            raise DataFileError(
                f"{path}: column {VERSION_COLUMN} holds several versions "
                f"({listed(sorted(str(value) for value in values))}); an export has one"
            )
        if values:
            in_column = _parse_version(path, values.pop(), f"column {VERSION_COLUMN}:")
            if declared is not None and in_column != declared:
                raise DataFileError(
                    f"{path}: column {VERSION_COLUMN} says schema version {in_column}, "
                    f"its metadata {declared}; an export has one"
                )
            declared = in_column
        table = table.drop_columns([VERSION_COLUMN])
    version = declared if declared is not None else schema.infer_version(name, table.column_names)
    if version > schema.SCHEMA_VERSION:
        raise DataFileError(
            f"{path} was exported with schema version {version}, newer than this memplan's "
            f"{schema.SCHEMA_VERSION}; upgrade memplan to import it"
        )
    return version, table


def _check_columns(path: Path, table: pa.Table, expected: Sequence[str], version: int) -> None:
    names = table.column_names
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


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(value)


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    # Parquet written by pandas stores a whole-number column with gaps as floats.
    if isinstance(value, float) and value.is_integer():
        return int(value)
    match = _INT_TEXT.fullmatch(value) if isinstance(value, str) else None
    if match:
        return int(match.group(1))
    raise ValueError(value)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return float(value)
    raise ValueError(value)


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE_FALSE:
        return _TRUE_FALSE[value.strip().lower()]
    raise ValueError(value)


_CONVERTERS: dict[type, Callable[[Any], Any]] = {
    str: _to_str,
    int: _to_int,
    float: _to_float,
    bool: _to_bool,
}


def _typed_columns(
    path: Path,
    table: pa.Table,
    column_types: dict[str, type],
    nullable: frozenset[str],
    from_text: bool,
) -> dict[str, list[Any]]:
    """Each column converted to its Python type; the first bad value is named with its row."""
    columns: dict[str, list[Any]] = {}
    for name, kind in column_types.items():
        convert = _CONVERTERS[kind]
        # CSV cannot tell an empty string from a missing one; for text that must be
        # present, empty is the only sensible reading.
        empty: Any = "" if from_text and kind is str and name not in nullable else None
        converted: list[Any] = []
        for row, value in enumerate(table.column(name).to_pylist(), start=1):
            if value is None:
                if empty is None and name not in nullable:
                    raise DataFileError(
                        f"{path}: row {row}: {name} is empty; it needs {_TYPE_WORDS[kind]}"
                    )
                converted.append(empty)
                continue
            try:
                converted.append(convert(value))
            except ValueError:
                raise DataFileError(
                    f"{path}: column {name}, row {row}: {value!r} is not {_TYPE_WORDS[kind]}"
                ) from None
        columns[name] = converted
    return columns


# --- value checks -----------------------------------------------------------------------


def _check_not_negative(path: Path, columns: dict[str, list[Any]], names: Sequence[str]) -> None:
    for name in names:
        for row, value in enumerate(columns[name], start=1):
            if value is not None and value < 0:
                raise DataFileError(
                    f"{path}: column {name}, row {row}: {value!r} is negative; "
                    "memory and times must be 0 or more"
                )


def _check_json_lists(path: Path, columns: dict[str, list[Any]]) -> None:
    for name, kind in JSON_LIST_COLUMNS.items():
        for row, text in enumerate(columns[name], start=1):
            try:
                items = json.loads(text)
            except ValueError:
                items = None
            allowed = (int, float) if kind is float else (int,)
            good = isinstance(items, list) and all(
                isinstance(item, allowed) and not isinstance(item, bool) and item >= 0
                for item in items
            )
            if not good:
                raise DataFileError(
                    f"{path}: column {name}, row {row}: {text!r} is not a JSON list of "
                    f"non-negative {'numbers' if kind is float else 'whole numbers'}, "
                    "e.g. [0.5, 0.42] or []"
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
        empty = [column for column in used if values[column] is None]
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
        except ConfigError as error:
            raise DataFileError(
                f"{path}: row {row} (run {run_id}) is not a valid workload: {error}"
            ) from None


def _check_runs(path: Path, columns: dict[str, list[Any]]) -> None:
    for row, status in enumerate(columns["status"], start=1):
        if status not in STATUSES:
            raise DataFileError(
                f"{path}: column status, row {row}: {status!r} is not one of {', '.join(STATUSES)}"
            )
    measured = [
        name
        for name in RUN_COLUMNS
        if schema.RUN_TYPES[name] in (int, float) and name.endswith(("_bytes", "_s"))
    ]
    _check_not_negative(path, columns, measured)
    _check_json_lists(path, columns)
    _check_configs(path, columns)
    first_row: dict[str, int] = {}
    for row, run_id in enumerate(columns["run_id"], start=1):
        if not run_id.strip():
            raise DataFileError(f"{path}: row {row}: run_id is empty; every run needs an id")
        if run_id in first_row:
            raise DataFileError(
                f"{path}: run_id {run_id!r} appears twice (rows {first_row[run_id]} and {row}); "
                "each run must appear once"
            )
        first_row[run_id] = row


def _check_samples(path: Path, columns: dict[str, list[Any]], run_ids: set[str]) -> None:
    _check_not_negative(path, columns, ("t_s", "rss_bytes"))
    for row, run_id in enumerate(columns["run_id"], start=1):
        if run_id not in run_ids:
            raise DataFileError(
                f"{path}: row {row}: run_id {run_id!r} is not among the runs being imported; "
                "import each timeline together with its run"
            )


def _current_rows(path: Path, name: str, columns: tuple[str, ...]) -> tuple[pa.Table, bool]:
    """An export of table ``name``, its columns checked as of its version, then brought to now."""
    table, from_text, tag = _read_table(path)
    version, table = export_version(path, table, name, tag)
    _check_columns(path, table, schema.columns_as_of(name, columns, version), version)
    return schema.upgrade_export(name, table, version), from_text


def read_runs(path: Path) -> pa.Table:
    """A runs file of any schema up to this one, fully checked, as rows of today's ``runs``."""
    path = Path(path)
    table, from_text = _current_rows(path, "runs", RUN_COLUMNS)
    columns = _typed_columns(path, table, schema.RUN_TYPES, schema.NULLABLE_RUN_COLUMNS, from_text)
    _check_runs(path, columns)
    return pa.table(columns, schema=schema.RUNS_ARROW_SCHEMA)


def read_samples(path: Path, run_ids: set[str]) -> pa.Table:
    """A samples file, fully checked against the runs it belongs to."""
    path = Path(path)
    table, from_text = _current_rows(path, "samples", SAMPLE_COLUMNS)
    columns = _typed_columns(path, table, schema.SAMPLE_TYPES, frozenset(), from_text)
    _check_samples(path, columns, run_ids)
    return pa.table(columns, schema=schema.SAMPLES_ARROW_SCHEMA)


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
