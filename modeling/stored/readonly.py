"""Read-only mode: with ``MEMPLAN_READ_ONLY`` set, reading results writes nothing, anywhere.

A dashboard shared with a team (README, "Sharing the dashboard") and
``memplan size`` then open the database read-only and only that:

* a missing database is an error naming it (`existing`), not a new file;
* an older database is refused with the command that migrates it
  (`core.database`), not migrated;
* the bundled results of the bundled runs are read from their files into memory
  (`modeling.stored.bundle.load_predictors` and its siblings), not installed
  into the database.
"""

from __future__ import annotations

import os
from pathlib import Path

from core.database import DB_ENV_VAR
from core.errors import StoreError

READ_ONLY_ENV_VAR = "MEMPLAN_READ_ONLY"
TRUE_VALUES = frozenset({"1", "true", "yes", "on"})


def read_only() -> bool:
    """Whether `READ_ONLY_ENV_VAR` asks for reading that never writes."""
    return os.environ.get(READ_ONLY_ENV_VAR, "").strip().lower() in TRUE_VALUES


def existing(path: Path) -> Path:
    """``path`` if a file is there; a `StoreError` saying what to do if not (nothing is created)."""
    path = Path(path)
    if not path.is_file():
        raise StoreError(
            f"database {path} does not exist, and {READ_ONLY_ENV_VAR} is set, so none is "
            f"created: point {DB_ENV_VAR} at an existing memplan database, or create this one "
            f"first without {READ_ONLY_ENV_VAR} (e.g. `memplan list --db {path}`)"
        )
    return path
