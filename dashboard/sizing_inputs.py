"""The Sizing page's question, as widgets: the workload, the image, the batch, the network's
knobs, the budget and its headroom, the model.

Each widget starts at the link's value (`dashboard.query_state`) unless the user
has set it, and keeps its value across a page switch (``persist_state``); each
workload keeps its own question. A typed budget or headroom that cannot be answered
says why right under it (`presentation.sizing_view.input_problems`).
"""

from __future__ import annotations

import functools
from typing import Any

import streamlit as st

from core import workloads
from presentation import sizing_view, workload_labels
from presentation.sizing_view import SizingChoices, SizingState
from presentation.text import plain

# The shape radio's two modes, per number of image dimensions.
SHAPE_MODES = {3: ("Cube", "D × H × W"), 2: ("Square", "H × W")}
# The inputs outlive a page switch (the URL does not: navigation clears it), so
# coming back to Sizing shows the same question; a new session starts from the URL.
PERSIST = "session"
WORKLOAD_KEY = "sizing_workload"
# Keys of the widgets every workload shares; the others are per workload (`key`).
SHARED_KEYS = {"budget": "sizing_budget", "headroom": "sizing_headroom"}


def key(workload: str, name: str) -> str:
    """The widget key of ``name`` for ``workload``: each workload keeps its own question."""
    return SHARED_KEYS.get(name) or f"sizing_{workload}_{name}"


def model_key(workload: str, machine: str | None) -> str:
    """The model selector's key: one per machine profile, so a model picked for one profile
    never answers for another (each opens on its own default, as a link to it does)."""
    return f"{key(workload, 'model')}_{machine or 'mixed'}"


def seed(widget_key: str, value: object, options: tuple | None = None) -> None:
    """Start a widget at ``value`` (from the URL) unless the user has already set it."""
    current = st.session_state.get(widget_key)
    if widget_key not in st.session_state or (options is not None and current not in options):
        st.session_state[widget_key] = value


def choose_workload(linked: str) -> str:
    """The workload selector, started at the link's workload."""
    names = workload_labels.names()
    seed(WORKLOAD_KEY, linked, tuple(names))
    return st.selectbox(
        "Workload",
        names,
        key=WORKLOAD_KEY,
        persist_state=PERSIST,
        format_func=workload_labels.title,
        help="The network whose training memory to size.",
    )


def _on_typed(slider_key: str, offered: tuple[int, ...], what: str) -> None:
    """A typed value moves its slider (to the nearest offered value, said under it)."""
    typed = st.session_state[f"{slider_key}_typed"]
    if typed is None:
        return
    value, problem = sizing_view.typed_value(typed, offered, what)
    st.session_state[slider_key] = value
    st.session_state[f"{slider_key}_typed_problem"] = problem


def typed_beside(slider_key: str, offered: tuple[int, ...], what: str) -> None:
    """A number typed in place of sliding: a batch of 16 is not 15 key presses away.

    It shows the slider's value, and a value typed moves the slider before the page reruns
    (`_on_typed`), so the slider, its key and the URL stay the one source of the value.
    """
    typed_key = f"{slider_key}_typed"
    st.session_state[typed_key] = int(st.session_state[slider_key])
    st.number_input(
        f"Or type the {what}",
        step=1,
        key=typed_key,
        on_change=_on_typed,
        args=(slider_key, offered, what),
        help=f"Offered: {sizing_view.sides_text(offered)}; another value takes the nearest.",
    )
    problem = st.session_state.pop(f"{typed_key}_problem", None)
    if problem:
        st.caption(plain(problem))


def image_inputs(start: SizingState, choices: SizingChoices) -> tuple[tuple[int, ...], bool]:
    """The image shape: one side of a cube or square, or every side."""
    workload = choices.workload
    one, every = SHAPE_MODES[choices.dims]
    seed(key(workload, "shape"), one if start.one_side else every)
    mode = st.radio(
        "Image shape",
        [one, every],
        key=key(workload, "shape"),
        persist_state=PERSIST,
        horizontal=True,
    )
    sides, side_help = choices.sides, sizing_view.side_help(choices)
    if mode == one:
        seed(key(workload, "side"), max(start.image_shape), sides)
        side = st.select_slider(
            "Image side",
            options=sides,
            key=key(workload, "side"),
            persist_state=PERSIST,
            help=side_help,
        )
        typed_beside(key(workload, "side"), tuple(sides), "image side")
        return (side,) * choices.dims, True
    picked = []
    for name, value in zip(workloads.get(workload).SHAPE_COLUMNS, start.image_shape, strict=True):
        seed(key(workload, name), value, sides)
        picked.append(
            st.select_slider(
                name.capitalize(),
                options=sides,
                key=key(workload, name),
                persist_state=PERSIST,
                help=side_help,
            )
        )
    return tuple(picked), False


