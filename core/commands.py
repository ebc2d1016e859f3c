"""Command-line pieces both CLIs share: value parsers, the --db and workload options, dispatch.

`python -m profiling` and `python -m modeling` build their subcommands and
turn a `MemplanError` into one ``error: ...`` line (exit 2) with these, so
flags mean the same in both.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from core import database, workloads
from core.errors import ConfigError, MemplanError
from core.plausibility import MAX_SEED
from core.units import SIZE_UNITS_HELP
from core.workloads.base import WorkloadConfig

# Every suffix is binary (`core.units`): a "GB" is 2^30 bytes here as in `size buy`'s answers.
_UNITS = {
    "": 1,
    "b": 1,
    **{
        spelling: 2 ** (10 * power)
        for power, letter in enumerate("kmgt", start=1)
        for spelling in (letter, f"{letter}b", f"{letter}ib")
    },
}
_SIZE_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
ERROR_EXIT_CODE = 2
SIZE_HELP = f"e.g. 16GiB, 1500M or 2T; {SIZE_UNITS_HELP}"


def parse_bytes(text: str) -> int:
    """``16GiB``, ``1500MiB``, ``2T``, ``64GB`` or a plain number of bytes; every unit is binary."""
    if text.strip().startswith("-"):
        raise argparse.ArgumentTypeError(f"memory size must be positive, got {text!r}")
    match = _SIZE_PATTERN.match(text)
    unit = match.group(2).lower() if match else None
    if not match or unit not in _UNITS:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a memory size: use a number with an optional unit, "
            f"e.g. 16GiB, 1500MiB, 2T ({SIZE_UNITS_HELP})"
        )
    value = int(Decimal(match.group(1)) * _UNITS[unit])
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"memory size must be positive (at least 1 byte), got {text!r}"
        )
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seed(text: str) -> int:
    """A seed of the synthetic data: what NumPy and Keras take, 0 to MAX_SEED."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(
            f"a seed is from 0 to {MAX_SEED} (what NumPy and Keras take), got {value}"
        )
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def add_db_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--db",
        type=Path,
        default=None,
        help="DuckDB file (default: $MEMPLAN_DB, else data/memplan.duckdb). A new file "
        "starts empty, named here or by $MEMPLAN_DB alike; only the repository's "
        "data/memplan.duckdb starts with the bundled reference runs",
    )


def open_db(args: argparse.Namespace) -> Path:
    return database.ensure_database(args.db or database.default_db_path())


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]


def add_commands(subparsers: Any, commands: dict[str, Command]) -> None:
    """One subcommand per ``name: (prepare, handler, summary)`` entry of ``commands``."""
    for name, (prepare, run, summary) in commands.items():
        sub = subparsers.add_parser(name, help=summary, description=summary)
        prepare(sub)
        sub.set_defaults(handler=run)


def run_handler(args: argparse.Namespace) -> int:
    """Run the chosen subcommand; a `MemplanError` becomes one ``error: ...`` line, exit 2."""
    try:
        return args.handler(args)
    except MemplanError as error:
        print(f"error: {error}", file=sys.stderr)
        return ERROR_EXIT_CODE


# The network knobs a flag can set, with their type; a workload takes those it has.
KNOB_FLAGS: dict[str, type] = {
    "base_filters": int,
    "levels": int,
    "in_channels": int,
    "classes": int,
    "precision": str,
    "upsampling": str,
}


def add_workload_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--workload",
        default=workloads.DEFAULT_WORKLOAD,
        choices=list(workloads.WORKLOADS),
        help=f"the network (default {workloads.DEFAULT_WORKLOAD})",
    )


def add_knob_options(parser: argparse.ArgumentParser) -> None:
    """One flag per network knob (default: the workload's own default)."""
    for knob, kind in KNOB_FLAGS.items():
        owners = [name for name, mod in workloads.WORKLOADS.items() if knob in mod.NETWORK_KNOBS]
        parser.add_argument(
            f"--{knob.replace('_', '-')}",
            type=kind,
            default=None,
            help=f"{knob.replace('_', ' ')} ({', '.join(owners)}; default: the network's own)",
        )


def given_knobs(args: argparse.Namespace, workload: str) -> dict[str, Any]:
    """The knob flags given on the command line; `ConfigError` for one ``workload`` lacks."""
    given = {knob: getattr(args, knob) for knob in KNOB_FLAGS if getattr(args, knob) is not None}
    module = workloads.get(workload)
    foreign = [knob for knob in given if knob not in module.NETWORK_KNOBS]
    if foreign:
        flags = ", ".join(f"--{knob.replace('_', '-')}" for knob in foreign)
        raise ConfigError(
            f"the {workload} workload has no {flags}; its knobs are "
            f"{', '.join(module.NETWORK_KNOBS)}"
        )
    return given


def config_from_args(args: argparse.Namespace, image_size: str, batch_size: int) -> WorkloadConfig:
    """The configuration that ``--workload``, the knob flags, an image size and a batch name."""
    module = workloads.get(args.workload)
    shape = module.parse_image_shape(image_size)
    return module.Config(shape, batch_size, **given_knobs(args, args.workload))


# --- settings files ----------------------------------------------------------------------


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
_TEXTS = Setting((str,), '["float32"]')
# The keys of a sweep grid file (`profiling.sweep.GRID_KNOBS`) and what each holds.
SWEEP_FILE_SETTINGS: dict[str, Setting] = {
    "workload": Setting((str,), '"unet3d"', many=False),
    "image_sizes": Setting((int, str), '[32, 64, "96x96x64"]'),
    "batch_sizes": _WHOLE_NUMBERS,
    "base_filters": _WHOLE_NUMBERS,
    "levels": _WHOLE_NUMBERS,
    "in_channels": _WHOLE_NUMBERS,
    "classes": _WHOLE_NUMBERS,
    "precisions": Setting((str,), '["float32", "mixed_bfloat16"]'),
    "upsamplings": Setting((str,), '["transpose"]'),
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
