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

WORKLOADS: dict[str, ModuleType] = {module.NAME: module for module in (unet3d, alexnet)}
DEFAULT_WORKLOAD = unet3d.NAME

# Every ``runs`` column some workload stores for its image and knobs; a run
# leaves the columns of other workloads NULL.
STORED_COLUMNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        column
        for module in WORKLOADS.values()
        for column in (*module.SHAPE_COLUMNS, *module.NETWORK_KNOBS)
    )
)


def get(name: str) -> ModuleType:
    """The workload module called ``name``; `ConfigError` lists the known ones otherwise."""
    try:
        return WORKLOADS[name]
    except (KeyError, TypeError):
        raise ConfigError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


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