def _batch_input(start: SizingState, choices: SizingChoices) -> int:
    workload = choices.workload
    seed(key(workload, "batch"), start.batch_size, choices.batch_sizes)
    batch = st.select_slider(
        "Batch size", options=choices.batch_sizes, key=key(workload, "batch"), persist_state=PERSIST
    )
    typed_beside(key(workload, "batch"), tuple(choices.batch_sizes), "batch size")
    return int(batch)


def _knob_inputs(start: SizingState, choices: SizingChoices) -> tuple[tuple[str, Any], ...]:
    """The offered knobs, one above the other, not two abreast: in the question's third of
    the page, at 1024 px two abreast read "floa" for float32 (issue 26)."""
    workload = choices.workload
    knobs = []
    for knob, offered in choices.knobs.items():
        offer = sizing_view.KNOB_OFFERS[knob]
        seed(key(workload, knob), start.knob(knob), offered)
        value = st.selectbox(
            offer.label,
            offered,
            key=key(workload, knob),
            persist_state=PERSIST,
            format_func=functools.partial(choices.knob_label, knob),
            help=choices.knob_help(knob),
        )
        knobs.append((knob, value))
    return sizing_view.knob_items(dict(knobs))


def _memory_inputs(start: SizingState, choices: SizingChoices) -> tuple[float, float]:
    """The budget (GiB) and headroom (%), each said wrong right under the pair when it is."""
    workload = choices.workload
    # No min_value / max_value on the typed numbers: out of range, Streamlit would refuse
    # the value silently (the message only on hover) and the answers would keep the last
    # one. Every value reaches the page, which says under the input what is wrong with it.
    seed(key(workload, "budget"), float(start.budget_gib))
    budget = st.number_input(
        "Memory budget (GiB)",
        step=16.0,
        key=key(workload, "budget"),
        persist_state=PERSIST,
        help="The machine's host RAM (its main memory, not a GPU's), in GiB (server 'GB' "
        "are binary: 256 GB = 256 GiB).",
    )
    seed(key(workload, "headroom"), float(start.headroom_pct))
    headroom = st.number_input(
        "Headroom (%)",
        step=5.0,
        key=key(workload, "headroom"),
        persist_state=PERSIST,
        help="Kept free for the OS, the data pipeline and other processes, on top of the bound.",
    )
    # Right under the pair, at the question's width: inside a half column at 1024 px
    # the message would wrap a few letters a line.
    for problem in (
        sizing_view.budget_problem(budget, choices),
        sizing_view.headroom_problem(headroom, choices),
    ):
        if problem:
            st.error(plain(problem))
    return float(budget), float(headroom)


def _model_input(start: SizingState, choices: SizingChoices, titles: dict[str, str]) -> str | None:
    workload = choices.workload
    if choices.models:
        seed(model_key(workload, start.machine), start.model, choices.models)
    return st.selectbox(
        "Model",
        choices.models,
        key=model_key(workload, start.machine),
        persist_state=PERSIST,
        format_func=lambda name: titles[name],
        disabled=not choices.models,
        placeholder="no stored models",
        help="Default: the stored model with the lowest mean error on its weakest split "
        "(random, extrapolation or knob).",
    )


ASK_KEY = "sizing_ask"
# The question heading the page, in `dashboard.query_state.ASKED`'s order.
ASK_LABELS = {
    "buy": "Host RAM to buy",
    "image": "Largest image that fits",
    "batch": "Largest batch that fits",
}


def choose_ask(linked: str) -> str:
    """Which answer heads the page: the memory to buy (a buyer's), the largest image or
    batch (a researcher's); started at the link's."""
    seed(ASK_KEY, linked, tuple(ASK_LABELS))
    return st.radio(
        "Your question",
        list(ASK_LABELS),
        key=ASK_KEY,
        persist_state=PERSIST,
        format_func=ASK_LABELS.__getitem__,
        help="Whose answer comes first; every answer is on the page below it.",
    )


def inputs(
    start: SizingState, choices: SizingChoices, titles: dict[str, str], memory_place: Any
) -> SizingState:
    """The question, as widgets started from ``start``; returns what they say now.

    memory_place : the container the budget and headroom are drawn in (beside the
    headline answer, at the top of the page, as a researcher's question needs them).
    """
    image_shape, one_side = image_inputs(start, choices)
    batch = _batch_input(start, choices)
    knobs = _knob_inputs(start, choices)
    with memory_place:
        budget_gib, headroom_pct = _memory_inputs(start, choices)
    return SizingState(
        workload=choices.workload,
        image_shape=image_shape,
        one_side=one_side,
        batch_size=batch,
        knobs=knobs,
        budget_gib=budget_gib,
        headroom_pct=headroom_pct,
        model=_model_input(start, choices, titles),
        machine=start.machine,
    )
