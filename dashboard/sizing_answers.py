"""The Sizing page's answers: the verdict, the memory to buy, the largest image and batch.

Each is `application.sizing.answer` to the page's question (`SizingState.question`)
from `application.sizing.models_of`, the same functions `memplan size` and `memplan
report` answer through (on this machine's default without models, another machine's
profile, widened), cached on the question, the machine and the database version:
moving the batch slider does not rescan every batch size for the largest batch. The
decision the verdict shows is `application.sizing.decide`, cached the same way
(`decision`). Each answer is shown with its caption, the model, bound and machine it
rests on, and its warning in words; a question without an answer shows why
(`application.sizing.SizingError`). Stored text (a model's name, a bound's source, a
CPU's name) is shown as text (`presentation.text.plain`).

The verdict (`verdict`) and every model's estimate (`every_model`) word that
decision (`presentation.sizing_text`). The memory to buy comes first on the page,
under the question: it needs no budget. The largest image and batch also say what
the runs make of them (`application.verify`): verified or refuted by a run, or a prediction, with a
"Verify by measuring" button that launches the two-point sweep that measures the
answer and the next size up, through `profiling.launcher` as the sidebar launches
a grid (its progress shows there). The button is disabled, with the reason, where
it cannot help: the answer already measured, a read-only dashboard, another
machine's answer, a budget above what this machine can safely give a run, or a
sweep already running.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import altair as alt
import pandas as pd
import streamlit as st

from application import sizing, sweep_job, verify, verify_here, widening
from application.machines import MachineChoice
from application.sizing import Decision, Models, SizingAnswer, SizingError, SizingQuestion
from application.verify import Claim, Verdict
from core import frameworks, workloads
from core.errors import MemplanError
from core.published import STUDY_BATCH_SIZE, STUDY_IMAGE_SHAPE
from core.units import GIB, approx_gib
from dashboard import chart_draw, data, published_panel, sidebar
from dashboard.machine_panel import Picked
from presentation import (
    bound_words,
    charts_sizing,
    charts_study,
    curves,
    sizing_text,
    verification,
    workload_labels,
)
from presentation.sizing_view import SizingChoices, SizingState
from presentation.text import plain, sentence

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
# Image side steps either way whose every batch a new image's predictions include: an
# "Image side" move within them finds its predictions made.
NEAR_SIDES = 4


@dataclass(frozen=True)
class Asked:
    """What every answer on the page is asked with: the database, the question, the machine
    profile answered for, and that profile's runs (any status)."""

    db: Path
    version: data.Version
    state: SizingState
    picked: Picked
    runs: pd.DataFrame = field(compare=False)

    @property
    def choice(self) -> MachineChoice:
        """The machine profile the page answers for, as `memplan size` would choose it: on
        this machine's default without models, another machine's, widened (its transfer)."""
        return self.picked.choice

    def question(self, kind: str) -> SizingQuestion:
        return self.state.question(kind, self.picked.machine)


@st.cache_resource(show_spinner=False, max_entries=64)
def _models(
    db_path: Path, db_version: data.Version, workload: str, choice: MachineChoice
) -> Models:
    """The stored models of ``workload`` on the profile ``choice`` names, from the page's
    cached loaders, as `application.sizing.models_of` makes them for `memplan size` too
    (widened where ``choice`` answers for another machine): kept per database version and
    choice, as the loaders are (choosing the default model reads the scores, ~30 ms a call,
    and every answer asks for them)."""
    machine = choice.key
    fitted = data.fit_evidence(db_path, db_version, workload, machine)
    loaded = sizing.Loaded(
        # Every knob value the page offers may be one a model never measured.
        widening.with_knob_evidence(
            data.predictors(db_path, db_version, workload, machine),
            data.knob_evidence(db_path, db_version, workload),
        ),
        data.scores(db_path, db_version, workload, machine),
        db_path,
        None if fitted is None else fitted.steps,
        data.runs(db_path, db_version),
    )
    return sizing.models_of(workload, choice, loaded)


def models_for(asked: Asked) -> Models:
    """The stored models the page's questions are put to."""
    return _models(asked.db, asked.version, asked.state.workload, asked.choice)


@st.cache_data(show_spinner=False, max_entries=256)
def answer(
    db_path: Path, db_version: data.Version, question: SizingQuestion, choice: MachineChoice
) -> SizingAnswer:
    """`application.sizing.answer` to ``question`` from its profile's stored models.

    Cached on exactly what the answer depends on: the question, the machine choice (the
    same profile answers wider for another machine) and the database's version. Raises
    `SizingError` (not cached: it fails at the first sizes scanned).
    """
    return sizing.answer(question, _models(db_path, db_version, question.workload, choice))


@st.cache_data(show_spinner=False, max_entries=256)
def decision(
    db_path: Path,
    db_version: data.Version,
    question: SizingQuestion,
    choice: MachineChoice,
    _runs: pd.DataFrame,
) -> Decision:
    """`application.sizing.decide` on ``question``: cached on the question and the database's
    version, which fix ``_runs`` (the profile's runs, so not hashed)."""
    models = _models(db_path, db_version, question.workload, choice)
    return sizing.decide(question, models, _runs)


