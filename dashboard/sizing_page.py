"""The Sizing page: will this configuration fit, and what is the largest that does?

Inputs on the left (image shape, batch, network knobs, budget, headroom, model),
answers on the right: the chosen model's predicted peak and upper bound with a
fits / does-not-fit verdict, every model's prediction, the three sizing answers
of `modeling.sizing`, and the refined analytical breakdown. The inputs live in
the URL (`dashboard.query_state`), so a link reproduces the view.

A rerun only predicts a handful of configurations with the cached stored models;
the sizing scans are cached per question.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from core.analytical import refined_breakdown
from core.units import GIB
from core.workloads.base import PRECISIONS
from core.workloads.unet3d import UNetConfig, valid_sides
from dashboard import data, query_state
from dashboard.query_state import SizingChoices, SizingState
from modeling import sizing
from modeling.errors import ModelingError
from modeling.stored.predictor import Predictor
from modeling.stored.tables import best_model_name
from presentation import charts, curves

CUBE, DHW = "Cube", "D × H × W"
# The reference network; the page sizes it with other base filters and precisions.
LEVELS = UNetConfig((16, 16, 16)).levels
# Past ~1024^3 even batch 1 needs more than the largest purchasable server (3 TB).
MAX_OFFERED_SIDE = 1024
MAX_OFFERED_BATCH = 128
BASE_FILTER_OPTIONS = (4, 8, 16, 32, 64)
# Less than the framework's own ~0.7 GiB cannot train anything; more than 64 TiB is a typo.
MIN_BUDGET_GIB, MAX_BUDGET_GIB = 0.5, 65536.0
MAX_HEADROOM_PCT = sizing.MAX_HEADROOM * 100
EVALUATE_HINT = "python -m modeling evaluate"
DEFAULT_SIDE, DEFAULT_BATCH, DEFAULT_BUDGET_GIB = 128, 4, 256.0
# The inputs outlive a page switch (the URL does not: navigation clears it), so
# coming back to Sizing shows the same question; a new session starts from the URL.
PERSIST = "session"
# Widget keys.
KEYS = {
    "shape": "sizing_shape", "side": "sizing_side", "depth": "sizing_depth",
    "height": "sizing_height", "width": "sizing_width", "batch": "sizing_batch",
    "filters": "sizing_filters", "precision": "sizing_precision", "budget": "sizing_budget",
    "headroom": "sizing_headroom", "model": "sizing_model",
}  # fmt: skip


def gib(value_bytes: float) -> str:
    return f"{value_bytes / GIB:,.2f} GiB"


def choices_for(predictors: list[Predictor], runs: pd.DataFrame) -> SizingChoices:
    measured_filters = {int(f) for f in runs["base_filters"].dropna()} if len(runs) else set()
    return SizingChoices(
        sides=tuple(valid_sides(LEVELS, 1, MAX_OFFERED_SIDE)),
        levels=LEVELS,
        batch_sizes=tuple(range(1, MAX_OFFERED_BATCH + 1)),
        base_filters=tuple(sorted(set(BASE_FILTER_OPTIONS) | measured_filters)),
        precisions=PRECISIONS,
        models=tuple(p.name for p in predictors),
        min_budget_gib=MIN_BUDGET_GIB,
        max_budget_gib=MAX_BUDGET_GIB,
        max_headroom_pct=MAX_HEADROOM_PCT,
    )


def default_state(predictors: list[Predictor], scores: pd.DataFrame) -> SizingState:
    names = [p.name for p in predictors]
    best = best_model_name(scores) if not scores.empty else None
    return SizingState(
        image_shape=(DEFAULT_SIDE,) * 3, cube=True, batch_size=DEFAULT_BATCH,
        base_filters=UNetConfig((16, 16, 16)).base_filters, precision=PRECISIONS[0],
        budget_gib=DEFAULT_BUDGET_GIB, headroom_pct=sizing.DEFAULT_HEADROOM * 100,
        model=best if best in names else (names[0] if names else None),
    )  # fmt: skip


def seed(key: str, value: object, options: tuple | None = None) -> None:
    """Start a widget at ``value`` (from the URL) unless the user has already set it."""
    current = st.session_state.get(key)
    if key not in st.session_state or (options is not None and current not in options):
        st.session_state[key] = value


def inputs(start: SizingState, choices: SizingChoices, titles: dict[str, str]) -> SizingState:
    """The question, as widgets started from ``start``; returns what they say now."""
    seed(KEYS["shape"], CUBE if start.cube else DHW)
    shape_mode = st.radio(
        "Image shape", [CUBE, DHW], key=KEYS["shape"], persist_state=PERSIST, horizontal=True
    )
    sides = choices.sides
    side_help = f"Multiples of {sides[0]} (2^(levels-1)): each pooling halves every side."
    if shape_mode == CUBE:
        seed(KEYS["side"], max(start.image_shape), sides)
        side = st.select_slider(
            "Image side", options=sides, key=KEYS["side"], persist_state=PERSIST, help=side_help
        )
        image_shape = (side, side, side)
    else:
        picked = []
        for name, value in zip(("depth", "height", "width"), start.image_shape, strict=True):
            seed(KEYS[name], value, sides)
            picked.append(st.select_slider(name.capitalize(), options=sides, key=KEYS[name],
                                           persist_state=PERSIST, help=side_help))  # fmt: skip
        image_shape = (picked[0], picked[1], picked[2])
    seed(KEYS["batch"], start.batch_size, choices.batch_sizes)
    batch = st.select_slider(
        "Batch size", options=choices.batch_sizes, key=KEYS["batch"], persist_state=PERSIST
    )
    left, right = st.columns(2)
    seed(KEYS["filters"], start.base_filters, choices.base_filters)
    filters = left.selectbox(
        "Base filters",
        choices.base_filters,
        key=KEYS["filters"],
        persist_state=PERSIST,
        help="Filters of the first level; each level doubles them.",
    )
    seed(KEYS["precision"], start.precision, choices.precisions)
    precision = right.selectbox(
        "Precision", choices.precisions, key=KEYS["precision"], persist_state=PERSIST
    )
    seed(KEYS["budget"], float(start.budget_gib))
    budget = left.number_input(
        "Memory budget (GiB)", min_value=choices.min_budget_gib,
        max_value=choices.max_budget_gib, step=16.0, key=KEYS["budget"], persist_state=PERSIST,
        help="The machine's memory, in GiB (server 'GB' are binary: 256 GB = 256 GiB).",
    )  # fmt: skip
    seed(KEYS["headroom"], float(start.headroom_pct))
    headroom = right.number_input(
        "Headroom (%)", min_value=0.0, max_value=choices.max_headroom_pct, step=5.0,
        key=KEYS["headroom"], persist_state=PERSIST,
        help="Kept free for the OS, the data pipeline and other processes, on top of the bound.",
    )  # fmt: skip
    if choices.models:
        seed(KEYS["model"], start.model, choices.models)
    model = st.selectbox(
        "Model", choices.models, key=KEYS["model"], persist_state=PERSIST,
        format_func=lambda name: titles[name], disabled=not choices.models,
        placeholder="no stored models",
        help="Default: the stored model with the smallest worst-case extrapolation error.",
    )  # fmt: skip
    return SizingState(
        image_shape=image_shape, cube=shape_mode == CUBE, batch_size=int(batch),
        base_filters=int(filters), precision=str(precision), budget_gib=float(budget),
        headroom_pct=float(headroom), model=model,
    )  # fmt: skip


def config_of(state: SizingState) -> UNetConfig:
    return UNetConfig(state.image_shape, state.batch_size, **knobs_of(state))


def knobs_of(state: SizingState) -> dict[str, object]:
    return {"base_filters": state.base_filters, "precision": state.precision}


@st.cache_data(show_spinner=False, max_entries=64)
def predictions(
    db_path: Path, db_version: data.Version, image_shape: tuple[int, int, int],
    knobs: tuple[tuple[str, object], ...], batch_sizes: tuple[int, ...],
) -> pd.DataFrame:  # fmt: skip
    """Every stored model's prediction and bound for this image at every batch size offered.

    One call per model covers all batch sizes, so moving the batch slider costs no prediction.
    """
    configs = [UNetConfig(image_shape, batch, **dict(knobs)) for batch in batch_sizes]
    return curves.config_predictions(data.predictors(db_path, db_version), configs)


QUESTIONS = {
    "image": sizing.largest_image_side,
    "batch": sizing.largest_batch,
    "buy": sizing.memory_to_buy,
}


@st.cache_data(show_spinner=False, max_entries=256)
def answer(
    db_path: Path, db_version: data.Version, model_name: str, question: str, **arguments: object
) -> object:
    """One `modeling.sizing` answer, or the `ModelingError` message.

    Cached on exactly what the question depends on: moving the batch slider does
    not rescan every batch size for the largest batch.
    """
    model = next(p for p in data.predictors(db_path, db_version) if p.name == model_name)
    try:
        return QUESTIONS[question](model, **arguments)
    except ModelingError as error:
        return str(error)


def verdict(chosen: pd.Series, state: SizingState, usable_bytes: int) -> None:
    """The chosen model's prediction, bound, and whether it fits the budget."""
    upper, budget_bytes = chosen["upper_bytes"], state.budget_gib * GIB
    predicted_col, upper_col, verdict_col = st.columns(3)
    predicted_col.metric("Predicted peak", gib(chosen["predicted_bytes"]),
                         help=f"{chosen['title']}: its point prediction.")  # fmt: skip
    upper_col.metric(
        "Upper bound", gib(upper) if math.isfinite(upper) else "unbounded",
        help=f"x{chosen['bound_ratio']:.3f} of the prediction: the 90% split-conformal bound"
        + (", raised to the refined closed-form estimate" if chosen["raised_to_closed_form"]
           else ""),
    )  # fmt: skip
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
        f"needs up to {gib(upper)}, {gib(needed)} with {state.headroom_pct:g}% headroom, "
        f"of the {state.budget_gib:g} GiB budget ({chosen['title']})."
    )
    if fits:
        st.success(f"**Fits**: {query_state.image_label(state)} at batch {state.batch_size} "
                   + sentence)  # fmt: skip
    else:
        st.error(f"**Does not fit**: {query_state.image_label(state)} at batch "
                 f"{state.batch_size} " + sentence)  # fmt: skip
    if chosen["raised_to_closed_form"]:
        st.warning(
            f"{chosen['title']} predicts less than the refined closed-form estimate here, which "
            "every measured run exceeded, so the bound is the closed-form estimate instead; "
            "this model's formula is not to be trusted here."
        )
    if chosen["beyond"]:
        st.warning(
            f"This configuration lies beyond the measured runs: {chosen['beyond']}. "
            "The model was never checked there; its bound is a best guess, not a guarantee."
        )


