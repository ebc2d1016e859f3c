"""The Sizing page: will this configuration fit, and what is the largest that does?

The workload first (the 3D U-Net or the AlexNet-style 2D CNN), the framework where the
database has runs of more than one (`dashboard.framework_panel`), and the machine
whose models answer (`dashboard.machine_panel`: this machine by default when it
has models; every answer names the machine in words), then the question on the
left (`dashboard.sizing_inputs`: image shape, batch, that network's knobs, budget,
headroom, model; a typed budget or headroom that cannot be answered says why right
under it while the answers wait for a valid one); answers on the right
(`dashboard.sizing_answers`): the memory to buy, the decision with its evidence
(`application.sizing.decide`: the upper bound, the verdict worded by confidence, the
credible models' spread, the absurd models named and left out; for a precision or
knob value that never trained on this profile, `modeling.trainable`'s reason
instead, the value offered marked as failing there), every model's prediction,
the largest image and batch (verified by a run, or a prediction with a button that
measures it), the Dell–Intel study's published figures beside the models credible
there (`dashboard.published_panel`, U-Net only), and the refined analytical
breakdown. The inputs live in the URL (`dashboard.query_state`), so a link
reproduces the view; what the page offers comes from `presentation.sizing_view`,
its words from `presentation.sizing_text`. A machine without models gets what it
lacks and the sweep that gives it some, instead of answers.

A new question predicts, in one call per model, every configuration one slider
move away (`sizing_answers.predict_ahead`), so the next move finds its
predictions made; the decision and the sizing scans are cached per question, and
what no input changes (what the page offers, the study's predictions) per
database version.

Everything above is host RAM; the selector under the title switches the page to GPU
memory (`dashboard.gpu_sizing_mode`), its own question and answers.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pandas as pd
import streamlit as st

from application import sizing
from application.models import Predictor
from application.sizing import Decision
from core.analytical import refined_breakdown
from core.workloads.base import WorkloadConfig
from dashboard import (
    chart_draw,
    data,
    framework_panel,
    gpu_sizing_mode,
    machine_panel,
    published_panel,
    query_state,
    sizing_answers,
)
from dashboard.sizing_answers import Asked
from dashboard.sizing_inputs import PERSIST, choose_ask, choose_workload, inputs, key
from presentation import (
    charts_sizing,
    curves,
    machines,
    sizing_report,
    sizing_report_html,
    sizing_text,
    sizing_view,
    workload_labels,
)
from presentation.evidence import evidence_line
from presentation.sizing_text import gib
from presentation.sizing_view import SizingChoices, SizingState
from presentation.text import plain


def report_button(asked: Asked) -> None:
    """One click: the self-contained HTML sizing report of this question
    (`presentation.sizing_report`), made only when clicked (drawing its chart takes ~1 s)."""
    source = sizing_report.ReportSource(
        machine_words=asked.picked.words,
        profile=asked.picked.choice.profile,
        command="the memplan dashboard's Sizing page",
    )

    def html() -> str:
        question = asked.question(sizing.BUY)
        models = sizing_answers.models_for(asked)
        report = sizing_report.build_report(question, models, asked.runs, source)
        return sizing_report_html.render_html(report)

    st.download_button(
        "Download the sizing report (HTML)",
        data=html,
        file_name=sizing_view.report_file_name(asked.state),
        mime="text/html",
        on_click="ignore",
        icon=":material/download:",
        help="The question, the answer and its evidence, the machine, the runs it rests on "
        "and the published figures, in one file to attach to a purchase request "
        "(print it to PDF from the browser).",
    )


def breakdown(config: WorkloadConfig, runs: pd.DataFrame, predicted_bytes: float | None) -> None:
    terms = refined_breakdown(config, curves.framework_bytes(runs))
    if predicted_bytes is None:
        st.metric(
            "Refined closed-form estimate",
            gib(terms.total_bytes),
            help="Not a bound: what the closed form counts, without fitting anything.",
        )
    frame = sizing_text.breakdown_frame(terms, config.workload)
    chart_draw.altair_chart(charts_sizing.breakdown(frame), width="stretch")
    compared = (
        ""
        if predicted_bytes is None
        else (
            f"; the chosen model predicts {gib(predicted_bytes)}. "
            "The difference is what the closed form leaves out: building and tracing the "
            "model (oneDNN caches, the graph, allocator slack)"
        )
    )
    st.caption(
        f"Refined closed form: {gib(terms.total_bytes)} in all, the framework term being "
        f"the median measured post-import memory{compared}."
    )


def what_fits(asked: Asked, decision: Decision, headed: str) -> None:
    """The largest image and batch, after the share of the budget they use and why; each
    says whether a run of the machine's verified it."""
    state = asked.state
    usable_words = sizing_text.usable_text(
        state.budget_gib, state.headroom_pct, decision.usable_bytes
    )
    st.caption(
        f"Answers use what training may use of the budget: {plain(usable_words)}; "
        f"{plain(asked.picked.words)}."
    )
    sizing_answers.render(asked, headed)


