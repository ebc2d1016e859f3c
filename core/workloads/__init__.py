"""The workloads memplan measures and predicts, by name: the seam every network plugs into.

A workload module (one per network) holds its configuration and validation,
its closed-form layer description, its Keras builder and synthetic batch, and
the ``runs`` columns it stores; `core.workloads.base` says what each one
provides. Everything else reaches a network through this registry, so adding a
network is one module plus one line here (docs/workloads.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import ModuleType
from typing import Any

from core.errors import ConfigError
from core.workloads import alexnet, unet3d
from core.workloads.base import WorkloadConfig
from core.workloads.contract import check_workload
from core.workloads.knobs import Knob, SizingOffer, WorkloadLabels

# The registry: one line per workload, the default first.
REGISTERED: tuple[ModuleType, ...] = (
    unet3d,
    alexnet,
)
WORKLOADS: dict[str, ModuleType] = {module.NAME: module for module in REGISTERED}
DEFAULT_WORKLOAD = unet3d.NAME


def _checked_knobs() -> dict[str, Knob]:
    """Every knob some workload declares, by name, first declaration first.

    Each module is held to the contract first (`core.workloads.contract.Workload`). A
    knob name means one thing in every workload: the same type (it is one ``runs``
    column and one flag) and numeric code; defaults and ranges may differ.
    """
    found: dict[str, Knob] = {}
    for module in REGISTERED:
        check_workload(module)
        for knob in module.KNOBS:
            first = found.setdefault(knob.name, knob)
            if (first.kind, first.sweep_key, first.code) != (knob.kind, knob.sweep_key, knob.code):
                raise TypeError(
                    f"knob {knob.name} of {module.NAME} is {knob.kind.__name__} "
                    f"({knob.sweep_key}, code {knob.code}), elsewhere "
                    f"{first.kind.__name__} ({first.sweep_key}, code {first.code})"
                )
    return found


# Every network knob, by name: what the flags, the sweep grid and the columns derive from.
KNOBS: dict[str, Knob] = _checked_knobs()

# Every ``runs`` column some workload stores for its image and knobs; a run
# leaves the columns of other workloads NULL.
STORED_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        column
        for module in WORKLOADS.values()
        for column in (*module.SHAPE_COLUMNS, *module.NETWORK_KNOBS)
    )
)

# The runs columns of the image sides, every workload's, in registry order.
IMAGE_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(column for module in REGISTERED for column in module.SHAPE_COLUMNS)
)
# The knobs the run lists show as columns and filter by (`Knob.listed`), in KNOBS order.
LISTED_KNOBS: tuple[str, ...] = tuple(name for name, knob in KNOBS.items() if knob.listed)


def _sizing_offers() -> dict[str, SizingOffer]:
    """Every knob some workload's Sizing page offers, in KNOBS order, first offer first.

    One URL parameter names one knob whichever workload offers it.
    """
    offers: dict[str, SizingOffer] = {}
    for module in REGISTERED:
        for offer in module.LABELS.sizing_knobs:
            first = offers.setdefault(offer.knob, offer)
            if (first.param, first.help) != (offer.param, offer.help):
                raise TypeError(
                    f"workload {module.NAME} offers {offer.knob} as {offer.param!r} "
                    f"({offer.help!r}), another as {first.param!r} ({first.help!r})"
                )
    return {name: offers[name] for name in KNOBS if name in offers}


# What the Sizing page offers of each knob any workload lets one set there.
SIZING_OFFERS: dict[str, SizingOffer] = _sizing_offers()


def get(name: str) -> ModuleType:
    """The workload module called ``name``; `ConfigError` lists the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


def owners(knob: str) -> list[str]:
    """The workloads that have ``knob``, in registry order."""
    return [name for name, module in WORKLOADS.items() if knob in module.NETWORK_KNOBS]


def labels(name: str) -> WorkloadLabels:
    """How the pages name and start workload ``name`` (its module's ``LABELS``)."""
    return get(name).LABELS


def of(config: WorkloadConfig) -> ModuleType:
    """The module of ``config``'s workload."""
    return get(config.workload)


def config_columns(config: WorkloadConfig) -> dict[str, Any]:
    """``config`` as a ``runs`` row stores it: workload, image, batch and knobs, the rest None."""
    own = of(config).config_columns(config)
    return {
        "workload": config.workload,
        **{column: own.get(column) for column in STORED_COLUMNS},
        "batch_size": config.batch_size,
    }


def config_from_row(row: Mapping[str, Any]) -> WorkloadConfig:
    """The configuration a ``runs`` row (or a frame row as a mapping) describes."""
    name = row.get("workload") or DEFAULT_WORKLOAD
    return get(str(name)).config_from_row(row)


def config_from_dict(name: str, values: Mapping[str, Any]) -> WorkloadConfig:
    """The inverse of ``config.to_dict()`` for workload ``name``."""
    return get(name).Config.from_dict(dict(values))
