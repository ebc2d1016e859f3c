"""How the pages name a workload, its images and its networks: plain words, no Streamlit.

Every page shows one workload at a time (`core.workloads`). The words follow
its image's dimensions — a 3D U-Net trains on cubes of voxels, a 2D CNN on
squares of pixels — and its knobs: a U-Net is told apart by its base filters,
an AlexNet by its classes.

Runs frames hold every workload's rows; `runs_of` keeps one workload's. A
frame without a ``workload`` column (a database from before there were
several) is all the default workload's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, fields
from typing import Any

import pandas as pd

from core import workloads
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import format_image_shape

WORKLOAD_COLUMN = "workload"
IMAGE_COLUMNS = ("depth", "height", "width")  # the ``runs`` columns of any image, outermost first
# Per number of image dimensions: the solid, its elements, its sides as a product.
SOLIDS = {3: "cube", 2: "square"}
ELEMENTS = {3: "voxels", 2: "pixels"}
PRODUCTS = {3: "D x H x W", 2: "H x W"}
ROOTS = {3: "cube root", 2: "square root"}
# The optimizer each workload trains with (`core.workloads.<name>.build_model`).
OPTIMIZERS = {"unet3d": "Adam", "alexnet": "SGD momentum"}
# The knob that names a workload's network in a run picker, and its short word.
SHORT_KNOBS: dict[str, tuple[str, str]] = {
    "unet3d": ("base_filters", "filters"),
    "alexnet": ("classes", "classes"),
}
# How a knob reads in a network label; in_channels and classes only when not the default.
_KNOB_WORDS = {
    "base_filters": "base filters",
    "levels": "levels",
    "in_channels": "input channels",
    "classes": "classes",
}
_SHOWN_WHEN_CHANGED = ("in_channels", "classes")


def names() -> list[str]:
    """Every workload's name, the default first."""
    return [DEFAULT_WORKLOAD, *(name for name in workloads.WORKLOADS if name != DEFAULT_WORKLOAD)]


def title(name: str) -> str:
    """``3D U-Net (IntelAI/unet)``: what a selector shows for ``name``."""
    return workloads.get(name).TITLE


def dims(name: str) -> int:
    return int(workloads.get(name).DIMS)


def with_workload(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with a ``workload`` in every row (none, or an empty one, is the default's)."""
    if WORKLOAD_COLUMN in runs and not runs[WORKLOAD_COLUMN].isna().any():
        return runs
    named = (
        runs[WORKLOAD_COLUMN].astype(object)
        if WORKLOAD_COLUMN in runs
        else pd.Series(None, index=runs.index, dtype=object)
    )
    return runs.assign(**{WORKLOAD_COLUMN: named.where(named.notna(), DEFAULT_WORKLOAD)})


def runs_of(runs: pd.DataFrame, workload: str) -> pd.DataFrame:
    """The rows of ``runs`` measured on ``workload``."""
    named = with_workload(runs)
    return named[named[WORKLOAD_COLUMN] == workload]


def image_shape(row: Mapping[str, Any]) -> tuple[int, ...]:
    """A runs row's image sides, outermost first: ``(d, h, w)`` or ``(h, w)`` (no depth)."""
    return tuple(
        int(row[column])
        for column in IMAGE_COLUMNS
        if row.get(column) is not None and not pd.isna(row[column])
    )


def power(side: int, dims: int) -> str:
    """``128^3`` for a cube, ``224^2`` for a square."""
    return f"{side}^{dims}"


def shape_label(shape: tuple[int, ...], one_side: bool) -> str:
    """``128^3`` or ``224^2`` when chosen as one side, ``240x240x144`` / ``227x200`` otherwise."""
    if one_side:
        return power(shape[0], len(shape))
    return "x".join(str(side) for side in shape)


def image_label(shape: tuple[int, ...]) -> str:
    """``64`` for a cube or a square, ``240x240x144`` or ``227x200`` otherwise."""
    return format_image_shape(shape)


def side_title(dims: int) -> str:
    """The axis title of an image side: ``image side (voxels; cube root of D x H x W)``."""
    return f"image side ({ELEMENTS[dims]}; {ROOTS[dims]} of {PRODUCTS[dims]})"


def optimizer(workload: str) -> str:
    return OPTIMIZERS.get(workload, "optimizer")


def knob_defaults(workload: str) -> dict[str, Any]:
    """Each network knob of ``workload`` and its default value."""
    module = workloads.get(workload)
    return {
        field.name: field.default
        for field in fields(module.Config)
        if field.name in module.NETWORK_KNOBS and field.default is not MISSING
    }


def network_label(knobs: Mapping[str, Any], workload: str = DEFAULT_WORKLOAD) -> str:
    """``16 base filters, 5 levels, float32, transpose``: a network by its knobs.

    Input channels and classes are named only when they differ from the
    workload's default (the reference AlexNet reads ``float32``).
    """
    defaults = knob_defaults(workload)
    parts = []
    for knob in workloads.get(workload).NETWORK_KNOBS:
        value = knobs.get(knob, defaults.get(knob))
        if value is None or (knob in _SHOWN_WHEN_CHANGED and value == defaults.get(knob)):
            continue
        value = value.item() if hasattr(value, "item") else value
        parts.append(f"{value} {_KNOB_WORDS[knob]}" if knob in _KNOB_WORDS else str(value))
    return ", ".join(parts)


def short_network(run: Mapping[str, Any]) -> str:
    """``16 filters, float32`` (a U-Net) or ``1000 classes, float32`` (an AlexNet)."""
    workload = run.get(WORKLOAD_COLUMN) or DEFAULT_WORKLOAD
    parts = []
    if workload in SHORT_KNOBS:
        knob, word = SHORT_KNOBS[workload]
        value = run.get(knob)
        if value is not None and not pd.isna(value):
            parts.append(f"{int(value)} {word}")
    parts.append(str(run["precision"]))
    return ", ".join(parts)


def evaluate_command(workload: str) -> str:
    """The command that fits and scores ``workload``'s models."""
    return f"memplan evaluate --workload {workload}"
