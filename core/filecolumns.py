"""An export's columns as typed Arrow arrays: every value converted, or the first bad one named.

`core.datafiles` reads an export in batches and hands each batch here with the
Python type each column needs (`core.schema.RUN_TYPES`, `SAMPLE_TYPES`). A
column Arrow can cast exactly is cast whole (the fast path, which keeps a
timeline of millions of samples cheap); any other is converted value by value
by the rules below, which also name the first value that is not of its type:

* text: only text; in a CSV an empty field of a column that may not be NULL is
  the empty string (CSV cannot tell them apart);
* whole numbers: integers, floats with no fraction and text such as ``"5"`` or
  ``"5.0"`` (pandas writes a whole-number column with gaps as floats), within
  BIGINT's range (-2^63 to 2^63 - 1); never true/false;
* numbers: integers, floats and text Python's ``float`` reads; never true/false;
* true or false: booleans and the text ``true``/``false`` in any case.

Rows are numbered from 1, not counting a CSV header line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from core.errors import DataFileError

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
ARROW_TYPES: dict[type, pa.DataType] = {
    str: pa.string(),
    int: pa.int64(),
    float: pa.float64(),
    bool: pa.bool_(),
}
TYPE_WORDS: dict[type, str] = {
    str: "text",
    int: "a whole number",
    float: "a number",
    bool: "true or false",
}
# pandas writes a whole-number column with gaps as "5.0", so a zero fraction is accepted.
_INT_TEXT = re.compile(r"\s*([+-]?\d+)(?:\.0*)?\s*")
_TRUE_FALSE = {"true": True, "false": False}


class _OutOfRange(ValueError):
    """A whole number outside BIGINT's range."""


def _to_str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise ValueError(value)


def _in_range(number: int) -> int:
    if not INT64_MIN <= number <= INT64_MAX:
        raise _OutOfRange(number)
    return number


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return _in_range(value)
    # Parquet written by pandas stores a whole-number column with gaps as floats.
    if isinstance(value, float) and value.is_integer():
        return _in_range(int(value))
    match = _INT_TEXT.fullmatch(value) if isinstance(value, str) else None
    if match:
        return _in_range(int(match.group(1)))
    raise ValueError(value)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int | float | str):
        try:
            return float(value)
        except OverflowError:  # an int beyond any float: not a number memplan can store
            raise _OutOfRange(value) from None
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


def _cast_whole(column: pa.Array, kind: type) -> pa.Array | None:
    """``column`` cast to ``kind`` by Arrow when that is exact; None to convert value by value."""
    source = column.type
    if pa.types.is_null(source):
        return pa.nulls(len(column), ARROW_TYPES[kind])
    if kind is str and not (pa.types.is_string(source) or pa.types.is_large_string(source)):
        return None
    if kind is bool and not pa.types.is_boolean(source):
        return None
    if kind in (int, float) and (pa.types.is_boolean(source) or pa.types.is_dictionary(source)):
        return None
    try:
        # A safe cast refuses a fraction, an overflow and text it cannot parse exactly;
        # those go value by value, which accepts what it should and names what it must not.
        return pc.cast(column, ARROW_TYPES[kind], safe=True)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


@dataclass(frozen=True)
class ColumnRule:
    """What one column's values must be, and the file they come from (for the messages).

    ``empty`` is what a missing value reads as where that is the only sensible
    reading (text that must be present, from a CSV); None: a missing value is
    NULL, refused unless ``nullable``.
    """

    path: Path
    name: str
    kind: type
    nullable: bool = False
    empty: Any = None


def convert_value(rule: ColumnRule, value: Any, row: int) -> Any:
    """One value of ``rule``'s column as its kind; DataFileError naming the row if it is not one."""
    path, name, kind = rule.path, rule.name, rule.kind
    if value is None:
        if rule.empty is None and not rule.nullable:
            raise DataFileError(f"{path}: row {row}: {name} is empty; it needs {TYPE_WORDS[kind]}")
        return rule.empty
    try:
        return _CONVERTERS[kind](value)
    except _OutOfRange:
        raise DataFileError(
            f"{path}: column {name}, row {row}: {value!r} is out of range; {name} takes "
            "whole numbers from -2^63 to 2^63 - 1"
            if kind is int
            else f"{path}: column {name}, row {row}: {value!r} is too large to be a number"
        ) from None
    except (ValueError, TypeError):
        raise DataFileError(
            f"{path}: column {name}, row {row}: {value!r} is not {TYPE_WORDS[kind]}"
        ) from None


def _convert_values(rule: ColumnRule, column: pa.Array, first_row: int) -> pa.Array:
    converted = [
        convert_value(rule, value, row)
        for row, value in enumerate(column.to_pylist(), start=first_row)
    ]
    return pa.array(converted, ARROW_TYPES[rule.kind])


def first_true(mask: pa.Array | pa.ChunkedArray) -> int | None:
    """The index of the first true value of a boolean array, or None."""
    found = pc.index(mask, True).as_py()
    return None if found < 0 else found


def typed_column(
    rule: ColumnRule, column: pa.Array | pa.ChunkedArray, first_row: int = 1
) -> pa.Array:
    """``column`` as an Arrow array of ``rule``'s kind; DataFileError naming the first bad value."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    cast = _cast_whole(column, rule.kind)
    if cast is None:
        return _convert_values(rule, column, first_row)
    if cast.null_count and not rule.nullable:
        if rule.empty is not None:
            return pc.fill_null(cast, rule.empty)
        row = first_true(pc.is_null(cast))
        assert row is not None
        raise DataFileError(
            f"{rule.path}: row {first_row + row}: {rule.name} is empty; "
            f"it needs {TYPE_WORDS[rule.kind]}"
        )
    return cast


def _rule(path: Path, name: str, kind: type, nullable: bool, from_text: bool) -> ColumnRule:
    # CSV cannot tell an empty string from a missing one; for text that must be
    # present, empty is the only sensible reading.
    empty = "" if from_text and kind is str and not nullable else None
    return ColumnRule(path, name, kind, nullable=nullable, empty=empty)


def typed_table(
    path: Path,
    table: pa.Table,
    column_types: Mapping[str, type],
    nullable: frozenset[str],
    from_text: bool,
    first_row: int = 1,
) -> pa.Table:
    """Every column of ``column_types`` converted (`typed_column`), in that order."""
    arrays = [
        typed_column(
            _rule(path, name, kind, name in nullable, from_text), table.column(name), first_row
        )
        for name, kind in column_types.items()
    ]
    fields = [pa.field(name, ARROW_TYPES[kind]) for name, kind in column_types.items()]
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
