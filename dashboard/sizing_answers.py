"""The Sizing page's "What fits" answers: largest image, largest batch, memory to buy.

Each is one `modeling.sizing` answer for the chosen model of the chosen machine
profile, cached on exactly what the question depends on, shown with its caption,
the model, bound and machine it rests on, and its warning in words. Stored text
(a model's name, a bound's source, a CPU's name) is shown as text
(`presentation.text.plain`).

The largest image and the largest batch also say what the runs make of them
(`presentation.verification`): verified or refuted by a run, or a prediction,
with a "Verify by measuring" button that launches the two-point sweep that
measures the answer and the next size up, through `profiling.launcher` as the
sidebar launches a grid (its progress shows there). The button is disabled,
with the reason, where it cannot help: the answer already measured, a read-only
dashboard, another machine's answer, a budget above what this machine can
safely give a run, or a sweep already running.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.errors import MemplanError
from dashboard import data, sidebar
from dashboard.machine_panel import Picked
from modeling import sizing
from modeling.errors import ModelingError
from presentation import sizing_view, verification, workload_labels
from presentation.sizing_view import SizingState
from presentation.text import plain
from presentation.verification import Claim, Verdict
from profiling import launcher

QUESTIONS = {
    "image": sizing.largest_image_side,
    "batch": sizing.largest_batch,
    "buy": sizing.memory_to_buy,
}
VERIFY_LABEL = "Verify by measuring"
VERIFY_HELP = (
    "Measures the answer and the next size up on this machine, with the answer's budget "
    "as the memory limit (the next size up is stopped there), and stores both as runs; "
    "the sidebar shows the progress."
)
# How each verdict is shown: settled by a run in colour, a prediction as a plain line.
VERDICT_TONES = {
    Verdict.VERIFIED: st.success,
    Verdict.REFUTED: st.error,
    Verdict.INCONCLUSIVE: st.warning,
    Verdict.PREDICTION: st.caption,
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


def why_not_verify(db: Path, claim: Claim, said: verification.Verification, picked: Picked) -> str:
    """Why the Verify button cannot help now, in words (not escaped); empty when it can."""
    if said.verdict is not Verdict.PREDICTION:
        return "Already measured (above): a sweep resumes past a point it has measured."
    if data.read_only():
        return (
            f"This dashboard is read-only ({data.READ_ONLY_ENV_VAR} is set): it measures nothing."
        )
    refused = verification.refusal(claim, picked.here.key, verification.safe_limit_bytes())
    if refused:
        return f"Cannot verify here: {refused}."
    if sidebar.sweep_running(db):
        return "A sweep is running (see the sidebar): verify when it has finished."
    return ""


def launch(db: Path, claim: Claim) -> None:
    """Start the sweep that verifies ``claim``, as the sidebar starts one; a refusal is shown."""
    try:
        launcher.launch(db, verification.sweep_request(claim))
    except MemplanError as error:  # a sweep started meanwhile, elsewhere
        st.error(plain(error))
        return
    st.rerun()  # the sidebar shows the sweep from the next run on


def verified(db: Path, claim: Claim, runs: pd.DataFrame, picked: Picked) -> None:
    """What the runs say of the answer, and the button that measures it."""
    said = verification.verify(claim, runs, db)
    VERDICT_TONES[said.verdict](said.markdown[:1].upper() + said.markdown[1:] + ".")
    reason = why_not_verify(db, claim, said, picked)
    if st.button(
        VERIFY_LABEL,
        key=f"sizing_verify_{claim.question}",
        disabled=bool(reason),
        help=VERIFY_HELP,
        icon=":material/science:",
    ):
        launch(db, claim)
    if reason:
        st.caption(plain(reason))


def render(
    db: Path,
    version: data.Version,
    state: SizingState,
    usable: int,
    picked: Picked,
    runs: pd.DataFrame,
) -> None:
    """Largest image at this batch, largest batch at this image, memory to buy.

    runs : the runs of the machine profile answered for; the largest image and
    batch say what they make of the answer.
    """
    image_col, batch_col, buy_col = st.columns(3)
    workload, knobs, dims = state.workload, dict(state.knobs), len(state.image_shape)
    machine, words = picked.machine, picked.words
    label = picked.choice.label
    solid = workload_labels.SOLIDS[dims]
    with image_col:
        found = answer(
            db,
            version,
            workload,
            machine,
            state.model,
            "image",
            budget_bytes=usable,
            batch_size=state.batch_size,
            knobs=knobs,
        )
        show_answer(
            found,
            f"Largest {solid} at batch {state.batch_size}",
            lambda found: workload_labels.power(found.side, dims),
            lambda found: sizing_view.image_caption(found, dims),
            words,
        )
        if not isinstance(found, str):
            claim = verification.image_claim(found, workload, knobs, machine, label)
            verified(db, claim, runs, picked)
    with batch_col:
        found = answer(
            db,
            version,
            workload,
            machine,
            state.model,
            "batch",
            budget_bytes=usable,
            image_shape=state.image_shape,
            knobs=knobs,
        )
        show_answer(
            found,
            f"Largest batch at {state.image_label}",
            lambda found: str(found.batch_size),
            sizing_view.batch_caption,
            words,
        )
        if not isinstance(found, str):
            claim = verification.batch_claim(found, workload, knobs, machine, label)
            verified(db, claim, runs, picked)
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
