"""The Models page: measured peaks against the analytical models, symbolic regression and baselines.

One workload, framework and machine profile at a time (the selectors on top,
`dashboard.framework_panel` and `dashboard.machine_panel`; kept in the URL): that
profile's runs, its latest evaluation's models — the same configuration can peak
2.7x higher on another kind of CPU, so nothing of another profile is drawn. From top to bottom: peak
memory against image size (measured dots over each chosen model's curves, one
per batch size); predicted against measured and the
residuals, from the held-out predictions of the latest evaluation; the error
table and the symbolic-regression formula; and, beside them, the measurement
floor that bounds how finely any model can be judged.

Without a stored evaluation of the workload on that profile the page says what
the profile lacks and how to get it (a sweep this machine can launch, or
``memplan evaluate --workload NAME --machine KEY``), and still shows
the measured points and the two analytical models, which need no fitting.

Where one chosen model's predictions dwarf the others' (`presentation.curves.dwarfing`),
the axes start logarithmic and a caption names that model. For the U-Net, the
Dell EMC / Intel study's published figures (`core.published`) are drawn beside our
runs and the chosen models' predictions for its configuration.
What the page reads is `dashboard.models_data`'s, the measurement floor
`dashboard.floor_panel`'s; the frames, tables and formulas come from
`presentation` (`curves`, `model_errors`, `formulas`), the charts from
`presentation.charts_models`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from application.models import Predictor
from core import workloads
from dashboard import (
    data,
    floor_panel,
    framework_panel,
    machine_panel,
    published_panel,
    query_state,
)
from dashboard.models_data import (
    CurveRequest,
    Models,
    View,
    curve_frame,
    drawable,
    held_out,
    measured,
    models_of,
    stored,
)
from presentation import charts_models, curves, formulas, model_errors, workload_labels
from presentation.text import code, plain

WORKLOAD_KEY = "models_workload"
SYMBOLIC = "symbolic"
DEFAULT_MODELS = (curves.PAPER, curves.REFINED, SYMBOLIC)
# Batch sizes drawn when nothing was measured yet: the reference sweep's.
DEFAULT_BATCHES = (1, 2, 4, 8, 16)
# How far past the measurements the curves may be drawn.
MAX_DRAWN_SIDE = 512
RESIDUALS_AGAINST = {"Image side": "side", "Measured peak": "measured_gib"}
# Which peak "measured" is, said under the predicted-against-measured charts (docs/measurement.md).
MEASURED_PEAK = (
    "Measured: each run's kernel high-water mark (VmHWM), the peak every model is fit to. It is "
    "the kernel's own maximum of resident memory, so a spike shorter than memory_profiler's "
    "0.1 s sampling interval (a step's transient buffers, oneDNN scratch) still counts, and "
    "the out-of-memory killer acts on resident memory, not on samples. The sampled peak is "
    "kept beside it (Sweeps page); how far apart the two lie: Measurement floor, below."
)
AXES = ["Linear", "Log"]


def choose_workload(linked: str) -> str:
    """The workload selector, started at the link's workload in a new session."""
    if st.session_state.get(WORKLOAD_KEY) not in workload_labels.names():
        st.session_state[WORKLOAD_KEY] = linked
    return st.selectbox(
        "Workload",
        workload_labels.names(),
        key=WORKLOAD_KEY,
        format_func=workload_labels.title,
        help="Each workload has its own runs and its own evaluated models.",
    )


def choose_view() -> tuple[View, machine_panel.Picked]:
    """The workload and machine selectors (kept in the URL), and what they say of the choice."""
    db = data.database()
    version = data.version(db)
    params = query_state.current()
    linked, problems = query_state.workload_from(params)
    # One above the other: abreast, at 1024 px both selects cut their value (issue 26).
    workload = choose_workload(linked)
    link = params if workload == linked else {}
    framework = framework_panel.choose(db, version, link, f"models_{workload}_framework")
    link = link if framework.as_linked else {}
    selector = machine_panel.Selector(
        workload,
        f"models_{workload}_machine",
        link,
        framework=framework.framework,
        answers=False,  # a profile's own models, not an answer
    )
    picked, machine_problems = machine_panel.choose(db, version, selector)
    for problem in problems + framework.problems + machine_problems:
        st.warning(query_state.plain(problem))
    query_state.write_view(workload, picked.option)
    machine_panel.note(picked)
    machine_panel.onednn_note(picked)
    machine_panel.calibrated_points(db, version, workload, picked)
    return View(db, version, workload, picked.answering), picked