def no_models(asked: Asked) -> None:
    """What a machine without fitted models gets: what it lacks, the sweep that gives it
    some, and the refined closed-form estimate."""
    state, picked = asked.state, asked.picked
    st.info(
        f"No fitted {workload_labels.title(state.workload)} models yet "
        f"{plain(picked.words)}: no predictions, bounds or sizing answers. Meanwhile, "
        "the refined closed-form estimate below."
    )
    machine_panel.shortfall(asked.db, asked.version, state.workload, picked)
    st.subheader("Refined analytical breakdown")
    breakdown(state.config, asked.runs, None)


def answers(asked: Asked, headed: str) -> Decision:
    """The answers column: the memory to buy (unless it heads the page), the verdict, what
    it rests on, the report."""
    decision = sizing_answers.decision_of(asked)
    if not decision.untrainable and headed != sizing.BUY:  # it needs no budget
        sizing_answers.buy(asked)
    machine_panel.transfer_note(asked.picked)  # another machine's answer: before the verdict
    sizing_answers.verdict(decision, asked)
    state = asked.state
    fitted = data.fit_evidence(asked.db, asked.version, state.workload, asked.picked.machine)
    if fitted is not None:  # which models, runs and steps the answer rests on
        predictors = sizing_answers.models_for(asked).predictors
        title = next((p.title for p in predictors if p.name == state.model), state.model)
        st.caption(plain(evidence_line(fitted, [title])))
    report_button(asked)
    return decision


def below(asked: Asked, decision: Decision | None, problems: dict[str, str], headed: str) -> None:
    """Under the two columns: every model's estimate, what fits, the study's figures."""
    refused = decision is not None and bool(decision.untrainable)
    if decision is not None and not refused:
        # The page's full width: in the answers column the table scrolled at 1024 px.
        with st.expander("Every model's prediction and upper bound", expanded=True):
            sizing_answers.every_model(decision, asked)
    st.subheader("What fits")
    if problems:
        st.info(sizing_view.waiting_text(problems))
    elif refused:
        st.info("No sizing answers for a setting that does not train here (above).")
    elif decision is not None:
        what_fits(asked, decision, headed)
    workload = asked.state.workload
    if workload == published_panel.STUDY_WORKLOAD:
        panel = sizing_answers.study_panel(
            asked.db, asked.version, workload, asked.choice, asked.runs
        )
        published_panel.show(*panel)


def chosen_prediction(predictors: list[Predictor], state: SizingState) -> float:
    """The chosen model's point prediction for the question, bytes."""
    chosen = next(p for p in predictors if p.name == state.model)
    return float(chosen.point_bytes([state.config])[0])


@st.cache_data(show_spinner=False, max_entries=64)
def offered(
    db: Path, version: data.Version, workload: str, option: str, _runs: pd.DataFrame
) -> tuple[SizingChoices, SizingState]:
    """What the page offers machine ``option``'s runs of ``workload`` (``_runs``), and the
    question it starts on without a link: cached on the database's version, the workload
    and the machine, which fix the runs (which knob values never trained scans them,
    ~0.3 s a rerun before)."""
    machine = None if option == machines.MIXED else option
    names = [p.name for p in data.predictors(db, version, workload, machine)]
    choices = sizing_view.choices_for(workload, names, _runs)
    scores = data.scores(db, version, workload, machine)
    return choices, sizing_view.default_state(choices, scores, option)


