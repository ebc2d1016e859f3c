"""The Sizing page's inputs in the URL's query parameters, so a link reproduces the view.

A procurement team sends ``...?image=240x240x144&batch=16&budget=1024&headroom=20``;
whoever opens it sees the same question. Parameters:

=========  ==============================================  ===========
name       value                                           example
=========  ==============================================  ===========
image      a cube side, or depth x height x width          128, 240x240x144
batch      batch size                                      16
filters    base filters                                    16
precision  one of `core.workloads.unet3d.PRECISIONS`          float32
budget     memory budget, GiB                              256
headroom   memory kept free, % of the bound                20
model      a stored model's name                           symbolic
=========  ==============================================  ===========

`from_params` validates what a link says against what the page offers: a
missing value takes the default; a value that is not offered (hand-edited,
truncated, or from a link older than the models) takes the default too, and
the page is told which, in words. `to_params` writes a state back.
`read` and `write` do both with ``st.query_params``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import streamlit as st

from core.errors import ConfigError
from core.workloads.unet3d import format_image_shape, nearest_valid_sizes, parse_image_shape

IMAGE, BATCH, FILTERS, PRECISION = "image", "batch", "filters", "precision"
BUDGET, HEADROOM, MODEL = "budget", "headroom", "model"
PARAMETERS: tuple[str, ...] = (IMAGE, BATCH, FILTERS, PRECISION, BUDGET, HEADROOM, MODEL)


@dataclass(frozen=True)
class SizingChoices:
    """What the Sizing page offers: every value a link may set must be one of these."""

    sides: tuple[int, ...]  # valid image sides, ascending
    levels: int  # the network's depth, which decides the valid sides
    batch_sizes: tuple[int, ...]
    base_filters: tuple[int, ...]
    precisions: tuple[str, ...]
    models: tuple[str, ...]  # stored model names; empty before any evaluation
    min_budget_gib: float
    max_budget_gib: float
    max_headroom_pct: float


@dataclass(frozen=True)
class SizingState:
    """One view of the Sizing page: the question asked."""

    image_shape: tuple[int, int, int]  # depth, height, width
    cube: bool  # chosen as a cube (one side) rather than three sides
    batch_size: int
    base_filters: int
    precision: str
    budget_gib: float
    headroom_pct: float
    model: str | None  # None when no model is stored


def to_params(state: SizingState) -> dict[str, str]:
    """The query parameters that reproduce ``state``."""
    image = str(state.image_shape[0]) if state.cube else "x".join(map(str, state.image_shape))
    params = {
        IMAGE: image,
        BATCH: str(state.batch_size),
        FILTERS: str(state.base_filters),
        PRECISION: state.precision,
        BUDGET: f"{state.budget_gib:g}",
        HEADROOM: f"{state.headroom_pct:g}",
    }
    if state.model is not None:
        params[MODEL] = state.model
    return params


def _listed(values: Sequence[object]) -> str:
    """``1, 2, 3 ... 128`` for long lists, every value for short ones."""
    shown = [str(value) for value in values]
    return ", ".join(shown) if len(shown) <= 8 else f"{', '.join(shown[:3])} ... {shown[-1]}"


def _image(text: str, choices: SizingChoices) -> tuple[tuple[int, int, int], bool]:
    try:
        shape = parse_image_shape(text)
    except ConfigError as error:
        raise ValueError(str(error)) from None
    for side in shape:
        if side not in choices.sides:
            below, above = nearest_valid_sizes(side, choices.levels)
            offered = [s for s in (below, above) if s in choices.sides] or [choices.sides[-1]]
            raise ValueError(
                f"side {side} is not offered: sides are multiples of {choices.sides[0]} from "
                f"{choices.sides[0]} to {choices.sides[-1]} (nearest: "
                f"{' or '.join(map(str, offered))})"
            )
    return shape, "x" not in text.lower()


def _whole(text: str, offered: Sequence[int], what: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{what} must be a whole number") from None
    if value not in offered:
        raise ValueError(f"{what} must be one of {_listed(offered)}")
    return value


def _number(text: str, low: float, high: float, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{what} must be a number") from None
    if not (math.isfinite(value) and low <= value <= high):
        raise ValueError(f"{what} must be between {low:g} and {high:g}")
    return value


def _one(value: str | list[str]) -> str:
    """A repeated parameter counts by its last value, as ``st.query_params`` reads it."""
    return value[-1] if isinstance(value, list) else value


def from_params(
    params: Mapping[str, str | list[str]], choices: SizingChoices, default: SizingState
) -> tuple[SizingState, list[str]]:
    """The state a link asks for, and one sentence per value it could not take.

    Each missing or invalid parameter takes its value from ``default``;
    parameters this page does not know are left alone.
    """
    state, problems = default, []
    readers = {
        IMAGE: lambda text: dict(zip(("image_shape", "cube"), _image(text, choices), strict=True)),
        BATCH: lambda text: {"batch_size": _whole(text, choices.batch_sizes, "batch size")},
        FILTERS: lambda text: {"base_filters": _whole(text, choices.base_filters, "base filters")},
        PRECISION: lambda text: {"precision": _precision(text, choices)},
        BUDGET: lambda text: {"budget_gib": _number(text, choices.min_budget_gib,
                                                    choices.max_budget_gib, "the budget (GiB)")},
        HEADROOM: lambda text: {"headroom_pct": _number(text, 0, choices.max_headroom_pct,
                                                        "headroom (%)")},
        MODEL: lambda text: {"model": _model(text, choices)},
    }  # fmt: skip
    for name, read_value in readers.items():
        if name not in params:
            continue
        text = _one(params[name])
        try:
            state = replace(state, **read_value(text))
        except ValueError as reason:
            problems.append(
                f"The link's {name}={text!r} was ignored: {reason}. "
                f"Showing {name}={to_params(default).get(name, 'none')} instead."
            )
    return state, problems


def _precision(text: str, choices: SizingChoices) -> str:
    if text not in choices.precisions:
        raise ValueError(f"precision must be one of {_listed(choices.precisions)}")
    return text


def _model(text: str, choices: SizingChoices) -> str:
    if not choices.models:
        raise ValueError("no model is stored yet (run `python -m modeling evaluate`)")
    if text not in choices.models:
        raise ValueError(f"the stored models are {_listed(choices.models)}")
    return text


def image_label(state: SizingState) -> str:
    """``128^3`` for a cube, ``240x240x144`` otherwise."""
    label = format_image_shape(state.image_shape)
    return f"{label}^3" if state.cube else "x".join(map(str, state.image_shape))


def read(choices: SizingChoices, default: SizingState) -> tuple[SizingState, list[str]]:
    """`from_params` over this session's URL (``st.query_params``)."""
    return from_params(st.query_params.to_dict(), choices, default)


def write(state: SizingState) -> None:
    """Put ``state`` in this session's URL, replacing the page's parameters (others stay)."""
    wanted = to_params(state)
    current = st.query_params.to_dict()
    if all(current.get(name) == value for name, value in wanted.items()) and (
        MODEL in wanted or MODEL not in current
    ):
        return
    kept = {name: value for name, value in current.items() if name not in PARAMETERS}
    st.query_params.from_dict(kept | wanted)
