"""modeling's user-facing errors, in profiling's tree so the CLIs print them as one line."""

from core.errors import MemplanError


class ModelingError(MemplanError, ValueError):
    """Input a model or a sizing question cannot take; the message says what would work."""


class NoModelsError(ModelingError):
    """The database holds no fitted models yet (run ``memplan evaluate``)."""
