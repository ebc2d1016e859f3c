"""The Sizing page: will this configuration fit, and what is the largest that does?

The workload first (the 3D U-Net or the AlexNet-style 2D CNN) and the machine
whose models answer (`dashboard.machine_panel`: this machine by default when it
has models; every answer names the machine in words), then inputs on
the left (image shape, batch, that network's knobs, budget, headroom, model),
a typed budget or headroom that cannot be answered saying why right under it
(`presentation.sizing_view.input_problems`) while the answers wait for a valid one;
answers on the right: the decision with its evidence (`modeling.decision`: the
upper bound, the verdict worded by confidence, the credible models' spread, the
absurd models named and left out; for a precision or knob value that never trained
on this profile, `modeling.trainable`'s reason instead, the value offered marked
as failing there), every model's prediction, the three sizing
answers of `modeling.sizing` (`dashboard.sizing_answers`: the largest image and
batch verified by a run, or a prediction with a button that measures it), the
Dell–Intel study's published figures beside the models credible there
(`dashboard.published_panel`, U-Net only), and the refined analytical breakdown.
The inputs live in the URL (`dashboard.query_state`), so a link
reproduces the view; what the page offers and its captions come from
`presentation.sizing_view`. A machine without models gets what it lacks and
the sweep that gives it some, instead of answers.

A rerun only predicts a handful of configurations with the cached stored models;
the sizing scans are cached per question.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pandas as pd
import streamlit as st

from application.sizing import usable_budget_bytes
from core import workloads
from core.analytical import refined_breakdown
from core.published import STUDY_BATCH_SIZE, STUDY_IMAGE_SHAPE
from core.units import GIB
from core.workloads.base import WorkloadConfig
from dashboard import data, machine_panel, published_panel, query_state, sizing_answers
from modeling.decision import Decision, approx_gib, decide, evidence_for
from modeling.stored.predictor import Predictor
from presentation import (
    charts,
    curves,
    machines,
    sizing_report,
    sizing_view,
    workload_labels,
)
from presentation.evidence import evidence_line
from presentation.sizing_view import SizingChoices, SizingState, gib
from presentation.text import MISSING_CELL, plain

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


def inputs(start: SizingState, choices: SizingChoices, titles: dict[str, str]) -> SizingState:
    """The question, as widgets started from ``start``; returns what they say now."""
    workload = choices.workload
    image_shape, one_side = image_inputs(start, choices)
    seed(key(workload, "batch"), start.batch_size, choices.batch_sizes)
    batch = st.select_slider(
        "Batch size", options=choices.batch_sizes, key=key(workload, "batch"), persist_state=PERSIST
    )
    # One above the other, not two abreast: in the question's third of the page, at
    # 1024 px two abreast read "floa" for float32 and "Headroo m (%)" (issue 26).
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
    # No min_value / max_value on the typed numbers: out of range, Streamlit would refuse
    # the value silently (the message only on hover) and the answers would keep the last
    # one. Every value reaches the page, which says under the input what is wrong with it.
    seed(key(workload, "budget"), float(start.budget_gib))
    budget = st.number_input(
        "Memory budget (GiB)",
        step=16.0,
        key=key(workload, "budget"),
        persist_state=PERSIST,
        help="The machine's memory, in GiB (server 'GB' are binary: 256 GB = 256 GiB).",
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
    if choices.models:
        seed(model_key(workload, start.machine), start.model, choices.models)
    model = st.selectbox(
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
    return SizingState(
        workload=workload,
        image_shape=image_shape,
        one_side=one_side,
        batch_size=int(batch),
        knobs=sizing_view.knob_items(dict(knobs)),
        budget_gib=float(budget),
        headroom_pct=float(headroom),
        model=model,
        machine=start.machine,
    )


@st.cache_data(show_spinner=False, max_entries=64)
def predictions(
    db_path: Path,
    db_version: data.Version,
    workload: str,
    machine: str | None,
    image_shape: tuple[int, ...],
    knobs: tuple[tuple[str, object], ...],
    batch_sizes: tuple[int, ...],
) -> pd.DataFrame:
    """Every stored model's prediction and bound for this image at every batch size offered.

    One call per model covers all batch sizes, so moving the batch slider costs no prediction.
    """
    config = workloads.get(workload).Config
    configs = [config(image_shape, batch, **dict(knobs)) for batch in batch_sizes]
    models = data.predictors(db_path, db_version, workload, machine)
    return sizing_view.config_predictions(models, configs)


def verdict(decision: Decision, state: SizingState, machine: str) -> None:
    """The decision with its evidence: the bound, the credible models' spread, the verdict
    worded by confidence, and the models left out of the answer, named with why.

    machine : whose models answer, in words (`machine_panel.Picked.words`, not escaped).
    """
    if decision.untrainable:  # the reason, not a prediction
        st.error(f"**{decision.headline}.** " + plain(decision.untrainable))
        return
    delta = sizing_view.budget_delta(decision.budget_bytes, decision.needed_bytes)
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
    st.markdown(f"Credible models' bounds: **{plain(decision.spread)}**")
    message = f"**{decision.headline}.** " + plain(
        sizing_view.decision_sentence(decision, state.image_label, machine)
    )
    getattr(st, sizing_view.headline_tone(decision))(message)
    if decision.substituted:
        st.info(plain(decision.substituted))
    left_out = sizing_view.left_out_lines(decision)
    if left_out:
        st.markdown(
            "Left out of the answer, their predictions absurd here:\n"
            + "\n".join(f"- {plain(line)}" for line in left_out)
        )


def report_button(
    predictors: list[Predictor],
    state: SizingState,
    runs: pd.DataFrame,
    picked: machine_panel.Picked,
) -> None:
    """One click: the self-contained HTML sizing report of this question
    (`presentation.sizing_report`), made only when clicked (drawing its chart takes ~1 s)."""

    def html() -> str:
        report = sizing_report.build_report(
            predictors,
            state.config,
            runs,
            budget_gib=state.budget_gib,
            headroom_pct=state.headroom_pct,
            asked_model=state.model,
            machine_words=picked.words,
            machine_key=picked.machine,
            profile=picked.choice.profile,
            command="the memplan dashboard's Sizing page",
        )
        return sizing_report.render_html(report)

    st.download_button(
        "Download the sizing report (HTML)",
        data=html,
        file_name=sizing_view.report_file_name(state),
        mime="text/html",
        on_click="ignore",
        icon=":material/download:",
        help="The question, the answer and its evidence, the machine, the runs it rests on "
        "and the published figures, in one file to attach to a purchase request "
        "(print it to PDF from the browser).",
    )


def every_model(
    table: pd.DataFrame, decision: Decision, state: SizingState, usable_bytes: int
) -> None:
    """Every model's prediction and bound; the chart draws only the credible ones."""
    number, text = st.column_config.NumberColumn, st.column_config.TextColumn
    # Widths that add up to the page's content at 1024 px (about 520 px inside the
    # expander); the model stays pinned if a narrower window scrolls the rest.
    st.dataframe(
        sizing_view.models_frame(table, decision),
        hide_index=True,
        placeholder=MISSING_CELL,
        width="stretch",
        column_config={
            "model": text(width=130, pinned=True),
            "predicted GiB": number(format="%,.2f", width=90, help="The point prediction."),
            "bound GiB": number(
                format="%,.2f",
                width=70,
                help="The model's upper bound: what the verdict would use, or, for a model "
                "left out, the bound it is left out for.",
            ),
            "bound from": text(
                width=75, help="xR: the prediction times the model's conformal ratio R."
            ),
            "fits": text(
                width=40,
                help="The bound plus headroom within the budget; no verdict (–) for a model "
                "left out of the answer.",
            ),
            "left out because": text(
                width=115,
                help="Empty: the model is credible here. Otherwise why it is left out of the "
                "answer; the reasons in full are above the table.",
            ),
        },
    )
    credible = table[[decision.credibility.is_credible(name) for name in table["model"]]]
    frame = credible.assign(
        predicted_gib=credible["predicted_bytes"] / GIB, upper_gib=credible["upper_bytes"] / GIB
    )
    st.altair_chart(charts.bounds(frame, state.budget_gib, usable_bytes / GIB), width="stretch")