@st.cache_resource(show_spinner=False, max_entries=64)
def study_panel(
    db_path: Path,
    db_version: data.Version,
    workload: str,
    choice: MachineChoice,
    _runs: pd.DataFrame,
) -> tuple[pd.DataFrame, alt.LayerChart]:
    """The models credible for the published study's configuration, each one's prediction
    of it (`presentation.charts_study.study_predictions`), and the panel's chart of them
    beside ``_runs`` (`published_panel.chart_of`): cached on the machine and the
    database's version, which fix ``_runs``, as no input of the page changes them (they
    were made at every rerun, ~0.5 s)."""
    models = _models(db_path, db_version, workload, choice)
    study = workloads.get(workload).Config(STUDY_IMAGE_SHAPE, STUDY_BATCH_SIZE)
    credible = sizing.credible_at(models, study)
    knobs = workload_labels.knob_defaults(workload)
    predictions = charts_study.study_predictions(credible, knobs)
    return predictions, published_panel.chart_of(predictions, curves.measured_points(_runs))


def predict_ahead(asked: Asked, choices: SizingChoices) -> None:
    """Predict the configurations the sliders reach from the question in one call per
    model (`Predictor.remember`), so the next moves find their predictions made: every
    batch of its image and, for a square or cube, of the images `NEAR_SIDES` side steps
    either way.

    A forest predicts a thousand rows in about the time one takes; a slider move used to
    predict every model afresh (~0.2 s CPU). Skipped when the image's every batch is
    predicted already (making its configurations takes a few ms).
    """
    config, state = asked.state.config, asked.state
    batches = [replace(config, batch_size=batch) for batch in choices.batch_sizes]
    ahead = batches
    if state.one_side and config.image_shape[0] in choices.sides:
        dims, at = len(config.image_shape), choices.sides.index(config.image_shape[0])
        near = choices.sides[max(at - NEAR_SIDES, 0) : at + NEAR_SIDES + 1]
        ahead = [replace(row, image_shape=(side,) * dims) for side in near for row in batches]
    predictors = models_for(asked).predictors
    # Remembered whole: the ends of the image's batches tell whether they were.
    if not all(p.knows(batches[0]) and p.knows(batches[-1]) for p in predictors):
        for predictor in predictors:
            predictor.remember(ahead)


def decision_of(asked: Asked) -> Decision:
    """The decision for the page's question (its budget, image and batch)."""
    return decision(asked.db, asked.version, asked.question(sizing.BUY), asked.choice, asked.runs)


def verdict(decision: Decision, asked: Asked) -> None:
    """The decision with its evidence: the bound, the credible models' spread, the verdict
    worded by confidence, and the models left out of the answer, named with why."""
    headline = sizing_text.headline(decision)
    if decision.untrainable:  # the reason, not a prediction
        st.error(f"**{headline}.** " + plain(decision.untrainable))
        return
    delta = sizing_text.budget_delta(decision.budget_bytes, decision.needed_bytes)
    shown, colour = delta if delta and decision.estimate else (None, "normal")
    st.metric(
        "Upper bound",
        approx_gib(decision.bound_bytes),
        delta=shown,
        delta_color=colour,
        help="What the answer rests on: the model's upper bound, not its point prediction, "
        "which is low half the time. Spare or over: the budget less the bound and its "
        "headroom.",
    )
    # Beside the bound as a line, not a second metric: at 1024 px a metric's large
    # figures in half of the answers column were cut to "159–190…".
    st.markdown(f"Credible models' bounds: **{plain(sizing_text.spread(decision))}**")
    said = sizing_text.decision_sentence(
        decision, asked.state.image_label, asked.picked.words, evidence=False
    )
    getattr(st, sizing_text.headline_tone(decision))(f"**{headline}.** " + plain(said))
    estimate = decision.estimate
    if estimate is not None and estimate.bound_evidence and not estimate.raised_to_closed_form:
        with st.expander(bound_words.EXPANDER_LABEL):
            st.markdown(bound_words.details(f"it rests on {plain(estimate.bound_evidence)}"))
    substituted = sizing_text.substituted(decision)
    if substituted:
        st.info(plain(substituted))
    left_out = sizing_text.left_out_lines(decision)
    if left_out:
        st.markdown(
            "Left out of the answer, their predictions absurd here:\n"
            + "\n".join(f"- {plain(line)}" for line in left_out)
        )


def every_model(decision: Decision, asked: Asked) -> None:
    """Every model's prediction and bound; the chart draws only the credible ones."""
    # An HTML table: at 1024 px a long name or reason wraps rather than being cut.
    st.table(sizing_text.models_table(decision), hide_index=True, border="horizontal")
    st.caption(sizing_text.MODELS_TABLE_NOTE)
    budget_gib = asked.state.budget_gib
    chart = charts_sizing.bounds(
        sizing_text.credible_frame(decision), budget_gib, decision.usable_bytes / GIB
    )
    chart_draw.altair_chart(chart, width="stretch")


