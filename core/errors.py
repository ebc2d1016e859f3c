"""memplan's exceptions: one small tree, caught once at the CLI boundary.

Every message says what was wrong and what would be right.
"""

# What a command stopped by Ctrl-C or SIGTERM exits with (the shell's 128 + SIGINT):
# `memplan` after marking its sweep interrupted, and `profiling.job` running it.
INTERRUPTED_EXIT_CODE = 130
# What a command exits with after printing one ``error: ...`` line for a `MemplanError`.
ERROR_EXIT_CODE = 2


class MemplanError(Exception):
    """Base of every error memplan reports to a user as one line."""


class ConfigError(MemplanError, ValueError):
    """A workload or sweep configuration the network or the tool cannot take."""


class DataFileError(MemplanError, ValueError):
    """A file to import that is malformed; nothing from it was stored."""


class StoreError(MemplanError):
    """The database could not be opened or used (lock held too long, bad schema)."""


class ModelingError(MemplanError, ValueError):
    """Input a model or a sizing question cannot take; the message says what would work."""


class NoModelsError(ModelingError):
    """The database holds no fitted models yet (run ``memplan evaluate``)."""
