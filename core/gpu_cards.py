"""The GPU memory sizes users ask about, each with the memory the framework reports as usable.

A card's usable memory is what ``torch.cuda.get_device_properties().total_memory``
reports (the ``total capacity`` of PyTorch's out-of-memory message), not its marketing
size: an "80 GB" H100 reports 79.18 GiB, the H200 of the bundled runs 139.80 GiB. Each
`GpuCard` says where its figure comes from (``source``); where the reports of one size
differ (ECC on or off, driver reservations), the lower is taken, so an answer for the size
holds on each card of it.

A size the table lacks is taken as given (`usable_card`): the user says what their
framework reports.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import dataclass

from core.errors import ConfigError
from core.units import GIB, format_bytes, parse_budget


def _gib(value: float) -> int:
    return round(value * GIB)


@dataclass(frozen=True)
class GpuCard:
    """One GPU memory size: its cards, usable bytes, architecture and where the figure is from."""

    size_gb: int  # the marketing size: 24, 40, 48, 80, 94, 141
    cards: str  # which cards have it, in words
    usable_bytes: int  # as the framework reports it
    compute_capability: str | None  # of the cards named; None: unknown (a size given alone)
    source: str

    @property
    def label(self) -> str:
        if not self.size_gb:
            return f"{format_bytes(self.usable_bytes)} GPU ({self.cards})"
        return f"{self.size_gb} GB ({self.cards}, {format_bytes(self.usable_bytes)} usable)"


_OOM_REPORTS = "the 'total capacity' of public PyTorch out-of-memory messages"
GPU_CARDS: tuple[GpuCard, ...] = (
    GpuCard(24, "RTX 4090 / A10", _gib(23.52), "8.9", f"{_OOM_REPORTS} (23.52-23.99 GiB)"),
    GpuCard(40, "A100 40GB", _gib(39.39), "8.0", f"{_OOM_REPORTS} (39.38-39.56 GiB)"),
    GpuCard(
        48,
        "L40S / RTX 6000 Ada",
        _gib(44.34),
        "8.9",
        f"{_OOM_REPORTS}: 44.34-44.47 GiB with ECC on (L40S), 47.27-47.53 GiB without",
    ),
    GpuCard(
        80,
        "H100 80GB",
        _gib(79.18),
        "9.0",
        f"issue 40 and {_OOM_REPORTS} (79.14-79.25 GiB; an A100 80GB, compute 8.0: 79.15)",
    ),
    GpuCard(94, "H100 NVL", _gib(93.02), "9.0", f"{_OOM_REPORTS} (93.00-93.10 GiB)"),
    GpuCard(
        141,
        "H200",
        150_109_880_320,
        "9.0",
        "measured: the bundled H200 runs' gpu_total_bytes (data/REFERENCE.md)",
    ),
)
SIZES_GB: tuple[int, ...] = tuple(card.size_gb for card in GPU_CARDS)
_MARKETING = re.compile(r"^\s*(\d+)\s*(?:gb)?\s*$", re.IGNORECASE)


def usable_card(usable_bytes: int) -> GpuCard:
    """A GPU of ``usable_bytes`` given alone: its architecture unknown."""
    return GpuCard(0, "size given", usable_bytes, None, "given: the usable memory as said")


def card_for(text: str) -> GpuCard:
    """The card of a listed size ("80", "80GB") or a size given with a unit ("75GiB", "70000M").

    A listed size means the card's usable memory, not the marketing size; any other
    size is taken as the usable memory the framework reports (every unit binary, as
    everywhere in memplan: `core.units`).
    """
    listed = _MARKETING.match(text)
    if listed:
        size = int(listed.group(1))
        for card in GPU_CARDS:
            if card.size_gb == size:
                return card
    try:
        return usable_card(parse_budget(text))  # a unit is needed: "75" bytes is a typo
    except argparse.ArgumentTypeError:
        sizes = ", ".join(f"{size}GB" for size in SIZES_GB)
        raise ConfigError(
            f"{text!r} is not a GPU memory size: give a listed size ({sizes}) or the usable "
            "memory your framework reports, with a unit, e.g. 75GiB"
        ) from None