def no_evaluation(view: View, picked: machine_panel.Picked, runs: int) -> None:
    """Why only the analytical models are shown, and what the profile lacks."""
    title, words = workload_labels.title(view.workload), plain(picked.words)
    if runs == 0:
        st.info(
            f"No measured run of the {title} yet {words}, so no fitted models: only the "
            "analytical models are shown, which need none."
        )
    else:
        st.info(
            f"Only the analytical models are shown: this database has {runs} "
            f"measured run(s) of the {title} {words}, but no stored evaluation of them. "
            "Symbolic regression and the baselines appear here once they are fitted."
        )
    machine_panel.shortfall(view.db, view.version, view.workload, picked)


def choose_models(view: View, models: Models) -> tuple[list[str], bool, list[str]]:
    """The models to draw, whether the axes are logarithmic, and the models that tower."""
    names = [model.name for model in models]
    titles = {model.name: model.title for model in models}
    # Pills, not a multiselect: at 1024 px the multiselect showed two of the three chosen
    # models, the second cut ("refined analytical (closed fo"); pills wrap, each whole.
    chosen = st.pills(
        "Models",
        names,
        selection_mode="multi",
        default=[name for name in DEFAULT_MODELS if name in names],
        format_func=lambda name: titles[name],
    )
    # One model far above the rest flattens every other curve on linear axes. Log axes
    # keep every chosen curve, and the measured dots, readable; leaving that model out
    # would hide a model the reader chose. So: log by default, and say which model.
    towering = curves.dwarfing(held_out(view, chosen))
    log = st.radio("Axes", AXES, index=int(bool(towering)), horizontal=True) == "Log"
    return chosen, log, towering


def choose_network(points: pd.DataFrame, workload: str) -> dict[str, object]:
    """The knob settings to draw: the only ones measured, or the user's pick among several."""
    measured_networks = curves.networks(points, workload)
    if not measured_networks:
        return workload_labels.knob_defaults(workload)
    if len(measured_networks) == 1:
        return measured_networks[0]
    labels = [curves.network_label(knobs, workload) for knobs in measured_networks]
    picked = st.selectbox("Network", labels, help="Runs were measured with several networks.")
    return measured_networks[labels.index(picked)]


def peak_chart(view: View, picked: machine_panel.Picked, names: list[str], log: bool) -> None:
    points = measured(view)
    knobs = choose_network(points, view.workload)
    mine = curves.with_knobs(points, knobs)
    offered, start = curves.side_choices(view.workload, knobs, mine, MAX_DRAWN_SIDE)
    largest = st.select_slider(
        "Curves up to image side",
        options=offered,
        value=start,
        key=f"models_{view.workload}_side",
        help="Past the largest measured size the curves extrapolate: that is where models part.",
    )
    batches = tuple(sorted(int(b) for b in mine["batch_size"].unique())) or DEFAULT_BATCHES
    sides = tuple(side for side in offered if side <= largest)
    frame = curve_frame(view, CurveRequest(tuple(names), sides, batches, tuple(knobs.items())))
    module = workloads.get(view.workload)
    chart = charts_models.peak_vs_size(mine, frame, log=log, dims=module.DIMS)
    st.altair_chart(chart, width="stretch")
    solid, elements = workload_labels.SOLIDS[module.DIMS], workload_labels.ELEMENTS[module.DIMS]
    network = curves.network_label(knobs, view.workload)
    st.caption(
        f"Dots: {len(mine)} measured runs (kernel high-water mark), {module.TITLE}"
        f"{', ' + plain(network) if network else ''}, on {plain(picked.choice.label)}. "
        "Lines: each model's prediction for "
        f"{solid}s, one colour per batch size, one dash per model (click a model in the legend "
        f"to pick it out). Non-{solid} runs sit at the side of the {solid} with as many {elements}."
    )


