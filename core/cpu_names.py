"""CPU names and instruction sets as /proc/cpuinfo states them, and as memplan shows them.

What `core.machine` reads of a CPU (its vendor, its best instruction-set level) and
what `core.profiles` shows of it (a short model name, the level's title); no
TensorFlow, no profile logic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# Instruction-set levels, best first, with the /proc/cpuinfo flag that marks each.
# oneDNN dispatches on exactly these tiers (AMX tiles, AVX-512 with BF16, AVX-512, AVX2).
ISA_LEVELS: tuple[tuple[str, str, str], ...] = (
    ("amx", "amx_tile", "AMX"),
    ("avx512_bf16", "avx512_bf16", "AVX-512 BF16"),
    ("avx512", "avx512f", "AVX-512"),
    ("avx2", "avx2", "AVX2"),
)
BELOW_AVX2 = "below_avx2"
ISA_TITLES: dict[str, str] = {level: title for level, _, title in ISA_LEVELS} | {
    BELOW_AVX2: "below AVX2"
}
# What a fact a run did not record is shown as.
UNKNOWN = "unknown"
# /proc/cpuinfo vendor_id values and the names shown for them.
VENDOR_IDS: dict[str, str] = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD"}
# Trademark marks and filler words that make a CPU model name long without telling anything.
_MODEL_NOISE = re.compile(r"\((?:R|TM|tm|r)\)|\bCPU\b|\bProcessor\b|\d+-Core\b|@.*$")


def isa_level(flags: Iterable[str]) -> str:
    """The best instruction-set level among ``flags`` (the ``flags`` line of /proc/cpuinfo)."""
    present = set(flags)
    for level, flag, _ in ISA_LEVELS:
        if flag in present:
            return level
    return BELOW_AVX2


def vendor_from_model(cpu_model: str | None) -> str | None:
    """The vendor a CPU model name states ("Intel(R) Xeon(R) ..." -> "Intel"), or None."""
    if not cpu_model:
        return None
    for vendor in VENDOR_IDS.values():
        if re.search(rf"\b{vendor}\b", cpu_model, flags=re.IGNORECASE):
            return vendor
    return None


def short_model(cpu_model: str | None) -> str | None:
    """A CPU model name without trademark marks, core counts and clock ("Intel Xeon")."""
    if not cpu_model or cpu_model == UNKNOWN:
        return None
    return " ".join(_MODEL_NOISE.sub(" ", cpu_model).split()) or None
