"""modeling's user-facing errors, declared in `core.errors` (shared with the CLI and the
pages, which catch them without importing modeling) and named here for modeling's code."""

from core.errors import ModelingError, NoModelsError

__all__ = ["ModelingError", "NoModelsError"]