def ask(asked: Asked, kind: str) -> SizingAnswer | None:
    """The answer to the page's question of ``kind``, or None with why shown on the page."""
    try:
        return answer(asked.db, asked.version, asked.question(kind), asked.choice)
    except SizingError as error:
        st.error(plain(error))
        return None


def show_answer(
    found: SizingAnswer, shown: tuple[str, str, str], machine: str, help: str = ""
) -> None:
    """One sizing answer: the value, what it needs, the model, bound and machine, any warning.

    shown : the metric's label, its value and the caption under it. machine : whose
    models answer, in words (`Picked.words`, not escaped).
    """
    label, value, caption = shown
    st.metric(label, value, help=help or None)
    st.caption(caption)
    # The bound in plain words first; its technical name and terms on demand (issue 42).
    said = f"Model {plain(found.model)}; {plain(machine)}. {bound_words.sentence(found.coverage)}"
    st.caption(said)
    with st.expander(bound_words.EXPANDER_LABEL):
        st.markdown(bound_words.details(plain(found.bound)))
    for warning in found.warnings:
        st.warning(plain(warning))


def buy(asked: Asked) -> None:
    """The memory to buy for the question's image and batch: what a buyer asks first."""
    found = ask(asked, sizing.BUY)
    if found is None:
        return
    # Under the question's heading: the image and batch asked.
    value = f"{found.figures['memory_gb']} GB"
    show_answer(
        found,
        (BUY_LABEL, value, sizing_text.memory_caption(found.found)),
        asked.picked.words,
        help="The smallest server memory holding the upper bound plus the headroom; "
        "it needs no budget.",
    )
    more = models_for(asked).more_cores  # a server has more cores than the profile's
    if more is not None:
        st.caption(plain(sentence(more.sentence)))


def why_not_verify(db: Path, claim: Claim, said: verify.Verification, picked: Picked) -> str:
    """Why the Verify button cannot help now, in words (not escaped); empty when it can."""
    if said.verdict is not Verdict.PREDICTION:
        return "Already measured (above): a sweep resumes past a point it has measured."
    if data.read_only():
        return (
            f"This dashboard is read-only ({data.READ_ONLY_ENV_VAR} is set): it measures nothing."
        )
    refused = verify_here.refusal(claim, picked.here.key, verify_here.safe_limit_bytes())
    if refused:
        return f"Cannot verify here: {refused}."
    if frameworks.version(claim.framework) == frameworks.NOT_INSTALLED:
        title = frameworks.TITLES[claim.framework]
        hint = frameworks.INSTALL_HINTS[claim.framework]
        return f"{title} is not installed here: `{hint}` adds it."
    if sidebar.sweep_running(db):
        return "A sweep is running (see the sidebar): verify when it has finished."
    return ""


def launch(db: Path, claim: Claim) -> None:
    """Start the sweep that verifies ``claim``, as the sidebar starts one; a refusal is shown."""
    try:
        sweep_job.launch(db, verify.sweep_request(claim))
    except MemplanError as error:  # a sweep started meanwhile, elsewhere
        st.error(plain(error))
        return
    st.rerun()  # the sidebar shows the sweep from the next run on


def verified(asked: Asked, claim: Claim) -> None:
    """What the runs say of the answer, and the button that measures it."""
    said = verify.verify(claim, asked.runs, asked.db)
    text = verification.markdown(said)
    VERDICT_TONES[said.verdict](sentence(text))
    reason = why_not_verify(asked.db, claim, said, asked.picked)
    if st.button(
        VERIFY_LABEL,
        key=f"sizing_verify_{claim.question}",
        disabled=bool(reason),
        help=VERIFY_HELP,
        icon=":material/science:",
    ):
        launch(asked.db, claim)
    if reason:
        st.caption(plain(reason))


def largest_image(asked: Asked) -> None:
    """The largest image at the question's batch, and what the runs say of it."""
    found = ask(asked, sizing.IMAGE)
    if found is None:
        return
    state = asked.state
    dims = len(state.image_shape)
    label = f"Largest {workload_labels.SOLIDS[dims]} at batch {state.batch_size}"
    value = workload_labels.power(found.figures["side"], dims)
    shown = (label, value, sizing_text.image_caption(found.found, dims))
    show_answer(found, shown, asked.picked.words)
    if found.claim is not None:
        verified(asked, found.claim)


def largest_batch(asked: Asked) -> None:
    """The largest batch at the question's image, and what the runs say of it."""
    found = ask(asked, sizing.BATCH)
    if found is None:
        return
    label = f"Largest batch at {asked.state.image_label}"
    value = sizing_text.batch_figure(found.found)
    show_answer(found, (label, value, sizing_text.batch_caption(found.found)), asked.picked.words)
    if found.claim is not None:
        verified(asked, found.claim)


LARGEST = {sizing.IMAGE: largest_image, sizing.BATCH: largest_batch}


def render(asked: Asked, headed: str = sizing.BUY) -> None:
    """Largest image at this batch and largest batch at this image, each with its verdict,
    but the one heading the page (``headed``, shown there)."""
    shown = [answer for kind, answer in LARGEST.items() if kind != headed]
    for column, answer in zip(st.columns(2), shown, strict=False):
        with column:
            answer(asked)