def out_of_sample_charts(view: View, names: list[str], log: bool, evaluated: bool) -> None:
    points = held_out(view, names)
    if points.empty:
        st.info("No held-out predictions for the chosen models.")
        return
    if evaluated:
        seeds = points["seed"].nunique()
        st.caption(
            f"Held-out predictions of the latest evaluation: the paper's random 70/30 "
            f"split by configuration, {seeds} seeds; each point was predicted by a model "
            "fit without it."
        )
    else:
        st.caption(
            "The analytical models at every measured run: they are not fit to peaks, so "
            "every run is out of sample for them."
        )
    parity_col, residual_col = st.columns(2)
    with parity_col:
        st.markdown("**Predicted against measured**")
        st.altair_chart(charts_models.parity(points, log=log), width="stretch")
    with residual_col:
        st.markdown("**Residuals**")
        against = st.radio("Residuals against", list(RESIDUALS_AGAINST), horizontal=True)
        side_title = workload_labels.side_title(workloads.get(view.workload).DIMS)
        axis = RESIDUALS_AGAINST[against]
        residuals = charts_models.residuals(points, axis, side_title=side_title)
        st.altair_chart(residuals, width="stretch")
    st.caption(MEASURED_PEAK)


def error_table(scores: pd.DataFrame, models: Models) -> None:
    table = model_errors.error_table(scores, {model.name: model.title for model in models})
    shown = model_errors.shown_errors(table)
    # An HTML table: at 1024 px a long model title wraps rather than being cut.
    st.table(model_errors.errors_text(shown), hide_index=True, border="horizontal")
    st.caption(model_errors.errors_caption(table, shown))


def show_formula(formula: str, latex: str | None) -> None:
    """``latex`` when it fits the column in lines, else ``formula`` as wrapped text."""
    shown = formulas.formula_display(latex)
    if shown:
        st.latex(shown)
    else:  # not a formula, or one too wide to break into lines: wrapped text, all of it
        st.code(formulas.formula_text(formula), language=None, wrap_lines=True)


def formula(models: Models, workload: str) -> None:
    by_name = {model.name: model for model in models}
    symbolic = by_name.get(SYMBOLIC)
    if not isinstance(symbolic, Predictor) or not symbolic.formula:
        st.caption("No symbolic-regression formula stored.")
        return
    st.markdown("**Symbolic regression's formula** (peak in GiB)")
    latex = formulas.formula_latex(symbolic.formula)
    show_formula(symbolic.formula, latex and r"\mathrm{peak}_{\mathrm{GiB}} = " + latex)
    size = "" if symbolic.formula_length is None else f"{symbolic.formula_length} nodes; "
    inputs = formulas.inputs_caption([symbolic.formula], workload)
    st.caption(f"{size}inputs: {inputs}; fit on every measured run.")
    others = [m for m in models if isinstance(m, Predictor) and m.formula and m is not symbolic]
    if others:
        with st.expander("Other models' formulas"):
            for model in others:
                st.markdown(f"*{plain(model.title)}*")
                show_formula(model.formula or "", formulas.formula_latex(model.formula))
            inputs = formulas.inputs_caption([model.formula or "" for model in others], workload)
            st.caption(f"Inputs: {inputs}.")


def render() -> None:
    st.title("Models")
    st.caption(
        "Measured peak memory (host RAM, not a GPU's memory) against the paper's analytical "
        "model, memplan's refined analytical model, symbolic regression and the "
        "machine-learning baselines, for one machine profile at a time."
    )
    view, picked = choose_view()
    scores = data.scores(view.db, view.version, view.workload, view.machine)
    evaluated = bool(stored(view))
    refused = data.refused_models(view.db, view.version, view.workload, view.machine, decoded=False)
    if refused:
        st.error(plain(refused))
    models, points = models_of(view), measured(view)
    if not evaluated:
        no_evaluation(view, picked, len(points))

    chosen, log, towering = choose_models(view, models)
    chosen, unreadable = drawable(models, chosen)  # a malformed tree is refused when chosen
    for reason in unreadable:
        st.error(plain(reason))
    st.subheader("Peak memory against image size")
    if towering:
        st.caption(
            f"Log axes to start with: {plain(', '.join(towering))} predicts more than "
            f"{curves.DWARF_RATIO:g}x the other models somewhere, which would flatten their "
            "curves on linear axes."
        )
    peak_chart(view, picked, chosen, log)
    if not points.empty:
        out_of_sample_charts(view, chosen, log, evaluated)
    if view.workload == published_panel.STUDY_WORKLOAD:
        published_panel.render([m for m in models if m.name in chosen], points)

    # One above the other: side by side at 1024 px, neither had room for its table.
    st.subheader("Errors")
    if scores.empty:
        flag = f" --machine {view.machine}" if view.machine else ""
        command = workload_labels.evaluate_command(view.workload)
        st.caption(f"No scores yet: {code(command + flag)} computes them.")
    else:
        error_table(scores, models)
    formula(models, view.workload)
    floor_panel.render(view)


render()