def start_of(
    db: Path, version: data.Version
) -> tuple[SizingState, SizingChoices, machine_panel.Picked, pd.DataFrame]:
    """The workload and machine chosen, the question the page starts on (the link's, else
    the default), what it offers, and that machine's runs of the workload."""
    params = query_state.current()
    linked, problems = query_state.workload_from(params)
    # One above the other: abreast, at 1024 px both selects cut their value (issue 26).
    workload = choose_workload(linked)
    # A link's other values are its workload's: after switching workloads they do not apply.
    link = params if workload == linked else {}
    framework = framework_panel.choose(db, version, link, key(workload, "framework"))
    # Nor, after switching frameworks, are they: its machine is another framework's.
    link = link if framework.as_linked else {}
    selector = machine_panel.Selector(
        workload, key(workload, "machine"), link, PERSIST, framework.framework
    )
    picked, machine_problems = machine_panel.choose(db, version, selector)
    refused = data.refused_models(db, version, workload, picked.machine)
    if refused:
        st.error(plain(refused))
    runs = machines.runs_on(
        workload_labels.runs_of(data.runs(db, version), workload), picked.answering
    )
    choices, default = offered(db, version, workload, picked.answering, runs)
    default = replace(default, machine=picked.option)  # the link names the machine asked for
    # Nor are they another machine's: its models, its runs' knobs.
    start, more = query_state.from_params(link if picked.as_linked else {}, choices, default)
    for problem in problems + framework.problems + machine_problems + more:
        st.warning(query_state.plain(problem))
    machine_panel.note(picked)
    return start, choices, picked, runs


HOST_RAM_NOTE = (
    "Every figure here is host RAM, the machine's main memory, as the runs measured it: "
    "not a GPU's memory, which these models do not predict."
)


def headline(asked: Asked, headed: str, problems: dict[str, str]) -> None:
    """The answer to the question heading the page, under the question in words: the
    memory to buy, or the largest image or batch (with what the runs say of it)."""
    state = asked.state
    st.subheader(
        f"{workload_labels.title(state.workload)}: {state.image_label} at batch {state.batch_size}"
    )
    if problems:
        st.info(sizing_view.waiting_text(problems))
    elif sizing_answers.decision_of(asked).untrainable:
        st.info("No answer: this setting does not train here (below).")
    elif headed == sizing.BUY:
        sizing_answers.buy(asked)
    else:
        sizing_answers.LARGEST[headed](asked)


def render() -> None:
    st.title("Sizing")
    if gpu_sizing_mode.chosen_memory() == gpu_sizing_mode.GPU_MEMORY:
        gpu_sizing_mode.render()  # its own question and answers (`dashboard.gpu_sizing_mode`)
        return
    st.caption(
        "How much host RAM will training this network take, and what is the largest image "
        "or batch that fits the memory you have? Upper bounds, not point predictions, "
        "decide: a point prediction is low half the time."
    )
    # The first screen: the question and its answer, above what selects the machine.
    asking, heading = st.columns([1, 2], gap="large")
    with asking:
        linked, ask_problems = query_state.ask_from(query_state.current())
        headed = choose_ask(linked)
    db = data.database()
    version = data.version(db)
    start, choices, picked, runs = start_of(db, version)
    for problem in ask_problems:
        st.warning(query_state.plain(problem))
    predictors = data.predictors(db, version, choices.workload, picked.machine)
    question, answered = st.columns([1, 2], gap="large")
    with question:
        st.subheader("Question")
        state = inputs(start, choices, {p.name: p.title for p in predictors}, asking)
    problems = sizing_view.input_problems(state, choices)
    if not problems:  # a link never carries a value the page refuses
        query_state.write(state)
        query_state.write_ask(headed)
    asked = Asked(db, version, state, picked, runs)
    decision = None
    with answered:
        machine_panel.onednn_note(picked, dict(state.knobs).get("precision", "float32"))
        if not predictors:
            no_models(asked)
            return
        if machine_panel.no_bound(picked):  # another machine's runs, and nothing to widen by
            st.subheader("Refined analytical breakdown")
            breakdown(state.config, runs, None)
            return
        if not problems:
            sizing_answers.predict_ahead(asked, choices)
        with heading:
            headline(asked, headed, problems)
            st.caption(HOST_RAM_NOTE)
        if not problems:  # else the headline says what the answers wait for
            st.subheader("Against your budget")
            decision = answers(asked, headed)
    below(asked, decision, problems, headed)
    refused = decision is not None and bool(decision.untrainable)
    st.subheader("Refined analytical breakdown")
    breakdown(state.config, runs, None if refused else chosen_prediction(predictors, state))


render()
