"""How a person names the database: the environment variable and the command line's option.

Words only, no database access, so any layer may say them (modeling included, which
never opens the database: tests/unit/test_modeling_pure.py). Declared once, here, as
the knobs' flags are (`core.workloads.knobs.Knob.flag`): the messages and suggested
commands below `memplan` say the option without spelling it, and `memplan.commands`
declares the option from it.
"""

from __future__ import annotations

DB_ENV_VAR = "MEMPLAN_DB"
DB_OPTION = "db"
DB_FLAG = f"--{DB_OPTION}"
