"""The Models page: measured peaks against the analytical models, symbolic regression and baselines.

One workload and one machine profile at a time (the selectors on top,
`dashboard.machine_panel`; kept in the URL): that profile's runs, its latest
evaluation's models — the same configuration can peak 2.7x higher on another
kind of CPU, so nothing of another profile is drawn. From top to bottom: peak
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
Everything is read through `dashboard.data`'s cached loaders and cached here
per database version; a rerun predicts a few hundred configurations at most.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pandas as pd
import streamlit as st

from core import workloads
from dashboard import data, machine_panel, published_panel, query_state
from modeling.stored.predictor import Predictor
from presentation import charts, curves, machines, workload_labels
from presentation.report import PAPER_SR_MAPE_PCT
from presentation.text import MISSING_CELL, code, plain
from profiling import floor

WORKLOAD_KEY = "models_workload"
DEFAULT_MODELS = (curves.PAPER, curves.REFINED, "symbolic")
SYMBOLIC = "symbolic"
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
# The error table fits 1024 px beside the sidebar (~560 px): each column as wide as its
# header, the model's title (up to ~33 characters) the rest.
ERROR_COLUMN_PX = {
    "model": 200,
    "MAPE %": 58,
    "sd": 38,
    "R²": 46,
    "worst %": 58,
    "extrap. MAPE %": 78,
    "extrap. worst %": 78,
    "knob MAPE %": 78,
    "knob worst %": 78,
}
# Headers shortened to fit those widths (the caption says what "ext." and "knob" are).
ERROR_LABELS = {
    "extrap. MAPE %": "ext. MAPE",
    "extrap. worst %": "ext. worst",
    "knob MAPE %": "knob MAPE",
    "knob worst %": "knob worst",
}

Models = list[Predictor] | list[curves.ClosedFormModel]


def loader_key(option: str) -> str | None:
    """What the loaders take for a selector option: a profile key, None for `machines.MIXED`."""
    return None if option == machines.MIXED else option


def runs_of(db: Path, version: data.Version, workload: str, option: str) -> pd.DataFrame:
    """The runs of ``workload`` on the machine profile ``option``."""
    return machines.runs_on(workload_labels.runs_of(data.runs(db, version), workload), option)


def models_of(db: Path, version: data.Version, workload: str, option: str) -> Models:
    """The profile's stored models, or the two analytical ones when none is stored."""
    return data.predictors(db, version, workload, loader_key(option)) or (
        curves.closed_form_models(runs_of(db, version, workload, option))
    )


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def measured(db: Path, version: data.Version, workload: str, option: str) -> pd.DataFrame:
    # The runs at the step count the models were fitted on: the curves are drawn over those.
    fitted = data.fit_evidence(db, version, workload, loader_key(option))
    steps = fitted.steps if fitted is not None else None
    return curves.measured_points(runs_of(db, version, workload, option), steps)


@st.cache_data(show_spinner=False, max_entries=32)
def curve_frame(
    db: Path,
    version: data.Version,
    workload: str,
    option: str,
    names: tuple[str, ...],
    sides: tuple[int, ...],
    batches: tuple[int, ...],
    knobs: tuple[tuple[str, object], ...],
) -> pd.DataFrame:
    models = models_of(db, version, workload, option)
    chosen = [model for model in models if model.name in names]
    return curves.predicted_curves(chosen, sides, batches, dict(knobs), workload)


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def out_of_sample(db: Path, version: data.Version, workload: str, option: str) -> pd.DataFrame:
    """Held-out predictions of the latest evaluation, or the analytical models at every point."""
    points = measured(db, version, workload, option)
    models = models_of(db, version, workload, option)
    stored = data.held_out_predictions(db, version, workload, loader_key(option))
    if stored.empty:
        return curves.predictions_at_points(models, points)
    titles = {model.name: model.title for model in models}
    return curves.held_out_points(stored, points, titles, curves.RANDOM_SPLIT)