def breakdown(config: WorkloadConfig, runs: pd.DataFrame, predicted_bytes: float | None) -> None:
    terms = refined_breakdown(config, curves.framework_bytes(runs))
    if predicted_bytes is None:
        st.metric(
            "Refined closed-form estimate",
            gib(terms.total_bytes),
            help="Not a bound: what the closed form counts, without fitting anything.",
        )
    frame = sizing_view.breakdown_frame(terms, config.workload)
    st.altair_chart(charts.breakdown(frame), width="stretch")
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


def usable_bytes(state: SizingState) -> int:
    """What training may use of the budget, its headroom kept free (valid inputs only)."""
    return usable_budget_bytes(state.budget_gib * GIB, state.headroom_pct / 100)


def what_fits(
    db: Path,
    version: data.Version,
    state: SizingState,
    picked: machine_panel.Picked,
    runs: pd.DataFrame,
) -> None:
    """The largest image and batch, after the share of the budget they use and why; each
    says whether a run of ``runs`` (the machine's) verified it."""
    usable = usable_bytes(state)
    usable_words = sizing_view.usable_text(state.budget_gib, state.headroom_pct, usable)
    st.caption(
        f"Answers use what training may use of the budget: {plain(usable_words)}; "
        f"{plain(picked.words)}."
    )
    sizing_answers.render(db, version, state, picked, runs)


