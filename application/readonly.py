"""Read-only mode: with ``MEMPLAN_READ_ONLY`` set, reading results writes nothing, anywhere.

A dashboard shared with a team (docs/dashboard.md, "Sharing the dashboard") and
``memplan size`` then open the database read-only and only that:

* a missing database is an error naming it (`existing`), not a new file;
* an older database is refused with the command that migrates it
  (`core.database`), not migrated;
* the bundled results of the bundled runs are read from their files into memory
  (`modeling.stored.bundle.load_predictors` and its siblings), not installed
  into the database.
"""

from __future__ import annotations

# The switch lives in `core.database`, which refuses every write and every new file
# while it is on, for both CLIs and the dashboard alike.
from core.database import READ_ONLY_ENV_VAR, TRUE_VALUES, existing
from core.database import read_only_mode as read_only

__all__ = ["READ_ONLY_ENV_VAR", "TRUE_VALUES", "existing", "read_only"]