def held_out(
    db: Path, version: data.Version, workload: str, option: str, names: list[str]
) -> pd.DataFrame:
    """`out_of_sample` for the chosen models only."""
    points = out_of_sample(db, version, workload, option)
    return points[points["model"].isin(names)]


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


def peak_chart(
    db: Path,
    version: data.Version,
    workload: str,
    picked: machine_panel.Picked,
    points: pd.DataFrame,
    names: list[str],
    log: bool,
) -> None:
    knobs = choose_network(points, workload)
    mine = curves.with_knobs(points, knobs)
    module = workloads.get(workload)
    offered = curves.drawn_sides(module.square_sides(1, MAX_DRAWN_SIDE, **knobs))
    # The workload's own default (`LABELS.largest_side`), else a quarter up the sides.
    default_largest = module.LABELS.largest_side or offered[len(offered) // 4]
    largest_measured = float(mine["side"].max()) if len(mine) else default_largest
    start = next((side for side in offered if side >= largest_measured), offered[-1])
    largest = st.select_slider(
        "Curves up to image side",
        options=offered,
        value=start,
        key=f"models_{workload}_side",
        help="Past the largest measured size the curves extrapolate: that is where models part.",
    )
    batches = tuple(sorted(int(b) for b in mine["batch_size"].unique())) or DEFAULT_BATCHES
    sides = tuple(side for side in offered if side <= largest)
    frame = curve_frame(
        db, version, workload, picked.option, tuple(names), sides, batches, tuple(knobs.items())
    )
    st.altair_chart(charts.peak_vs_size(mine, frame, log=log, dims=module.DIMS), width="stretch")
    solid, elements = workload_labels.SOLIDS[module.DIMS], workload_labels.ELEMENTS[module.DIMS]
    network = curves.network_label(knobs, workload)
    st.caption(
        f"Dots: {len(mine)} measured runs (kernel high-water mark), {module.TITLE}"
        f"{', ' + plain(network) if network else ''}, on {plain(picked.choice.label)}. "
        "Lines: each model's prediction for "
        f"{solid}s, one colour per batch size, one dash per model (click a model in the legend "
        f"to pick it out). Non-{solid} runs sit at the side of the {solid} with as many {elements}."
    )


def out_of_sample_charts(
    db: Path,
    version: data.Version,
    workload: str,
    option: str,
    names: list[str],
    log: bool,
    evaluated: bool,
) -> None:
    points = held_out(db, version, workload, option, names)
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
        st.altair_chart(charts.parity(points, log=log), width="stretch")
    with residual_col:
        st.markdown("**Residuals**")
        against = st.radio("Residuals against", list(RESIDUALS_AGAINST), horizontal=True)
        side_title = workload_labels.side_title(workloads.get(workload).DIMS)
        residuals = charts.residuals(points, RESIDUALS_AGAINST[against], side_title=side_title)
        st.altair_chart(residuals, width="stretch")
    st.caption(MEASURED_PEAK)


def error_table(scores: pd.DataFrame, models: Models) -> None:
    titles = {model.name: model.title for model in models}
    table = curves.error_table(scores, titles)
    shown = pd.DataFrame(
        {
            "model": table["title"],
            "MAPE %": table["random_mape_pct"],
            "sd": table["random_mape_sd"],
            "R²": table["random_r2"],
            "worst %": table["random_worst_pct"],
            "extrap. MAPE %": table["extrapolation_mape_pct"],
            "extrap. worst %": table["extrapolation_worst_pct"],
            "knob MAPE %": table["knob_mape_pct"],
            "knob worst %": table["knob_worst_pct"],
        }
    )
    # The knob split exists only where the runs vary a network knob.
    shown = shown.dropna(axis="columns", how="all")
    number = st.column_config.NumberColumn
    st.dataframe(
        shown,
        hide_index=True,
        placeholder=MISSING_CELL,
        column_config={"model": st.column_config.TextColumn(width=ERROR_COLUMN_PX["model"])}
        | {
            name: number(
                ERROR_LABELS.get(name, name),
                help=f"{name} (ext.: the extrapolation split; knob: one knob value left out)"
                if name in ERROR_LABELS
                else None,
                format="%.3f" if name == "R²" else "%.1f",
                width=ERROR_COLUMN_PX[name],
            )
            for name in shown.columns
            if name != "model"
        },
    )
    seeds = table["seeds"].max()
    st.caption(
        f"MAPE: mean absolute percentage error on held-out points, random 70/30 splits by "
        f"configuration ({seeds:.0f} seeds, the paper's protocol; its symbolic regression "
        f"reached {PAPER_SR_MAPE_PCT}%), and the extrapolation split (fit on the smaller "
        "images, tested on the largest: ext., in %)"
        + (
            ", and, where the runs vary a network knob, the knob split (one knob value left "
            "out at a time, tested on its runs: knob, in %, mean over the values left out)"
            if "knob MAPE %" in shown
            else ""
        )
        + ". sd: spread over seeds. Worst: the largest single error."
    )


def formula(models: Models, workload: str) -> None:
    by_name = {model.name: model for model in models}
    symbolic = by_name.get(SYMBOLIC)
    if not isinstance(symbolic, Predictor) or not symbolic.formula:
        st.caption("No symbolic-regression formula stored.")
        return
    st.markdown("**Symbolic regression's formula** (peak in GiB)")
    latex = curves.formula_latex(symbolic.formula)
    shown = curves.formula_display(latex and r"\mathrm{peak}_{\mathrm{GiB}} = " + latex)
    if shown:
        st.latex(shown)
    else:  # not a formula, or one too wide to break into lines: wrapped text, all of it
        st.code(symbolic.formula, language=None, wrap_lines=True)
    size = "" if symbolic.formula_length is None else f"{symbolic.formula_length} nodes; "
    st.caption(f"{size}inputs: {curves.shape_inputs(workload)}; fit on every measured run.")
    others = [m for m in models if isinstance(m, Predictor) and m.formula and m is not symbolic]
    if others:
        with st.expander("Other models' formulas"):
            for model in others:
                st.markdown(f"*{plain(model.title)}*")
                shown = curves.formula_display(curves.formula_latex(model.formula))
                if shown:
                    st.latex(shown)
                else:
                    st.code(model.formula or "", language=None, wrap_lines=True)


@st.cache_data(show_spinner=False, max_entries=data.MAX_VERSIONS * 8)
def floor_figures(
    db: Path, version: data.Version, workload: str, option: str
) -> tuple[floor.SamplingGap | None, list[floor.RepeatSpread]]:
    """The measurement floor of the profile's runs (~1 s for 10,000 runs: once per version)."""
    runs = runs_of(db, version, workload, option)
    return floor.sampling_gap(runs), floor.repeat_spreads(runs)


def measurement_floor(db: Path, version: data.Version, workload: str, option: str) -> None:
    st.subheader("Measurement floor")
    gap, spreads = floor_figures(db, version, workload, option)
    if gap is None:
        st.caption("No measured run yet.")
        return
    median_col, largest_col, spread_col = st.columns(3)
    median_col.metric(
        "Sampling gap, median",
        f"{gap.median_pct:.2f}%",
        help=f"Over {gap.n_runs} runs: {gap.median_mib:.1f} MiB.",
    )
    largest_col.metric(
        "Sampling gap, largest",
        f"{gap.max_pct:.2f}%",
        help=f"{gap.max_mib:.1f} MiB, at {plain(gap.worst_point)}.",
    )
    st.caption(
        "How far the kernel's high-water mark (VmHWM, what the models predict) lies "
        "above the peak memory_profiler saw sampling every 0.1 s."
    )
    largest = floor.largest_spread_pct(spreads)
    if largest is None:
        spread_col.metric(
            "Run-to-run spread",
            "not measured",
            help="No point was measured more than once; repeat one with --repeats.",
        )
        return
    spread_col.metric(
        "Run-to-run spread",
        f"{largest:.2f}%",
        help="The largest (max - min) / mean of the peak over a repeated point.",
    )
    repeats = pd.DataFrame([asdict(spread) for spread in spreads])
    st.dataframe(
        repeats[["point", "runs", "hwm_spread_pct"]].rename(columns={"hwm_spread_pct": "spread %"}),
        hide_index=True,
        placeholder=MISSING_CELL,
        column_config={"spread %": st.column_config.NumberColumn(format="%.2f")},
    )
    st.caption("A model error below these figures cannot be told from measurement noise.")


def render() -> None:
    st.title("Models")
    st.caption(
        "Measured peak memory against the paper's analytical model, memplan's refined "
        "analytical model, symbolic regression and the machine-learning baselines, "
        "for one machine profile at a time."
    )
    db = data.database()
    version = data.version(db)
    params = query_state.current()
    linked, problems = query_state.workload_from(params)
    # One above the other: abreast, at 1024 px both selects cut their value (issue 26).
    workload = choose_workload(linked)
    link = params if workload == linked else {}
    picked, machine_problems = machine_panel.choose(
        db, version, workload, f"models_{workload}_machine", link
    )
    for problem in problems + machine_problems:
        st.warning(query_state.plain(problem))
    query_state.write_view(workload, picked.option)
    machine_panel.note(picked)
    machine_panel.onednn_note(picked)
    option, machine = picked.option, picked.machine

    scores = data.scores(db, version, workload, machine)
    evaluated = bool(data.predictors(db, version, workload, machine))
    refused = data.refused_models(db, version, workload, machine)
    if refused:
        st.error(plain(refused))
    models = models_of(db, version, workload, option)
    points = measured(db, version, workload, option)
    title, command = workload_labels.title(workload), workload_labels.evaluate_command(workload)
    if not evaluated:
        words = plain(picked.words)
        if points.empty:
            st.info(
                f"No measured run of the {title} yet {words}, so no fitted models: only the "
                "analytical models are shown, which need none."
            )
        else:
            st.info(
                f"Only the analytical models are shown: this database has {len(points)} "
                f"measured run(s) of the {title} {words}, but no stored evaluation of them. "
                "Symbolic regression and the baselines appear here once they are fitted."
            )
        machine_panel.shortfall(db, version, workload, picked)

    names = [model.name for model in models]
    titles = {model.name: model.title for model in models}
    models_col, axes_col = st.columns([4, 1])
    chosen = models_col.multiselect(
        "Models",
        names,
        default=[name for name in DEFAULT_MODELS if name in names],
        format_func=lambda name: titles[name],
    )
    # One model far above the rest flattens every other curve on linear axes. Log axes
    # keep every chosen curve, and the measured dots, readable; leaving that model out
    # would hide a model the reader chose. So: log by default, and say which model.
    towering = curves.dwarfing(held_out(db, version, workload, option, chosen))
    log = axes_col.radio("Axes", AXES, index=int(bool(towering)), horizontal=True) == "Log"

    st.subheader("Peak memory against image size")
    if towering:
        st.caption(
            f"Log axes to start with: {plain(', '.join(towering))} predicts more than "
            f"{curves.DWARF_RATIO:g}x the other models somewhere, which would flatten their "
            "curves on linear axes."
        )
    peak_chart(db, version, workload, picked, points, chosen, log)
    if not points.empty:
        out_of_sample_charts(db, version, workload, option, chosen, log, evaluated)
    if workload == published_panel.STUDY_WORKLOAD:
        published_panel.render([m for m in models if m.name in chosen], points)

    # One above the other: side by side at 1024 px, neither had room for its table.
    st.subheader("Errors")
    if scores.empty:
        flag = f" --machine {machine}" if machine else ""
        st.caption(f"No scores yet: {code(command + flag)} computes them.")
    else:
        error_table(scores, models)
    formula(models, workload)
    measurement_floor(db, version, workload, option)


render()
