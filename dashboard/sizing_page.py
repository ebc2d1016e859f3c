"""The Sizing page: will this configuration fit, and what is the largest that does?

The workload first (the 3D U-Net or the AlexNet-style 2D CNN) and the machine
whose models answer (`dashboard.machine_panel`: this machine by default when it
has models; every answer names the machine in words), then inputs on
the left (image shape, batch, that network's knobs, budget, headroom, model),
a typed budget or headroom that cannot be answered saying why right under it
(`presentation.sizing_view.input_problems`) while the answers wait for a valid one;
answers on the right: the chosen model's predicted peak and upper bound with a
fits / does-not-fit verdict, every model's prediction, the three sizing answers
of `modeling.sizing` (`dashboard.sizing_answers`), and the refined analytical
breakdown. The inputs live in the URL (`dashboard.query_state`), so a link
reproduces the view; what the page offers and its captions come from
`presentation.sizing_view`. A machine without models gets what it lacks and
the sweep that gives it some, instead of answers.

A rerun only predicts a handful of configurations with the cached stored models;
the sizing scans are cached per question.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import streamlit as st

from core import workloads
from core.analytical import refined_breakdown
from core.units import GIB
from core.workloads.base import WorkloadConfig
from dashboard import data, machine_panel, query_state, sizing_answers
from presentation import charts, curves, machines, sizing_view, workload_labels
from presentation.sizing_view import SizingChoices, SizingState, gib
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
    columns = st.columns(2)
    knobs = []
    for index, (knob, offered) in enumerate(choices.knobs.items()):
        offer = sizing_view.KNOB_OFFERS[knob]
        seed(key(workload, knob), start.knob(knob), offered)
        value = columns[index % 2].selectbox(
            offer.label, offered, key=key(workload, knob), persist_state=PERSIST, help=offer.help
        )
        knobs.append((knob, value))
    left, right = st.columns(2)
    # No min_value / max_value on the typed numbers: out of range, Streamlit would refuse
    # the value silently (the message only on hover) and the answers would keep the last
    # one. Every value reaches the page, which says under the input what is wrong with it.
    seed(key(workload, "budget"), float(start.budget_gib))
    budget = left.number_input(
        "Memory budget (GiB)",
        step=16.0,
        key=key(workload, "budget"),
        persist_state=PERSIST,
        help="The machine's memory, in GiB (server 'GB' are binary: 256 GB = 256 GiB).",
    )
    seed(key(workload, "headroom"), float(start.headroom_pct))
    headroom = right.number_input(
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
        seed(key(workload, "model"), start.model, choices.models)
    model = st.selectbox(
        "Model",
        choices.models,
        key=key(workload, "model"),
        persist_state=PERSIST,
        format_func=lambda name: titles[name],
        disabled=not choices.models,
        placeholder="no stored models",
        help="Default: the stored model with the smallest worst-case extrapolation error.",
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


def verdict(chosen: pd.Series, state: SizingState, usable_bytes: int, machine: str) -> None:
    """The chosen model's prediction, bound, and whether it fits the budget.

    machine : whose models answer, in words (`machine_panel.Picked.words`, not escaped).
    """
    upper, budget_bytes = chosen["upper_bytes"], state.budget_gib * GIB
    predicted_col, upper_col, verdict_col = st.columns(3)
    predicted_col.metric(
        "Predicted peak",
        gib(chosen["predicted_bytes"]),
        help=f"{plain(chosen['title'])}: its point prediction.",
    )
    upper_col.metric(
        "Upper bound",
        gib(upper) if math.isfinite(upper) else "unbounded",
        help=f"x{chosen['bound_ratio']:.3f} of the prediction: the 90% split-conformal bound"
        + (
            ", raised to the refined closed-form estimate"
            if chosen["raised_to_closed_form"]
            else ""
        ),
    )
    needed = upper * (1 + state.headroom_pct / 100)
    fits = upper <= usable_bytes
    spare = f"{(budget_bytes - needed) / GIB:+,.1f} GiB spare" if math.isfinite(needed) else None
    verdict_col.metric(
        "Verdict",
        "Fits" if fits else "Does not fit",
        delta=spare,
        help="Fits when the upper bound plus headroom is within the budget.",
    )
    sentence = (
        f"{state.image_label} at batch {state.batch_size} needs up to {gib(upper)}, "
        f"{gib(needed)} with {state.headroom_pct:g}% headroom, of the {state.budget_gib:g} GiB "
        f"budget ({plain(chosen['title'])}), {plain(machine)}."
    )
    if fits:
        st.success(f"**Fits**: {sentence}")
    else:
        st.error(f"**Does not fit**: {sentence}")
    if chosen["raised_to_closed_form"]:
        st.warning(
            f"{plain(chosen['title'])} predicts less than the refined closed-form estimate here, "
            "which "
            "every measured run exceeded, so the bound is the closed-form estimate instead; "
            "this model's formula is not to be trusted here."
        )
    if chosen["beyond"]:
        st.warning(
            f"This configuration lies beyond the measured runs: {plain(chosen['beyond'])}. "
            "The model was never checked there; its bound is a best guess, not a guarantee."
        )


def every_model(table: pd.DataFrame, state: SizingState, usable_bytes: int) -> None:
    shown = pd.DataFrame(
        {
            "model": table["title"],
            "predicted (GiB)": table["predicted_bytes"] / GIB,
            "upper bound (GiB)": table["upper_bytes"] / GIB,
            "bound x": table["bound_ratio"],
            "fits": [
                "Fits" if upper <= usable_bytes else "Does not fit"
                for upper in table["upper_bytes"]
            ],
            "measured range": ["beyond" if beyond else "inside" for beyond in table["beyond"]],
        }
    )
    number = st.column_config.NumberColumn
    st.dataframe(
        shown,
        hide_index=True,
        column_config={
            "predicted (GiB)": number(format="%.2f"),
            "upper bound (GiB)": number(format="%.2f"),
            "bound x": number(format="%.3f"),
        },
    )
    frame = table.assign(
        predicted_gib=table["predicted_bytes"] / GIB, upper_gib=table["upper_bytes"] / GIB
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
    return sizing_view.usable_budget_bytes(state.budget_gib * GIB, state.headroom_pct / 100)


def what_fits(
    db: Path, version: data.Version, state: SizingState, picked: machine_panel.Picked
) -> None:
    """The three sizing answers, after the share of the budget they use and why."""
    usable = usable_bytes(state)
    usable_words = sizing_view.usable_text(state.budget_gib, state.headroom_pct, usable)
    st.caption(
        f"Answers use what training may use of the budget: {plain(usable_words)}; "
        f"{plain(picked.words)}."
    )
    sizing_answers.render(db, version, state, usable, picked)


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
    workload_col, machine_col = st.columns([1, 2])
    with workload_col:
        workload = choose_workload(linked)
    # A link's other values are its workload's: after switching workloads they do not apply.
    link = params if workload == linked else {}
    with machine_col:
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
            verdict(chosen, state, usable, picked.words)
            with st.expander("Every model's prediction and upper bound", expanded=True):
                every_model(table, state, usable)
    st.subheader("What fits")
    if problems:
        st.info(sizing_view.waiting_text(problems))
    else:
        what_fits(db, version, state, picked)
    st.subheader("Refined analytical breakdown")
    breakdown(state.config, runs, chosen["predicted_bytes"])


render()
