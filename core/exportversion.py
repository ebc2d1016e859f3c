"""Which schema version an export was written with, and whether this memplan can read it.

An export says its version in Parquet metadata (`core.exportfile.VERSION_METADATA_KEY`)
or, in CSV, in a last column VERSION_COLUMN holding the same number on every row.
One that says neither is taken as the newest version whose columns it has
(`core.schema.infer_version`). A version newer than this memplan's is refused,
naming both (`core.datafiles` describes the whole format).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from core import schema
from core.errors import DataFileError
from core.exportfile import VERSION_METADATA_KEY, listed

# The CSV column that carries an export's schema version.
VERSION_COLUMN = "schema_version"
_INT_TEXT = re.compile(r"\s*([+-]?\d+)(?:\.0*)?\s*")


def _parse_version(path: Path, text: Any, where: str) -> int:
    match = _INT_TEXT.fullmatch(str(text))
    version = int(match.group(1)) if match else 0
    if version < 1:
        raise DataFileError(
            f"{path}: {where} {text!r} is not a schema version (a whole number from 1); "
            "give a file written by memplan export"
        )
    return version


def _declared(path: Path, tag: str | None, column: set) -> int | None:
    """The version the metadata ``tag`` and the version column's values agree on, if any."""
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
    return declared


def version_of(path: Path, name: str, names: Sequence[str], tag: str | None, column: set) -> int:
    """The schema version of an export of table ``name`` with columns ``names``.

    ``tag`` is its version metadata, ``column`` the values of its version column.
    """
    declared = _declared(path, tag, column)
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
    return version_of(path, name, table.column_names, tag, values), table


def check_columns(path: Path, names: Sequence[str], expected: Sequence[str], version: int) -> None:
    """Refuse an export of ``version`` whose columns ``names`` are not the ``expected`` ones."""
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
