"""Memory units: every stored figure is bytes; people read GiB (2^30 bytes).

Every size memplan reads or prints is binary: K, M, G and T (with or without
``iB``, and ``KB``, ``MB``, ``GB``, ``TB`` too) are 2^10, 2^20, 2^30 and 2^40
bytes, as memory is sold (a "64 GB" DIMM holds 64 GiB). A memory limit can be
no more than the machine has (`check_memory_limit`).
"""

from __future__ import annotations

import argparse
import math
import re
from decimal import Decimal

from core.errors import ConfigError

KIB = 2**10
MIB = 2**20
GIB = 2**30
TIB = 2**40

# What every --help that takes a size says about its units.
SIZE_UNITS_HELP = (
    "binary units: K/M/G/T = KiB/MiB/GiB/TiB, and GB = GiB = 2^30 bytes as DIMMs are sold"
)


def format_gib(value_bytes: float) -> str:
    """``12.34 GiB``: bytes as binary gigabytes, two decimals."""
    return f"{value_bytes / GIB:.2f} GiB"


def format_bound(value_bytes: float) -> str:
    """`format_gib`, or what to say of a bound a model cannot give (infinite, NaN).

    Reads after "would need up to": "... an unknown amount (the model gives it no finite bound)".
    """
    if math.isfinite(value_bytes):
        return format_gib(value_bytes)
    return "an unknown amount (the model gives it no finite bound)"


def approx_gib(value_bytes: float) -> str:
    """Bytes in GiB to three significant figures: ``0.938 GiB``, ``7.81 GiB``, ``1,617 GiB``.

    An upper bound read to the hundredth of a GiB claims a precision no bound has.
    """
    if not math.isfinite(value_bytes):
        return "unbounded"
    value = value_bytes / GIB
    if value == 0:
        return "0 GiB"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    rounded = round(value, digits)
    return f"{rounded:,.{digits}f} GiB"


def gib_words(value_bytes: float) -> str:
    """``64 GiB`` for a whole number of GiB, else three figures: ``61.2 GiB``, ``0.938 GiB``."""
    if math.isfinite(value_bytes) and value_bytes > 0 and value_bytes % GIB == 0:
        return f"{int(value_bytes // GIB):,} GiB"
    return approx_gib(value_bytes)


def format_bytes(value_bytes: float) -> str:
    """Bytes in the largest binary unit with a whole part: ``512 B``, ``1.50 MiB``, ``2.00 TiB``."""
    for unit, size in (("TiB", TIB), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if abs(value_bytes) >= size:
            return f"{value_bytes / size:.2f} {unit}"
    return f"{value_bytes:g} B"


def budget_argument(value_bytes: int) -> str:
    """``64GiB``, ``1500MiB`` or plain bytes: a ``--budget`` that parses back to ```value_bytes```
    (or, past whole MiB, to less than a MiB below it)."""
    if value_bytes % GIB == 0:
        return f"{value_bytes // GIB}GiB"
    return f"{value_bytes // MIB}MiB"


def physical_ram_bytes() -> int:
    """The machine's physical memory (psutil's ``virtual_memory().total``)."""
    import psutil

    return int(psutil.virtual_memory().total)


# The smallest memory limit a point may run under: a bare Python interpreter with
# memory_profiler's sampler is ~30 MiB, so a limit below this stops every child before it
# imports anything (TensorFlow's import alone takes ~0.7 GiB). It keeps 107 bytes out.
MIN_MEMORY_LIMIT_BYTES = 64 * MIB


def check_memory_limit_floor(limit_bytes: int) -> int:
    """``limit_bytes`` if at least MIN_MEMORY_LIMIT_BYTES; `ConfigError` saying so if not."""
    if limit_bytes < MIN_MEMORY_LIMIT_BYTES:
        raise ConfigError(
            f"memory limit {format_bytes(limit_bytes)} is too small for any point: a child "
            f"cannot start Python in it; give at least {MIN_MEMORY_LIMIT_BYTES // MIB}MiB "
            "(TensorFlow's import alone takes about 0.7 GiB)"
        )
    return limit_bytes


def check_memory_limit(limit_bytes: int, total_ram_bytes: int | None = None) -> int:
    """``limit_bytes`` if this machine has that much RAM; `ConfigError` naming both if not.

    ``total_ram_bytes`` defaults to this machine's physical memory. A limit above
    it could never be reached before the machine swaps or the kernel kills the
    child, so it would protect nothing; one below MIN_MEMORY_LIMIT_BYTES could
    not start the child at all.
    """
    check_memory_limit_floor(limit_bytes)
    ram = physical_ram_bytes() if total_ram_bytes is None else int(total_ram_bytes)
    if limit_bytes > ram:
        most = f"{ram * 10 // GIB / 10:.1f}GiB"
        raise ConfigError(
            f"memory limit {format_bytes(limit_bytes)} is more than this machine's "
            f"{format_bytes(ram)} of physical RAM; give at most {most}"
        )
    return limit_bytes


# Every suffix is binary: a "GB" is 2^30 bytes here as in `size buy`'s answers.
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


def parse_budget(text: str) -> int:
    """A memory budget: `parse_bytes`, but a bare number is refused, not taken as bytes.

    ``--budget 12`` meant 12 GiB to everyone who typed it and 12 bytes to memplan.
    """
    match = _SIZE_PATTERN.match(text)
    if match and not match.group(2):
        raise argparse.ArgumentTypeError(
            f"{text!r} has no unit: give the budget with one, e.g. {match.group(1)}GiB "
            f"({SIZE_UNITS_HELP})"
        )
    return parse_bytes(text)
