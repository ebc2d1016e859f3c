"""The Sizing page's answers: the memory to buy, the largest image and the largest batch.

Each is `application.sizing.answer` to the page's question (`SizingState.question`),
the same function `memplan size` and `memplan report` answer through, cached on
the question and the database version: moving the batch slider does not rescan
every batch size for the largest batch. Each is shown with its caption, the model,
bound and machine it rests on, and its warning in words; a question without an
answer shows why (`application.sizing.SizingError`). Stored text (a model's name,
a bound's source, a CPU's name) is shown as text (`presentation.text.plain`).

The memory to buy comes first on the page, under the question: it needs no budget.
The largest image and batch also say what the runs make of them
(`application.verify`): verified or refuted by a run, or a prediction, with a
"Verify by measuring" button that launches the two-point sweep that measures the
answer and the next size up, through `profiling.launcher` as the sidebar launches
a grid (its progress shows there). The button is disabled, with the reason, where
it cannot help: the answer already measured, a read-only dashboard, another
machine's answer, a budget above what this machine can safely give a run, or a
sweep already running.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import streamlit as st

from application import sizing, verify
from application.sizing import MachineFacts, SizingAnswer, SizingError
from application.verify import Claim, Verdict
from core.errors import MemplanError
from dashboard import data, sidebar
from dashboard.machine_panel import Picked
from presentation import sizing_view, verification, workload_labels
from presentation.sizing_view import SizingState
from presentation.text import plain
from profiling import launcher

VERIFY_LABEL = "Verify by measuring"
VERIFY_HELP = (
    "Measures the answer and the next size up on this machine, with what training may use "
    "of the budget as the memory limit (the next size up is stopped there), and stores both "
    "as runs; the sidebar shows the progress."
)
# How each verdict is shown: settled by a run in colour, a prediction as a plain line.
VERDICT_TONES = {
    Verdict.VERIFIED: st.success,
    Verdict.REFUTED: st.error,
    Verdict.INCONCLUSIVE: st.warning,
    Verdict.PREDICTION: st.caption,
}
BUY_LABEL = "Memory to buy"


def facts_of(picked: Picked) -> MachineFacts:
    """The machine the page answers for, by its facts."""
    return MachineFacts.of(picked.machine, picked.choice.profile, picked.choice.label)


@st.cache_data(show_spinner=False, max_entries=256)
def answer(
    db_path: Path, db_version: data.Version, question: sizing.SizingQuestion, facts: MachineFacts
) -> SizingAnswer:
    """`application.sizing.answer` to ``question`` from its profile's stored models.

    Cached on exactly what the answer depends on: the question and the database's
    version. Raises `SizingError` (not cached: it fails at the first sizes scanned).
    """
    workload, machine = question.workload, question.machine
    models = sizing.models_of(
        workload,
        machine,
        data.predictors(db_path, db_version, workload, machine),
        data.scores(db_path, db_version, workload, machine),
        facts,
        db_path,
    )
    return sizing.answer(question, models)


def ask(
    db: Path, version: data.Version, state: SizingState, kind: str, picked: Picked
) -> SizingAnswer | None:
    """The answer to the page's question of ``kind``, or None with why shown on the page."""
    try:
        return answer(db, version, state.question(kind, picked.machine), facts_of(picked))
    except SizingError as error:
        st.error(plain(error))
        return None


def show_answer(
    found: SizingAnswer, label: str, value: str, caption: str, machine: str, help: str = ""
) -> None:
    """One sizing answer: the value, what it needs, the model, bound and machine, any warning.

    machine : whose models answer, in words (`Picked.words`, not escaped).
    """
    st.metric(label, value, help=help or None)
    st.caption(caption)
    st.caption(f"Model {plain(found.model)}; bound: {plain(found.bound)}; {plain(machine)}.")
    for warning in found.warnings:
        st.warning(plain(warning))


def buy(db: Path, version: data.Version, state: SizingState, picked: Picked) -> None:
    """The memory to buy for the question's image and batch: what a buyer asks first."""
    found = ask(db, version, state, sizing.BUY, picked)
    if found is None:
        return
    show_answer(
        found,
        BUY_LABEL,  # under the question's heading: the image and batch asked
        f"{found.figures['memory_gb']} GB",
        sizing_view.memory_caption(found.found),
        picked.words,
        help="The smallest server memory holding the upper bound plus the headroom; "
        "it needs no budget.",
    )


def why_not_verify(db: Path, claim: Claim, said: verify.Verification, picked: Picked) -> str:
    """Why the Verify button cannot help now, in words (not escaped); empty when it can."""
    if said.verdict is not Verdict.PREDICTION:
        return "Already measured (above): a sweep resumes past a point it has measured."
    if data.read_only():
        return (
            f"This dashboard is read-only ({data.READ_ONLY_ENV_VAR} is set): it measures nothing."
        )
    refused = verify.refusal(claim, picked.here.key, verify.safe_limit_bytes())
    if refused:
        return f"Cannot verify here: {refused}."
    if sidebar.sweep_running(db):
        return "A sweep is running (see the sidebar): verify when it has finished."
    return ""


def launch(db: Path, claim: Claim) -> None:
    """Start the sweep that verifies ``claim``, as the sidebar starts one; a refusal is shown."""
    try:
        launcher.launch(db, verify.sweep_request(claim))
    except MemplanError as error:  # a sweep started meanwhile, elsewhere
        st.error(plain(error))
        return
    st.rerun()  # the sidebar shows the sweep from the next run on


def verified(db: Path, claim: Claim, runs: pd.DataFrame, picked: Picked) -> None:
    """What the runs say of the answer, and the button that measures it."""
    said = verify.verify(claim, runs, db)
    text = verification.markdown(said)
    VERDICT_TONES[said.verdict](text[:1].upper() + text[1:] + ".")
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


def _verifiable(
    db: Path,
    version: data.Version,
    state: SizingState,
    picked: Picked,
    runs: pd.DataFrame,
    kind: str,
    shown: Callable[[SizingAnswer], tuple[str, str, str]],
) -> None:
    found = ask(db, version, state, kind, picked)
    if found is None:
        return
    label, value, caption = shown(found)
    show_answer(found, label, value, caption, picked.words)
    if found.claim is not None:
        verified(db, found.claim, runs, picked)


def render(
    db: Path, version: data.Version, state: SizingState, picked: Picked, runs: pd.DataFrame
) -> None:
    """Largest image at this batch and largest batch at this image, each with its verdict.

    runs : the runs of the machine profile answered for; the largest image and
    batch say what they make of the answer.
    """
    dims = len(state.image_shape)
    solid = workload_labels.SOLIDS[dims]
    image_col, batch_col = st.columns(2)
    with image_col:
        _verifiable(
            db,
            version,
            state,
            picked,
            runs,
            sizing.IMAGE,
            lambda found: (
                f"Largest {solid} at batch {state.batch_size}",
                workload_labels.power(found.figures["side"], dims),
                sizing_view.image_caption(found.found, dims),
            ),
        )
    with batch_col:
        _verifiable(
            db,
            version,
            state,
            picked,
            runs,
            sizing.BATCH,
            lambda found: (
                f"Largest batch at {state.image_label}",
                sizing_view.batch_figure(found.found),
                sizing_view.batch_caption(found.found),
            ),
        )
