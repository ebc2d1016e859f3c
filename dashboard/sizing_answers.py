"""The Sizing page's "What fits" answers: largest image, largest batch, memory to buy.

Each is one `modeling.sizing` answer for the chosen model of the chosen machine
profile, cached on exactly what the question depends on, shown with its caption,
the model, bound and machine it rests on, and its warning in words. Stored text
(a model's name, a bound's source, a CPU's name) is shown as text
(`presentation.text.plain`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard import data
from dashboard.machine_panel import Picked
from modeling import sizing
from modeling.errors import ModelingError
from presentation import sizing_view, workload_labels
from presentation.sizing_view import SizingState
from presentation.text import plain

QUESTIONS = {
    "image": sizing.largest_image_side,
    "batch": sizing.largest_batch,
    "buy": sizing.memory_to_buy,
}


@st.cache_data(show_spinner=False, max_entries=256)
def answer(
    db_path: Path,
    db_version: data.Version,
    workload: str,
    machine: str | None,
    model_name: str,
    question: str,
    **arguments: object,
) -> object:
    """One `modeling.sizing` answer for ``workload`` on ``machine``, or the `ModelingError`
    message.

    Cached on exactly what the question depends on: moving the batch slider does
    not rescan every batch size for the largest batch.
    """
    models = data.predictors(db_path, db_version, workload, machine)
    model = next(p for p in models if p.name == model_name)
    try:
        return QUESTIONS[question](model, workload=workload, **arguments)
    except ModelingError as error:
        return str(error)


def show_answer(
    found: Any,
    label: str,
    value: Callable[[Any], str],
    caption: Callable[[Any], str],
    machine: str,
) -> None:
    """One sizing answer: the value, what it needs, the model, bound and machine, any warning.

    machine : whose models answer, in words (`Picked.words`, not escaped).
    """
    if isinstance(found, str):
        st.error(plain(found))
        return
    st.metric(label, value(found))
    st.caption(caption(found))
    st.caption(
        f"Model {plain(found.basis.model)}; bound: {plain(found.basis.bound)}; {plain(machine)}."
    )
    if found.basis.warning:
        st.warning(plain(found.basis.warning))


def render(
    db: Path, version: data.Version, state: SizingState, usable: int, picked: Picked
) -> None:
    """Largest image at this batch, largest batch at this image, memory to buy."""
    image_col, batch_col, buy_col = st.columns(3)
    workload, knobs, dims = state.workload, dict(state.knobs), len(state.image_shape)
    machine, words = picked.machine, picked.words
    solid = workload_labels.SOLIDS[dims]
    with image_col:
        show_answer(
            answer(
                db,
                version,
                workload,
                machine,
                state.model,
                "image",
                budget_bytes=usable,
                batch_size=state.batch_size,
                knobs=knobs,
            ),
            f"Largest {solid} at batch {state.batch_size}",
            lambda found: workload_labels.power(found.side, dims),
            lambda found: sizing_view.image_caption(found, dims),
            words,
        )
    with batch_col:
        show_answer(
            answer(
                db,
                version,
                workload,
                machine,
                state.model,
                "batch",
                budget_bytes=usable,
                image_shape=state.image_shape,
                knobs=knobs,
            ),
            f"Largest batch at {state.image_label}",
            lambda found: str(found.batch_size),
            sizing_view.batch_caption,
            words,
        )
    with buy_col:
        show_answer(
            answer(
                db,
                version,
                workload,
                machine,
                state.model,
                "buy",
                image_shape=state.image_shape,
                batch_size=state.batch_size,
                headroom=state.headroom_pct / 100,
                knobs=knobs,
            ),
            "Memory to buy",
            lambda found: f"{found.memory_gb} GB",
            sizing_view.memory_caption,
            words,
        )
