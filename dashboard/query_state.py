"""The Sizing page's inputs in the URL's query parameters, so a link reproduces the view.

A procurement team sends ``...?workload=unet3d&machine=9b59349f74&image=240x240x144&batch=16``;
whoever opens it sees the same question, answered for the same machine. Parameters:

=========  ==============================================  ======================
name       value                                           example
=========  ==============================================  ======================
workload   a workload's name (`core.workloads`)            unet3d, alexnet
machine    a machine profile's key, or a unique prefix     9b59349f74, 9b59
image      one side (a cube or a square), or every side    128, 240x240x144, 224
batch      batch size                                      16
filters    base filters (U-Net)                            16
classes    output classes (AlexNet)                        1000
precision  one of `core.workloads.base.PRECISIONS`         float32
budget     memory budget, GiB                              256
headroom   memory kept free, % of the bound                20
model      a stored model's name (of that workload)        symbolic
framework  one of `core.frameworks.FRAMEWORKS`             tensorflow, torch
ask        the question whose answer heads the page        buy, image, batch
=========  ==============================================  ======================

``ask`` (`ask_from`, `write_ask`) says which answer heads the page: the memory to
buy (a buyer's question, the default), the largest image or the largest batch (a
researcher's); it changes what is shown first, never a figure.

``framework`` is read and written apart from the rest (`framework_from`,
`write_framework`), and only where the database has runs of more than one
framework (`dashboard.framework_panel`): a link without it asks about TensorFlow.

A link without ``workload`` is the default workload's (links from before there
were several). `workload_from` reads the workload first, since it decides what
the page offers; then `machine_from` the machine profile among those offered for
that workload (without one: the page's default, this machine when it has
models), since it decides the models; `from_params` then validates the rest
against both: a missing value takes the default; a value that is not offered
(hand-edited, truncated, from a link older than the models, or a knob the
workload does not have) takes the default too, and the page is told which, in
words. `to_params` writes a state back. `read` and `write` do both with
``st.query_params``; the Models page keeps its workload and machine there too
(`write_view`).

The sentences quote what the link said: show them with `plain`, never as Markdown.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import streamlit as st

from core import workloads
from core.errors import ConfigError
from core.workloads import DEFAULT_WORKLOAD
from presentation import text as safe_text
from presentation.sizing_view import (
    KNOB_OFFERS,
    SizingChoices,
    SizingState,
    nearest_sides,
    sides_text,
)

__all__ = [
    "SizingChoices",
    "SizingState",
    "from_params",
    "image_label",
    "framework_from",
    "machine_from",
    "plain",
    "to_params",
    "workload_from",
    "read",
    "write",
    "write_framework",
    "ask_from",
    "write_ask",
    "write_view",
]

WORKLOAD, MACHINE, IMAGE, BATCH, BUDGET, HEADROOM, MODEL = (
    "workload",
    "machine",
    "image",
    "batch",
    "budget",
    "headroom",
    "model",
)
KNOB_PARAMS: dict[str, str] = {offer.param: offer.knob for offer in KNOB_OFFERS.values()}
PARAMETERS: tuple[str, ...] = (
    WORKLOAD,
    MACHINE,
    IMAGE,
    BATCH,
    *KNOB_PARAMS,
    BUDGET,
    HEADROOM,
    MODEL,
)
# Which framework's runs and models the Sizing, Models and Sweeps pages show; apart from
# PARAMETERS, so writing a question leaves it alone (`write_framework` writes it).
FRAMEWORK = "framework"
ASK = "ask"
# The questions that can head the Sizing page (`application.sizing.KINDS`), the default first.
ASKED = ("buy", "image", "batch")
# What the Models page keeps in the URL.
VIEW_PARAMETERS: tuple[str, ...] = (WORKLOAD, MACHINE)

Params = Mapping[str, str | list[str]]


def plain(sentence: str) -> str:
    """``sentence`` escaped for Streamlit's Markdown, so it shows exactly as written."""
    return safe_text.plain(sentence)


