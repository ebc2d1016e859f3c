"""Export and import of runs, so measurements made on other machines can be pooled.

An export is a runs file (columns RUN_COLUMNS) and optionally a samples file
(columns SAMPLE_COLUMNS), each CSV or Parquet by its suffix. In CSV an empty field
is NULL and ``""`` is an empty string, so a CSV round trip is as exact as Parquet.
An import is checked completely before anything is written and then stored in one
transaction: a file with any problem stores nothing, and the error names the
problem (column, row, value) and what would be right. Rows are numbered from 1,
not counting the CSV header line.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from core import store
from core.errors import ConfigError, DataFileError
from core.records import RUN_COLUMNS, SAMPLE_COLUMNS, STATUSES
from core.workloads.unet3d import UNetConfig

FORMATS: tuple[str, ...] = (".csv", ".parquet")
_COPY_OPTIONS = {".csv": "FORMAT csv, HEADER true", ".parquet": "FORMAT parquet"}
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


def _format_of(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DataFileError(
            f"{path}: unsupported file type {suffix or '(no suffix)'!r}; "
            f"use one of {', '.join(FORMATS)}"
        )
    return suffix


def _listed(values: Sequence[Any]) -> str:
    shown = ", ".join(str(value) for value in values[:SHOWN])
    return shown + (", ..." if len(values) > SHOWN else "")


# --- export -----------------------------------------------------------------------------


def export_runs(
    db_path: Path,
    runs_out: Path,
    samples_out: Path | None = None,
    *,
    sweep_id: str | None = None,
) -> int:
    """Write runs (and their timelines) to CSV/Parquet files; returns the number of runs.

    Only runs of ``sweep_id`` when given. Each file is written under a temporary
    name and renamed when complete, so a failed export leaves no partial file.
    """
    runs_out = Path(runs_out)
    outputs = [(runs_out, _format_of(runs_out))]
    if samples_out is not None:
        samples_out = Path(samples_out)
        if samples_out.resolve() == runs_out.resolve():
            raise DataFileError(
                f"runs and samples would both be written to {runs_out}; give two different files"
            )
        outputs.append((samples_out, _format_of(samples_out)))

    where = "WHERE sweep_id = $1" if sweep_id is not None else ""
    params = [sweep_id] if sweep_id is not None else []
    queries = [
        f"SELECT {', '.join(RUN_COLUMNS)} FROM runs {where} ORDER BY created_at, run_id",
        f"SELECT {', '.join(SAMPLE_COLUMNS)} FROM samples"
        f" WHERE run_id IN (SELECT run_id FROM runs {where}) ORDER BY run_id, t_s",
    ]
    temps: list[tuple[Path, Path]] = []
    try:
        # One read-only connection: the count and both files see the same snapshot.
        with store.connect(db_path, read_only=True) as con:
            count = con.execute(f"SELECT count(*) FROM runs {where}", params).fetchone()[0]
            for (out, suffix), query in zip(outputs, queries, strict=False):
                out.parent.mkdir(parents=True, exist_ok=True)
                temp = out.with_name(f".{out.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp")
                temps.append((temp, out))
                literal = str(temp).replace("'", "''")
                con.execute(f"COPY ({query}) TO '{literal}' ({_COPY_OPTIONS[suffix]})", params)
        for temp, out in temps:
            os.replace(temp, out)
    finally:
        for temp, _ in temps:
            temp.unlink(missing_ok=True)
    return int(count)


# --- reading and type checking ----------------------------------------------------------


def _read_table(path: Path) -> tuple[pa.Table, bool]:
    """The file's rows as an Arrow table, and whether they are text to parse (CSV)."""
    suffix = _format_of(path)
    if not path.is_file():
        raise DataFileError(f"{path} does not exist or is not a file; give an exported {suffix}")
    try:
        if suffix == ".parquet":
            return pq.read_table(path), False
        with contextlib.closing(duckdb.connect()) as con:
            return con.sql(_READ_CSV, params=[str(path)]).to_arrow_table(), True
    except (duckdb.Error, pa.ArrowException, OSError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise DataFileError(
            f"cannot read {path} as {suffix[1:].upper()}: {reason}; "
            f"give a file written by memplan export (or the same columns in a {suffix})"
        ) from error


def _check_columns(path: Path, table: pa.Table, expected: Sequence[str]) -> None:
    names = table.column_names
    missing = [name for name in expected if name not in names]
    extra = [name for name in names if name not in expected]
    problems = []
    if missing:
        problems.append(f"missing columns: {', '.join(missing)}")
    if extra:
        problems.append(f"extra columns: {', '.join(extra)}")
    if problems:
        raise DataFileError(
            f"{path}: {'; '.join(problems)}. The file needs exactly these columns: "
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
    for index, run_id in enumerate(columns["run_id"]):
        values = {name: columns[name][index] for name in store.POINT_COLUMNS}
        try:
            UNetConfig(
                image_shape=(values["depth"], values["height"], values["width"]),
                batch_size=values["batch_size"],
                base_filters=values["base_filters"],
                levels=values["levels"],
                in_channels=values["in_channels"],
                classes=values["classes"],
                precision=values["precision"],
                upsampling=values["upsampling"],
            )
        except ConfigError as error:
            raise DataFileError(
                f"{path}: row {index + 1} (run {run_id}) is not a valid workload: {error}"
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
        if store.RUN_TYPES[name] in (int, float) and name.endswith(("_bytes", "_s"))
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


# --- import -----------------------------------------------------------------------------


def read_runs(path: Path) -> pa.Table:
    """A runs file, fully checked, as an Arrow table with the ``runs`` column types."""
    path = Path(path)
    table, from_text = _read_table(path)
    _check_columns(path, table, RUN_COLUMNS)
    columns = _typed_columns(path, table, store.RUN_TYPES, store.NULLABLE_RUN_COLUMNS, from_text)
    _check_runs(path, columns)
    return pa.table(columns, schema=store.RUNS_ARROW_SCHEMA)


def read_samples(path: Path, run_ids: set[str]) -> pa.Table:
    """A samples file, fully checked against the runs it belongs to."""
    path = Path(path)
    table, from_text = _read_table(path)
    _check_columns(path, table, SAMPLE_COLUMNS)
    columns = _typed_columns(path, table, store.SAMPLE_TYPES, frozenset(), from_text)
    _check_samples(path, columns, run_ids)
    return pa.table(columns, schema=store.SAMPLES_ARROW_SCHEMA)


def import_runs(db_path: Path, runs_file: Path, samples_file: Path | None = None) -> int:
    """Store the runs (and timelines) of an export; returns how many runs were stored.

    All or nothing: every check runs before the first write, and the writes are
    one transaction. Raises DataFileError naming the first problem found.
    """
    runs = read_runs(Path(runs_file))
    run_ids = runs.column("run_id").to_pylist()
    samples = read_samples(Path(samples_file), set(run_ids)) if samples_file is not None else None
    with store.transaction(db_path) as con:
        # Checked inside the transaction so no other writer can slip the same id in.
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
                f"{runs_file}: {len(stored)} run(s) already stored in {db_path} "
                f"({_listed(stored)}); nothing was imported. Remove those rows from the file "
                "to import the rest"
            )
        store.insert_table(con, "runs", runs)
        if samples is not None and samples.num_rows:
            store.insert_table(con, "samples", samples)
    return len(run_ids)