def every_model(table: pd.DataFrame, state: SizingState, usable_bytes: int) -> None:
    shown = pd.DataFrame({
        "model": table["title"],
        "predicted (GiB)": table["predicted_bytes"] / GIB,
        "upper bound (GiB)": table["upper_bytes"] / GIB,
        "bound x": table["bound_ratio"],
        "fits": ["Fits" if upper <= usable_bytes else "Does not fit"
                 for upper in table["upper_bytes"]],
        "measured range": ["beyond" if beyond else "inside" for beyond in table["beyond"]],
    })  # fmt: skip
    st.dataframe(
        shown, hide_index=True,
        column_config={
            "predicted (GiB)": st.column_config.NumberColumn(format="%.2f"),
            "upper bound (GiB)": st.column_config.NumberColumn(format="%.2f"),
            "bound x": st.column_config.NumberColumn(format="%.3f"),
        },
    )  # fmt: skip
    frame = table.assign(predicted_gib=table["predicted_bytes"] / GIB,
                         upper_gib=table["upper_bytes"] / GIB)  # fmt: skip
    st.altair_chart(charts.bounds(frame, state.budget_gib, usable_bytes / GIB), width="stretch")


def image_caption(found: sizing.ImageSizeAnswer) -> str:
    following = (
        "every side offered fits"
        if found.next_side is None
        else f"{found.next_side}^3 would need {gib(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)}; {following}."  # fmt: skip


def batch_caption(found: sizing.BatchAnswer) -> str:
    following = (
        "every batch accepted fits"
        if found.next_batch is None
        else f"batch {found.next_batch} would need {gib(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)}; {following}."  # fmt: skip


def memory_caption(found: sizing.MemoryAnswer) -> str:
    return (f"Needs up to {gib(found.bound_bytes)}; {gib(found.required_bytes)} with "
            f"{found.headroom:.0%} headroom. Server 'GB' are binary: 1 GB = 1 GiB.")  # fmt: skip


def show_answer(found: Any, label: str, value: Callable[[Any], str],
                caption: Callable[[Any], str]) -> None:  # fmt: skip
    """One sizing answer: the value, what it needs, the model and bound, any warning."""
    if isinstance(found, str):
        st.error(found)
        return
    st.metric(label, value(found))
    st.caption(caption(found))
    st.caption(f"Model {found.basis.model}; bound: {found.basis.bound}.")
    if found.basis.warning:
        st.warning(found.basis.warning)


def sizing_answers(db: Path, version: data.Version, state: SizingState, usable: int) -> None:
    """Largest image at this batch, largest batch at this image, memory to buy."""
    image_col, batch_col, buy_col = st.columns(3)
    knobs = knobs_of(state)
    with image_col:
        show_answer(
            answer(db, version, state.model, "image", budget_bytes=usable,
                   batch_size=state.batch_size, knobs=knobs),
            f"Largest cube at batch {state.batch_size}", lambda found: f"{found.side}^3",
            image_caption,
        )  # fmt: skip
    with batch_col:
        show_answer(
            answer(db, version, state.model, "batch", budget_bytes=usable,
                   image_shape=state.image_shape, knobs=knobs),
            f"Largest batch at {query_state.image_label(state)}",
            lambda found: str(found.batch_size), batch_caption,
        )  # fmt: skip
    with buy_col:
        show_answer(
            answer(db, version, state.model, "buy", image_shape=state.image_shape,
                   batch_size=state.batch_size, headroom=state.headroom_pct / 100,
                   knobs=knobs),
            "Memory to buy", lambda found: f"{found.memory_gb} GB", memory_caption,
        )  # fmt: skip


def breakdown(config: UNetConfig, runs: pd.DataFrame, predicted_bytes: float | None) -> None:
    terms = refined_breakdown(config, curves.framework_bytes(runs))
    if predicted_bytes is None:
        st.metric(
            "Refined closed-form estimate",
            gib(terms.total_bytes),
            help="Not a bound: what the closed form counts, without fitting anything.",
        )
    st.altair_chart(charts.breakdown(curves.breakdown_frame(terms)), width="stretch")
    compared = "" if predicted_bytes is None else (
        f"; the chosen model predicts {gib(predicted_bytes)}. The difference is what the closed "
        "form leaves out: building and tracing the model (oneDNN caches, the graph, allocator "
        "slack)"
    )  # fmt: skip
    st.caption(f"Refined closed form: {gib(terms.total_bytes)} in all, the framework term being "
               f"the median measured post-import memory{compared}.")  # fmt: skip


def render() -> None:
    st.title("Sizing")
    st.caption("How much memory will training this 3D U-Net take, and what is the largest image "
               "or batch that fits the memory you have? Upper bounds, not point predictions, "
               "decide: a point prediction is low half the time.")  # fmt: skip
    db = data.database()
    version = data.version(db)
    predictors = data.predictors(db, version)
    runs = data.runs(db, version)
    titles = {p.name: p.title for p in predictors}
    choices = choices_for(predictors, runs)
    start, problems = query_state.read(choices, default_state(predictors, data.scores(db, version)))
    for problem in problems:
        st.warning(problem)

    question, answers = st.columns([1, 2], gap="large")
    with question:
        st.subheader("Question")
        state = inputs(start, choices, titles)
    query_state.write(state)
    config = config_of(state)
    usable = curves.usable_budget_bytes(state.budget_gib * GIB, state.headroom_pct / 100)
    with answers:
        if not predictors:
            st.info(f"No fitted models in this database yet: run `{EVALUATE_HINT}` (add "
                    f"`--db {db}` for this one) to get predictions, bounds and sizing answers. "
                    "Meanwhile, the refined closed-form estimate:")  # fmt: skip
            st.subheader("Refined analytical breakdown")
            breakdown(config, runs, None)
            return
        every_batch = predictions(db, version, state.image_shape, tuple(knobs_of(state).items()),
                                  choices.batch_sizes)  # fmt: skip
        table = every_batch[every_batch["batch_size"] == state.batch_size]
        chosen = table.set_index("model").loc[state.model]
        st.subheader(f"{query_state.image_label(state)} at batch {state.batch_size}")
        verdict(chosen, state, usable)
        with st.expander("Every model's prediction and upper bound", expanded=True):
            every_model(table, state, usable)
    st.subheader("What fits")
    st.caption(f"Answers use what training may use of the budget: {state.budget_gib:g} GiB less "
               f"{state.headroom_pct:g}% headroom = {gib(usable)}.")  # fmt: skip
    sizing_answers(db, version, state, usable)
    st.subheader("Refined analytical breakdown")
    breakdown(config, runs, chosen["predicted_bytes"])


render()