def render() -> None:
    st.title("Sizing")
    st.caption(
        "How much memory will training this network take, and what is the largest image "
        "or batch that fits the memory you have? Upper bounds, not point predictions, "
        "decide: a point prediction is low half the time."
    )
    db = data.database()
    version = data.version(db)
    params = query_state.current()
    linked, problems = query_state.workload_from(params)
    # One above the other: abreast, at 1024 px both selects cut their value (issue 26).
    workload = choose_workload(linked)
    # A link's other values are its workload's: after switching workloads they do not apply.
    link = params if workload == linked else {}
    picked, machine_problems = machine_panel.choose(
        db, version, workload, key(workload, "machine"), link, persist=PERSIST
    )
    machine = picked.machine
    predictors = data.predictors(db, version, workload, machine)
    refused = data.refused_models(db, version, workload, machine)
    if refused:
        st.error(plain(refused))
    runs = machines.runs_on(
        workload_labels.runs_of(data.runs(db, version), workload), picked.option
    )
    titles = {p.name: p.title for p in predictors}
    choices = sizing_view.choices_for(workload, list(titles), runs)
    scores = data.scores(db, version, workload, machine)
    default = sizing_view.default_state(choices, scores, picked.option)
    # Nor are they another machine's: its models, its runs' knobs.
    start, more = query_state.from_params(link if picked.as_linked else {}, choices, default)
    for problem in problems + machine_problems + more:
        st.warning(query_state.plain(problem))
    machine_panel.note(picked)

    question, answers = st.columns([1, 2], gap="large")
    with question:
        st.subheader("Question")
        state = inputs(start, choices, titles)
    problems = sizing_view.input_problems(state, choices)
    if not problems:  # a link never carries a value the page refuses
        query_state.write(state)
    with answers:
        machine_panel.onednn_note(picked, dict(state.knobs).get("precision", "float32"))
        if not predictors:
            st.info(
                f"No fitted {workload_labels.title(workload)} models yet "
                f"{plain(picked.words)}: no predictions, bounds or sizing answers. Meanwhile, "
                "the refined closed-form estimate below."
            )
            machine_panel.shortfall(db, version, workload, picked)
            st.subheader("Refined analytical breakdown")
            breakdown(state.config, runs, None)
            return
        every_batch = predictions(
            db, version, workload, machine, state.image_shape, state.knobs, choices.batch_sizes
        )
        table = every_batch[every_batch["batch_size"] == state.batch_size]
        chosen = table.set_index("model").loc[state.model]
        st.subheader(f"{state.image_label} at batch {state.batch_size}")
        if problems:
            st.info(sizing_view.waiting_text(problems))
        else:
            usable = usable_bytes(state)
            decision = decide(
                sizing_view.estimates(table),
                state.model,
                state.config,
                evidence_for(state.config, runs),
                state.budget_gib * GIB,
                state.headroom_pct / 100,
            )
            if not decision.untrainable:  # what a buyer asks first, needing no budget
                sizing_answers.buy(db, version, state, picked)
            verdict(decision, state, picked.words)
            fitted = data.fit_evidence(db, version, workload, machine)
            if fitted is not None:  # which models, runs and steps the answer rests on
                st.caption(plain(evidence_line(fitted, [titles.get(state.model, state.model)])))
            report_button(predictors, state, runs, picked)
    refused = not problems and decision.untrainable
    if not problems and not refused:
        # The page's full width: in the answers column the table scrolled at 1024 px.
        with st.expander("Every model's prediction and upper bound", expanded=True):
            every_model(table, decision, state, usable)
    st.subheader("What fits")
    if problems:
        st.info(sizing_view.waiting_text(problems))
    elif refused:
        st.info("No sizing answers for a setting that does not train here (above).")
    else:
        what_fits(db, version, state, picked, runs)
    if workload == published_panel.STUDY_WORKLOAD:
        study = workloads.get(workload).Config(STUDY_IMAGE_SHAPE, STUDY_BATCH_SIZE)
        published_panel.render(
            sizing_view.credible_at(predictors, study), curves.measured_points(runs)
        )
    st.subheader("Refined analytical breakdown")
    breakdown(state.config, runs, None if refused else chosen["predicted_bytes"])


render()