def to_params(state: SizingState) -> dict[str, str]:
    """The query parameters that reproduce ``state``."""
    shape = state.image_shape
    params = {
        WORKLOAD: state.workload,
        **({MACHINE: state.machine} if state.machine is not None else {}),
        IMAGE: str(shape[0]) if state.one_side else "x".join(map(str, shape)),
        BATCH: str(state.batch_size),
        **{KNOB_OFFERS[knob].param: str(value) for knob, value in state.knobs},
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


def _one(value: str | list[str]) -> str:
    """A repeated parameter counts by its last value, as ``st.query_params`` reads it."""
    return value[-1] if isinstance(value, list) else value


def _ignored(name: str, text: str, reason: str, instead: str) -> str:
    return f"The link's {name}={text!r} was ignored: {reason}. Showing {name}={instead} instead."


def workload_from(params: Params) -> tuple[str, list[str]]:
    """The workload a link asks for (the default without one), and a sentence if unknown."""
    if WORKLOAD not in params:
        return DEFAULT_WORKLOAD, []
    text = _one(params[WORKLOAD])
    if text in workloads.WORKLOADS:
        return text, []
    reason = f"the workloads are {_listed(list(workloads.WORKLOADS))}"
    return DEFAULT_WORKLOAD, [_ignored(WORKLOAD, text, reason, DEFAULT_WORKLOAD)]


def framework_from(params: Params, offered: Sequence[str], default: str) -> tuple[str, list[str]]:
    """The framework a link asks for, and a sentence if it is not among ``offered`` (the
    frameworks the database has runs of); without the parameter: ``default``."""
    if FRAMEWORK not in params:
        return default, []
    text = _one(params[FRAMEWORK])
    if text in offered:
        return text, []
    reason = f"the frameworks with runs here are {_listed(list(offered))}"
    return default, [_ignored(FRAMEWORK, text, reason, default)]


def ask_from(params: Params) -> tuple[str, list[str]]:
    """The question a link puts first (``buy`` without one), and a sentence if unknown."""
    if ASK not in params:
        return ASKED[0], []
    text = _one(params[ASK])
    if text in ASKED:
        return text, []
    return ASKED[0], [_ignored(ASK, text, f"the questions are {_listed(ASKED)}", ASKED[0])]


def machine_from(params: Params, offered: Sequence[str], default: str) -> tuple[str, list[str]]:
    """The machine profile a link asks for, and a sentence if it is not among ``offered``.

    offered : the option keys the page offers this workload (profile keys,
    `presentation.machines.MIXED`); a unique prefix of one names it, as
    ``--machine`` does. Without the parameter: ``default``.
    """
    if MACHINE not in params:
        return default, []
    text = _one(params[MACHINE])
    wanted = text.strip().lower()
    matches = [key for key in offered if wanted and key.startswith(wanted)]
    if len(matches) == 1:
        return matches[0], []
    reason = (
        f"it starts {len(matches)} profiles' keys; give more of it"
        if matches
        else f"the machine profiles of this workload are {_listed(list(offered))}"
    )
    return default, [_ignored(MACHINE, text, reason, default)]


def _image(text: str, choices: SizingChoices) -> dict[str, Any]:
    try:
        shape = workloads.get(choices.workload).parse_image_shape(text)
    except ConfigError as error:
        raise ValueError(str(error)) from None
    for side in shape:
        if side not in choices.sides:
            offered = nearest_sides(side, choices.sides)
            raise ValueError(
                f"side {side} is not offered: sides are {sides_text(choices.sides)} (nearest: "
                f"{' or '.join(map(str, offered))})"
            )
    return {"image_shape": tuple(shape), "one_side": "x" not in text.lower()}


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


def _knob(param: str, text: str, choices: SizingChoices, state: SizingState) -> dict[str, Any]:
    knob = KNOB_PARAMS[param]
    if knob not in choices.knobs:
        title = workloads.get(choices.workload).TITLE
        raise ValueError(f"the {title} has no {KNOB_OFFERS[knob].label.lower()} to set")
    offered = choices.knobs[knob]
    what = KNOB_OFFERS[knob].label.lower()
    if all(isinstance(value, str) for value in offered):
        if text not in offered:
            raise ValueError(f"{what} must be one of {_listed(offered)}")
        value: Any = text
    else:
        value = _whole(text, offered, what)
    return {"knobs": tuple((name, value if name == knob else old) for name, old in state.knobs)}


def _model(text: str, choices: SizingChoices) -> str:
    if not choices.models:
        raise ValueError(
            f"no model is stored yet (run `memplan evaluate --workload {choices.workload}`)"
        )
    if text not in choices.models:
        raise ValueError(f"the stored models are {_listed(choices.models)}")
    return text


def from_params(
    params: Params, choices: SizingChoices, default: SizingState
) -> tuple[SizingState, list[str]]:
    """The state a link asks for, and one sentence per value it could not take.

    Each missing or invalid parameter takes its value from ``default``;
    parameters this page does not know are left alone. The workload and the
    machine are `workload_from`'s and `machine_from`'s business: ``choices`` and
    ``default`` are already theirs.
    """
    state, problems = default, []
    readers = {
        IMAGE: lambda text: _image(text, choices),
        BATCH: lambda text: {"batch_size": _whole(text, choices.batch_sizes, "batch size")},
        **{
            param: (lambda text, param=param: _knob(param, text, choices, state))
            for param in KNOB_PARAMS
        },
        BUDGET: lambda text: {
            "budget_gib": _number(
                text, choices.min_budget_gib, choices.max_budget_gib, "the budget (GiB)"
            )
        },
        HEADROOM: lambda text: {
            "headroom_pct": _number(text, 0, choices.max_headroom_pct, "headroom (%)")
        },
        MODEL: lambda text: {"model": _model(text, choices)},
    }
    for name, read_value in readers.items():
        if name not in params:
            continue
        text = _one(params[name])
        try:
            state = replace(state, **read_value(text))
        except ValueError as reason:
            instead = to_params(default).get(name, "none")
            problems.append(_ignored(name, text, str(reason), instead))
    return state, problems


def image_label(state: SizingState) -> str:
    """``128^3`` for a cube, ``224^2`` for a square, ``240x240x144`` otherwise."""
    return state.image_label


def current() -> dict[str, str | list[str]]:
    """This session's URL query parameters."""
    return st.query_params.to_dict()


def read(choices: SizingChoices, default: SizingState) -> tuple[SizingState, list[str]]:
    """`from_params` over this session's URL (``st.query_params``)."""
    return from_params(current(), choices, default)


def _replace(wanted: dict[str, str], owned: Sequence[str]) -> None:
    """Put ``wanted`` in this session's URL in place of the ``owned`` parameters (others stay)."""
    current_params = current()
    stale = [name for name in owned if name in current_params and name not in wanted]
    if not stale and all(current_params.get(name) == value for name, value in wanted.items()):
        return
    kept = {name: value for name, value in current_params.items() if name not in owned}
    st.query_params.from_dict(kept | wanted)


def write(state: SizingState) -> None:
    """Put ``state`` in this session's URL, replacing the page's parameters (others stay)."""
    _replace(to_params(state), PARAMETERS)


def write_framework(framework: str) -> None:
    """Put ``framework`` in this session's URL (others stay)."""
    _replace({FRAMEWORK: framework}, (FRAMEWORK,))


def write_ask(kind: str) -> None:
    """Put the question heading the page in this session's URL (others stay); the default
    is left out, as a link without it asks it."""
    _replace({ASK: kind} if kind != ASKED[0] else {}, (ASK,))


def write_view(workload: str, machine: str) -> None:
    """Put the Models page's workload and machine in this session's URL (others stay)."""
    _replace({WORKLOAD: workload, MACHINE: machine}, VIEW_PARAMETERS)
