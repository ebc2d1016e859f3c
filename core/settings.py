"""Settings files (TOML or JSON): read one and check each key holds what it should.

A sweep grid file is the first such file (`SWEEP_FILE_SETTINGS`): a wrong type
is a `ConfigError` naming the file, the key, the value and the type it needs,
never a TypeError further down.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import workloads
from core.errors import ConfigError


@dataclass(frozen=True)
class Setting:
    """What one key of a settings file holds: a value of ``types`` (a list of them if ``many``)."""

    types: tuple[type, ...]
    example: str
    many: bool = True

    def words(self) -> str:
        kinds = " or ".join(_KIND_WORDS[kind] for kind in self.types)
        return f"{kinds} or a list of them" if self.many else kinds


_KIND_WORDS: dict[type, str] = {int: "a whole number", str: "text", float: "a number"}
_WHOLE_NUMBERS = Setting((int,), "[1, 2, 4]")
# The keys of a sweep grid file (`profiling.sweep.GRID_KNOBS`) and what each holds: the
# workload, the image and batch lists, then one list per declared knob (`core.workloads`).
SWEEP_FILE_SETTINGS: dict[str, Setting] = {
    "workload": Setting((str,), json.dumps(workloads.DEFAULT_WORKLOAD), many=False),
    "image_sizes": Setting((int, str), '[32, 64, "96x96x64"]'),
    "batch_sizes": _WHOLE_NUMBERS,
    **{
        knob.sweep_key: Setting((knob.kind,), json.dumps(knob.example()))
        for knob in workloads.KNOBS.values()
    },
}


def _shown(value: Any) -> str:
    return json.dumps(value, default=str)


def _is_kind(value: Any, types: tuple[type, ...]) -> bool:
    # TOML and JSON booleans are Python bools, which are ints too: never a count.
    return not isinstance(value, bool) and isinstance(value, types)


def check_settings(values: Any, settings: Mapping[str, Setting], where: str) -> dict[str, Any]:
    """``values`` if it is a mapping whose known keys hold what ``settings`` says.

    Keys ``settings`` does not name are left for the caller to refuse. Raises
    `ConfigError` naming ``where``, the key, the value and the type it needs.
    """
    if not isinstance(values, Mapping):
        raise ConfigError(
            f"{where} holds {type(values).__name__} {_shown(values)[:60]}, not a table of "
            'settings; give keys and values, e.g. {"image_sizes": [32, 64], "batch_sizes": [1, 2]}'
        )
    for key, value in values.items():
        setting = settings.get(key)
        if setting is None:
            continue
        if _is_kind(value, setting.types):
            continue
        if setting.many and isinstance(value, list):
            for index, item in enumerate(value):
                if not _is_kind(item, setting.types):
                    raise ConfigError(
                        f"{where}: {key}[{index}] = {_shown(item)} is not "
                        f"{' or '.join(_KIND_WORDS[kind] for kind in setting.types)}; "
                        f"give e.g. {key} = {setting.example}"
                    )
            continue
        raise ConfigError(
            f"{where}: {key} = {_shown(value)} is not {setting.words()}; "
            f"give e.g. {key} = {setting.example}"
        )
    return dict(values)


def read_settings_file(
    path: Path, settings: Mapping[str, Setting] = SWEEP_FILE_SETTINGS, what: str = "sweep config"
) -> dict[str, Any]:
    """The settings of a ``.toml`` or ``.json`` file, their types checked (`check_settings`)."""
    import tomllib

    path = Path(path)
    if path.suffix not in (".toml", ".json"):
        raise ConfigError(f"{what} {path} must end in .toml or .json")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise ConfigError(f"cannot read {what} {path}: {reason}") from error
    try:
        values = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except (ValueError, RecursionError) as error:  # JSONDecodeError and TOMLDecodeError
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise ConfigError(f"{what} {path} is not valid {path.suffix[1:]}: {reason}") from None
    return check_settings(values, settings, f"{what} {path}")
