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
# A workload's optimizer, the knob that names its network in a run picker and how each
# knob reads in a label come from its declarations (`core.workloads.knobs`).


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
    return workloads.labels(workload).optimizer


def knob_defaults(workload: str) -> dict[str, Any]:
    """Each network knob of ``workload`` and its default value."""
    return {knob.name: knob.default for knob in workloads.get(workload).KNOBS}


def network_label(knobs: Mapping[str, Any], workload: str = DEFAULT_WORKLOAD) -> str:
    """``16 base filters, 5 levels, float32, transpose``: a network by its knobs.

    Input channels and classes are named only when they differ from the
    workload's default (the reference AlexNet reads ``float32``).
    """
    parts = []
    for knob in workloads.get(workload).KNOBS:
        value = knobs.get(knob.name, knob.default)
        if value is None or (not knob.shown_when_default and value == knob.default):
            continue
        value = value.item() if hasattr(value, "item") else value
        parts.append(f"{value} {knob.unit}" if knob.unit else str(value))
    return ", ".join(parts)


def short_network(run: Mapping[str, Any]) -> str:
    """``16 filters, float32`` (a U-Net) or ``1000 classes, float32`` (an AlexNet)."""
    workload = run.get(WORKLOAD_COLUMN) or DEFAULT_WORKLOAD
    parts = []
    short = workloads.labels(workload).short_knob if workload in workloads.WORKLOADS else None
    if short is not None:
        knob, word = short
        value = run.get(knob)
        if value is not None and not pd.isna(value):
            parts.append(f"{int(value)} {word}")
    parts.append(str(run["precision"]))
    return ", ".join(parts)


def evaluate_command(workload: str) -> str:
    """The command that fits and scores ``workload``'s models."""
    return f"memplan evaluate --workload {workload}"
