"""``--json``: an answer or a listing as JSON, the same keys every time.

Sizes are in bytes under keys ending in ``_bytes``; a missing or infinite number
is ``null`` (JSON has no NaN or Infinity); tuples are lists, paths strings.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """``value`` as what `json.dumps` takes: dicts, lists, str, int, float, bool and None."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, str | int | bool):
        return value
    if isinstance(value, Path):
        return str(value)
    if value is pd.NaT or (not isinstance(value, list) and pd.isna(value)):
        return None
    return str(value)


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts, its columns as keys, in its order."""
    return [plain(row) for row in frame.to_dict("records")]


def dumps(value: Any) -> str:
    return json.dumps(plain(value), indent=2, allow_nan=False)


def emit(value: Any) -> int:
    """Print ``value`` as JSON on stdout; the exit code of a listing or answer printed."""
    print(dumps(value))
    return 0
