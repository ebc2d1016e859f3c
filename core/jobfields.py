"""Reading a job's JSON field by field: one set of checks for every typed job.

A job crosses into its process as JSON (`profiling.jobspec.SweepJob`,
`application.refit.RefitJob`). Reading it checks every field: an unknown key, a
missing one, a wrong type or a value out of range is one `ConfigError` naming the
job, the field and what it takes (``sweep job: steps must be a whole number from 1
up, got 0``). `Fields` holds those checks for one kind of job, named by ``what``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from core.errors import ConfigError

# One field's check: its name (as a message says it) and its JSON value in, the value out.
Check = Callable[[str, Any], Any]


def optional(check: Check) -> Check:
    """``check``, with None (JSON null) allowed as it is."""
    return lambda name, value: None if value is None else check(name, value)


class Fields:
    """The field checks of one kind of job; ``what`` names it in each message ("sweep job")."""

    def __init__(self, what: str) -> None:
        self.what = what

    def refuse(self, name: str, value: Any, wanted: str) -> ConfigError:
        return ConfigError(f"{self.what}: {name} must be {wanted}, got {value!r}")

    def read(self, text: str) -> dict[str, Any]:
        """The JSON object ``text`` holds; `ConfigError` when it is not JSON or not an object."""
        try:
            values = json.loads(text)
        except json.JSONDecodeError as error:
            raise ConfigError(f"{self.what}: not JSON ({error})") from None
        return self.object_of(values)

    def object_of(self, values: Any) -> dict[str, Any]:
        if not isinstance(values, dict):
            raise ConfigError(f"{self.what}: must be a JSON object, got {type(values).__name__}")
        return values

    def checked(
        self,
        values: dict[str, Any],
        checks: dict[str, Check],
        required: tuple[str, ...],
        within: str | None = None,
    ) -> dict[str, Any]:
        """``values`` with each field checked; `ConfigError` for an unknown or missing key.

        ``within``: the field these values are nested in ("slurm"), which the messages name.
        """
        where = self.what if within is None else f"{self.what}: {within}"
        unknown = sorted(set(values) - set(checks))
        if unknown:
            raise ConfigError(
                f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(checks)}"
            )
        missing = [name for name in required if name not in values]
        if missing:
            raise ConfigError(f"{where}: missing {', '.join(missing)}")
        prefix = "" if within is None else f"{within}."
        return {name: checks[name](prefix + name, value) for name, value in values.items()}

    def whole(self, least: int, most: int | None = None) -> Check:
        """A whole number (not a bool) from ``least`` to ``most`` (None: no top)."""
        wanted = f"a whole number from {least}" + (f" to {most}" if most is not None else " up")

        def check(name: str, value: Any) -> int:
            if isinstance(value, bool) or not isinstance(value, int):
                raise self.refuse(name, value, wanted)
            if value < least or (most is not None and value > most):
                raise self.refuse(name, value, wanted)
            return value

        return check

    def number(self, least: float, above: bool = True) -> Check:
        """A finite number above ``least`` (``above`` False: of at least ``least``)."""
        wanted = f"a number {'above' if above else 'of at least'} {least:g}"

        def check(name: str, value: Any) -> float:
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise self.refuse(name, value, wanted)
            if not math.isfinite(value) or value < least or (above and value == least):
                raise self.refuse(name, value, wanted)
            return float(value)

        return check

    def choice(self, options: Callable[[], Iterable[str]]) -> Check:
        """One of ``options()`` (asked when a value is checked: a registry may grow)."""

        def check(name: str, value: Any) -> str:
            known = list(options())
            if value not in known:
                raise self.refuse(name, value, f"one of {', '.join(known)}")
            return value

        return check

    def flag(self, name: str, value: Any) -> bool:
        if not isinstance(value, bool):
            raise self.refuse(name, value, "true or false")
        return value

    def text(self, name: str, value: Any) -> str:
        if not isinstance(value, str):
            raise self.refuse(name, value, "text")
        return value

    def named(self, name: str, value: Any) -> str:
        if not isinstance(value, str) or not value.strip():
            raise self.refuse(name, value, "a name (text, not blank)")
        return value

    def path(self, name: str, value: Any) -> Path:
        return Path(self.named(name, value))
