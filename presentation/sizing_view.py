"""What the Sizing page asks and answers, for any workload, as plain values: no Streamlit.

* `SizingChoices` — what the page offers one workload: its valid square or
  cube sides, batch sizes, the knobs it lets the user set and their values
  (a value whose every run on the profile ended in error marked as failing
  there, `modeling.trainable`), the stored models; `choices_for` builds it from
  the models and the runs;
* `SizingState` — one question: workload, image, batch, knobs, budget,
  headroom, model, machine profile; `default_state` is the question a page opens on;
* `config_predictions` — every model's point prediction and upper bound for
  configurations, a bound below the closed-form floor replaced as
  `modeling.sizing` does;
* `models_frame` — every model's estimate as the page's table shows it: a model
  left out of the answer says why in a column of its own and gets no "fits"
  verdict (`left_out_cell`, `fits_cell`, shared with the report);
* `breakdown_frame` — the refined analytical model's terms for one configuration;
* `input_problems` — why a typed budget or headroom cannot be answered, in words,
  and `waiting_text`, what the answers say meanwhile;
* the answers' captions, in words, and `usable_text`, the budget less its headroom.

A workload offers only its own knobs (its ``LABELS.sizing_knobs``, a subset of its
``KNOBS``; `offered_knobs`): the U-Net's base filters and precision, the AlexNet's
classes and precision; the others keep the network's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from application.sizing import SizingQuestion
from core import workloads
from core.analytical import MemoryBreakdown
from core.units import GIB, format_bound
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import MAX_BATCH_SIZE, PRECISIONS, WorkloadConfig
from modeling import sizing, trainable
from modeling.decision import (
    OUTLIER_FACTOR,
    Confidence,
    Decision,
    ModelEstimate,
    approx_gib,
    credible_models,
    decide,
    evidence_for,
)
from modeling.evaluation.bounds import ConformalBound, upper_bound
from modeling.sizing import replace_below_floor
from modeling.stored.tables import best_model_name
from presentation import workload_labels
from presentation.curves import PointModel

# Past ~1024^3 even batch 1 needs more than the largest purchasable server (3 TB).
MAX_OFFERED_SIDE = 1024
MAX_OFFERED_BATCH = 128
# Less than the framework's own ~0.7 GiB cannot train anything; more than 64 TiB is a typo.
MIN_BUDGET_GIB, MAX_BUDGET_GIB = 0.5, 65536.0
MAX_HEADROOM_PCT = sizing.MAX_HEADROOM * 100
DEFAULT_BUDGET_GIB = 256.0
# The question a page opens on, per workload: a 128^3 volume at batch 4 for the
# U-Net, an ImageNet-sized 224^2 image at batch 32 for the AlexNet.
DEFAULT_SIDES = {"unet3d": 128, "alexnet": 224}
DEFAULT_BATCHES = {"unet3d": 4, "alexnet": 32}
FALLBACK_SIDE, FALLBACK_BATCH = 128, 4
# How a knob value that never trained on the profile is offered (`modeling.trainable`).
FAILS_HERE = "fails here"


@dataclass(frozen=True)
class KnobOffer:
    """A network knob the page lets the user set: its URL parameter, label and values."""

    knob: str  # the config field
    param: str  # the URL query parameter
    label: str
    options: tuple[Any, ...]  # offered besides any value the runs measured
    help: str


KNOB_OFFERS: dict[str, KnobOffer] = {
    offer.knob: offer
    for offer in (
        KnobOffer(
            "base_filters",
            "filters",
            "Base filters",
            (4, 8, 16, 32, 64),
            "Filters of the first level; each level doubles them.",
        ),
        KnobOffer(
            "classes",
            "classes",
            "Classes",
            (10, 100, 1000, 10000),
            "Output classes: the width of the classifier's last layer (fc8).",
        ),
        KnobOffer(
            "precision",
            "precision",
            "Precision",
            PRECISIONS,
            "Mixed precision keeps activations in 16 bits and weights in 32.",
        ),
    )
}


def offered_knobs(workload: str) -> list[KnobOffer]:
    """The knobs the page offers for ``workload``: its ``LABELS.sizing_knobs``, in widget order.

    A knob `KNOB_OFFERS` has no values for is offered as its declaration says: its
    choices, else its default (plus any value the runs measured).
    """
    module = workloads.get(workload)
    declared = {knob.name: knob for knob in module.KNOBS}
    return [
        KNOB_OFFERS.get(name)
        or KnobOffer(
            name,
            name,
            declared[name].label,
            declared[name].choices or (declared[name].default,),
            declared[name].help,
        )
        for name in module.LABELS.sizing_knobs
        if name in declared
    ]


@dataclass(frozen=True)
class SizingChoices:
    """What the Sizing page offers one workload: every value a link may set must be one of these."""

    workload: str
    sides: tuple[int, ...]  # valid image sides, ascending
    batch_sizes: tuple[int, ...]
    knobs: dict[str, tuple[Any, ...]]  # offered knob -> its values, in widget order
    models: tuple[str, ...]  # stored model names; empty before any evaluation
    # Knob -> its values that never trained on the profile -> why (`modeling.trainable`).
    failing: Mapping[str, Mapping[Any, str]] = field(default_factory=dict)
    min_budget_gib: float = MIN_BUDGET_GIB
    max_budget_gib: float = MAX_BUDGET_GIB
    max_headroom_pct: float = MAX_HEADROOM_PCT

    @property
    def dims(self) -> int:
        return workload_labels.dims(self.workload)

    def knob_label(self, knob: str, value: Any) -> str:
        """A knob's value as offered: ``mixed_float16 (fails here)`` where it never trained."""
        return f"{value} ({FAILS_HERE})" if value in self.failing.get(knob, {}) else str(value)

    def knob_help(self, knob: str) -> str:
        """The knob's help, and what a value marked as failing means, where one is."""
        said = KNOB_OFFERS[knob].help
        if not self.failing.get(knob):
            return said
        return (
            f"{said} Marked '{FAILS_HERE}': every run of that value on this machine profile "
            "ended in error; it gets the reason, not a prediction."
        )


@dataclass(frozen=True)
class SizingState:
    """One view of the Sizing page: the question asked."""

    workload: str
    image_shape: tuple[int, ...]  # (depth,) height, width
    one_side: bool  # chosen as one side (a square or cube) rather than every side
    batch_size: int
    knobs: tuple[tuple[str, Any], ...]  # (knob, value) of each offered knob, in widget order
    budget_gib: float
    headroom_pct: float
    model: str | None  # None when no model is stored
    # The machine profile the models are of (`core.profiles`; `presentation.machines.MIXED`
    # for an evaluation of several machines' runs); None: not chosen (a link from before).
    machine: str | None = None

    def knob(self, name: str) -> Any:
        return dict(self.knobs)[name]

    @property
    def config(self) -> WorkloadConfig:
        """The configuration asked about; knobs not offered keep the network's defaults."""
        module = workloads.get(self.workload)
        return module.Config(self.image_shape, self.batch_size, **dict(self.knobs))

    @property
    def image_label(self) -> str:
        """``128^3``, ``224^2``, or every side: ``240x240x144``, ``227x200``."""
        return workload_labels.shape_label(self.image_shape, self.one_side)

    def question(self, kind: str, machine: str | None) -> SizingQuestion:
        """The `application.sizing` question of ``kind`` this view asks of profile ``machine``.

        The view is the question and nothing else: the same inputs on the command
        line (`memplan size`) ask the same question.
        """
        return SizingQuestion(
            kind=kind,
            workload=self.workload,
            machine=machine,
            knobs=self.knobs,
            budget_bytes=round(self.budget_gib * GIB),
            headroom_pct=self.headroom_pct,
            model=self.model,
            image_shape=self.image_shape,
            batch_size=self.batch_size,
        )


def _knob_values(offer: KnobOffer, runs: pd.DataFrame) -> tuple[Any, ...]:
    """The offered values of a knob and every value the runs measured, numbers sorted."""
    measured = runs[offer.knob].dropna().unique().tolist() if offer.knob in runs else []
    if all(isinstance(value, str) for value in offer.options):
        return tuple(dict.fromkeys([*offer.options, *sorted(map(str, measured))]))
    return tuple(sorted(set(offer.options) | {int(value) for value in measured}))


def choices_for(workload: str, model_names: Sequence[str], runs: pd.DataFrame) -> SizingChoices:
    """What the page offers ``workload``, given its stored models and its runs."""
    module = workloads.get(workload)
    return SizingChoices(
        workload=workload,
        sides=tuple(module.square_sides(1, MAX_OFFERED_SIDE)),
        batch_sizes=tuple(range(1, MAX_OFFERED_BATCH + 1)),
        knobs={offer.knob: _knob_values(offer, runs) for offer in offered_knobs(workload)},
        models=tuple(model_names),
        failing={
            knob: {value: failure.reason for value, failure in values.items()}
            for knob, values in trainable.failing_values(runs, workload).items()
        },
    )


def _nearest(sides: Sequence[int], side: int) -> int:
    return min(sides, key=lambda candidate: (abs(candidate - side), candidate))


def default_state(
    choices: SizingChoices, scores: pd.DataFrame, machine: str | None = None
) -> SizingState:
    """The question the page opens on: the workload's usual image and batch, its reference
    network, and the stored model whose weakest split is best
    (`best_model_name`; of ``machine``'s evaluation, whose ``scores`` these are)."""
    workload = choices.workload
    best = best_model_name(scores) if not scores.empty else None
    names = choices.models
    defaults = workload_labels.knob_defaults(workload)
    side = _nearest(choices.sides, DEFAULT_SIDES.get(workload, FALLBACK_SIDE))
    return SizingState(
        workload=workload,
        image_shape=(side,) * choices.dims,
        one_side=True,
        batch_size=DEFAULT_BATCHES.get(workload, FALLBACK_BATCH),
        knobs=tuple((knob, defaults[knob]) for knob in choices.knobs),
        budget_gib=DEFAULT_BUDGET_GIB,
        headroom_pct=sizing.DEFAULT_HEADROOM * 100,
        model=best if best in names else (names[0] if names else None),
        machine=machine,
    )


def nearest_sides(side: int, sides: Sequence[int]) -> list[int]:
    """The offered sides just below and just above ``side`` (one at either end)."""
    below = [candidate for candidate in sides if candidate <= side]
    above = [candidate for candidate in sides if candidate >= side]
    return list(dict.fromkeys([*below[-1:], *above[:1]]))


def sides_text(sides: Sequence[int]) -> str:
    """``multiples of 16 from 16 to 1024`` or ``whole numbers from 67 to 1024``."""
    step = sides[1] - sides[0] if len(sides) > 1 else 1
    regular = step > 1 and all(side % step == 0 for side in sides)
    kind = f"multiples of {step}" if regular else "whole numbers"
    return f"{kind} from {sides[0]} to {sides[-1]}"


def side_help(choices: SizingChoices) -> str:
    """What the image side slider offers, and why."""
    sides = choices.sides
    if sides[1] - sides[0] > 1:
        return f"Multiples of {sides[0]} (2^(levels-1)): each pooling halves every side."
    return (
        f"Any side from {sides[0]}, the smallest the network leaves something of after "
        f"its convolutions and poolings, to {sides[-1]}."
    )


def gib(value_bytes: float) -> str:
    return f"{value_bytes / GIB:,.2f} GiB"


# What each input the page validates is called in a sentence.
INPUT_NAMES = {"budget": "memory budget", "headroom": "headroom"}


def budget_problem(budget_gib: float, choices: SizingChoices) -> str | None:
    """Why a typed budget (GiB) cannot be sized against, in words; None when it can."""
    low, high = choices.min_budget_gib, choices.max_budget_gib
    if math.isfinite(budget_gib) and low <= budget_gib <= high:
        return None
    if not math.isfinite(budget_gib):
        reason = "not a number"
    elif budget_gib <= 0:
        reason = "no memory at all"
    elif budget_gib < low:
        reason = "less than TensorFlow alone takes (about 0.7 GiB)"
    else:
        reason = f"more than {high:,g} GiB, surely a typo"
    return (
        f"A memory budget of {budget_gib:,g} GiB is {reason}: "
        f"give one between {low:g} and {high:,g} GiB."
    )


def headroom_problem(headroom_pct: float, choices: SizingChoices) -> str | None:
    """Why a typed headroom (%) cannot be sized with, in words; None when it can."""
    high = choices.max_headroom_pct
    if math.isfinite(headroom_pct) and 0 <= headroom_pct <= high:
        return None
    if not math.isfinite(headroom_pct):
        reason = "not a number"
    elif headroom_pct < 0:
        reason = "negative (headroom is memory kept free on top of the bound)"
    else:
        reason = f"more than {high / 100:g}x the bound, surely a typo"
    return f"A headroom of {headroom_pct:,g}% is {reason}: give one between 0 and {high:,g}%."


def input_problems(state: SizingState, choices: SizingChoices) -> dict[str, str]:
    """Each input of ``state`` that cannot be answered (``budget``, ``headroom``) -> why.

    Empty when every input is valid. The image, batch, knobs and model are picked
    from what ``choices`` offers, so only the typed numbers can be wrong.
    """
    found = {
        "budget": budget_problem(state.budget_gib, choices),
        "headroom": headroom_problem(state.headroom_pct, choices),
    }
    return {name: problem for name, problem in found.items() if problem}


def waiting_text(problems: Mapping[str, str]) -> str:
    """What the answers say while ``problems`` (`input_problems`) stand in their way."""
    names = " and ".join(INPUT_NAMES[name] for name in problems)
    return (
        f"Waiting for a valid {names}: no verdict or sizing answer until the input "
        "marked in the question is fixed."
    )


def budget_delta(budget_bytes: float, needed_bytes: float) -> tuple[str, str] | None:
    """The budget against what the answer needs, as a metric's delta and its colour.

    "12.3 GiB spare" (green) or "97.1 GiB over" (red: Streamlit's inverse colouring of
    a positive figure), never a negative spare; None when either is not a figure.
    """
    if not (math.isfinite(budget_bytes) and math.isfinite(needed_bytes)):
        return None
    left = budget_bytes - needed_bytes
    if left < 0:
        return f"{approx_gib(-left)} over", "inverse"
    return f"{approx_gib(left)} spare", "normal"


def usable_text(budget_gib: float, headroom_pct: float, usable_bytes: float) -> str:
    """What training may use of the budget, with the arithmetic it rests on.

    Headroom is on top of the bound (`modeling.sizing.memory_to_buy`: bound x
    (1 + headroom) <= memory), so what training may use is the budget divided by
    1 + headroom (`usable_budget_bytes`), not the budget less that percentage of it.
    """
    if headroom_pct == 0:
        return f"all of the {budget_gib:,g} GiB budget, no headroom kept"
    usable = gib(usable_bytes)
    return (
        f"the {budget_gib:,g} GiB budget leaves {usable} for training once {headroom_pct:g}% "
        f"headroom is added on top of it ({usable} + {headroom_pct:g}% = {budget_gib:,g} GiB)"
    )


def image_caption(found: sizing.ImageSizeAnswer, dims: int) -> str:
    following = (
        "every side offered fits"
        if found.next_side is None
        else f"{workload_labels.power(found.next_side, dims)} would need "
        f"{format_bound(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)}; {following}."


def batch_figure(found: sizing.BatchAnswer) -> str:
    """The largest batch as the page shows it: "4096 or more" where the search stopped at
    the most memplan accepts (`MAX_BATCH_SIZE`), not a batch the budget is full at."""
    if found.next_batch is None and found.batch_size == MAX_BATCH_SIZE:
        return f"{found.batch_size:,} or more"
    return str(found.batch_size)


def batch_caption(found: sizing.BatchAnswer) -> str:
    following = (
        f"every batch memplan accepts (up to {MAX_BATCH_SIZE:,}) fits"
        if found.next_batch is None
        else f"batch {found.next_batch} would need {format_bound(found.next_bound_bytes or 0)}"
    )
    return f"Needs up to {gib(found.bound_bytes)}; {following}."


def memory_caption(found: sizing.MemoryAnswer) -> str:
    return (
        f"Needs up to {gib(found.bound_bytes)}; {gib(found.required_bytes)} with "
        f"{found.headroom:.0%} headroom. Server 'GB' are binary: 1 GB = 1 GiB."
    )


# The breakdown's terms in words, in `MemoryBreakdown`'s order; the optimizer's is
# named after the workload's (`presentation.workload_labels.optimizer`).
BREAKDOWN_TERMS: dict[str, str] = {
    "framework_bytes": "framework",
    "weight_bytes": "weights",
    "gradient_bytes": "gradients",
    "optimizer_bytes": "optimizer ({optimizer})",
    "activation_bytes": "activations",
    "backward_bytes": "backward pass",
    "input_bytes": "input batch",
}


def breakdown_frame(breakdown: MemoryBreakdown, workload: str = DEFAULT_WORKLOAD) -> pd.DataFrame:
    """The refined model's terms for one configuration: ``term, gib, share_pct``, display order.

    The optimizer's term names ``workload``'s optimizer (Adam for the U-Net).
    """
    parts = breakdown.parts()
    total = breakdown.total_bytes
    optimizer = workload_labels.optimizer(workload)
    return pd.DataFrame(
        {
            "term": [BREAKDOWN_TERMS[name].format(optimizer=optimizer) for name in parts],
            "gib": [value / GIB for value in parts.values()],
            "share_pct": [value / total * 100 if total else 0.0 for value in parts.values()],
        }
    )


class BoundedModel(PointModel, Protocol):
    """A model with upper bounds (`modeling.stored.predictor.Predictor` is one)."""

    def bound_for(self, config: WorkloadConfig) -> ConformalBound: ...

    @property
    def training_range(self) -> Any: ...


def reach(model: BoundedModel, config: WorkloadConfig) -> float:
    """Image x batch of ``config`` over the largest the model's runs measured (> 1: beyond)."""
    largest = float(model.training_range.max_sample_megavoxels)
    sample_megavoxels = config.elements * config.batch_size / 1e6
    return sample_megavoxels / largest if largest > 0 else math.inf


def config_predictions(
    models: Iterable[BoundedModel], configs: Sequence[WorkloadConfig]
) -> pd.DataFrame:
    """Every model's point prediction and upper bound for each of ``configs``.

    models : `modeling.stored.predictor.Predictor` objects; each predicts all of
    ``configs`` in one call (a page asks for every batch size of one image at
    once, so moving the batch slider needs no prediction). The upper bound is
    the model's conformal bound, replaced where it falls below the refined
    closed-form estimate by that estimate times the most a run exceeded it
    (`modeling.sizing.replace_below_floor`), so it agrees with the sizing answers.
    One row per model x configuration, columns
    ``model, title, batch_size, image_shape, predicted_bytes, upper_bytes,
    bound_ratio, raised_to_closed_form, own_upper_bytes`` (the model's own bound,
    before that replacement), ``beyond`` (how the configuration lies
    outside the model's measured range, in words; empty inside it), ``reach``
    (`reach`), ``bound_evidence`` (what the bound rests on: how many distinct
    configurations, `ConformalBound.evidence`).
    """
    columns = [
        "model",
        "title",
        "batch_size",
        "image_shape",
        "predicted_bytes",
        "upper_bytes",
        "bound_ratio",
        "raised_to_closed_form",
        "own_upper_bytes",
        "beyond",
        "reach",
        "bound_evidence",
    ]
    if not configs:
        return pd.DataFrame(columns=columns)
    frames = []
    for model in models:
        predicted = np.asarray(model.point_bytes(configs), dtype=float)
        bounds = [model.bound_for(config) for config in configs]
        ratios = np.array([bound.ratio for bound in bounds])
        # What `Predictor.upper_bytes` computes, without predicting a second time.
        own = upper_bound(predicted, ratios)
        upper, raised = replace_below_floor(model, configs, own)
        frames.append(
            pd.DataFrame(
                {
                    "model": model.name,
                    "title": model.title,
                    "batch_size": [config.batch_size for config in configs],
                    "image_shape": [config.image_shape for config in configs],
                    "predicted_bytes": predicted,
                    "upper_bytes": upper,
                    "bound_ratio": ratios,
                    "raised_to_closed_form": raised,
                    "own_upper_bytes": own,
                    "beyond": [
                        "; ".join(model.training_range.beyond(config)) for config in configs
                    ],
                    "reach": [reach(model, config) for config in configs],
                    "bound_evidence": [bound.evidence for bound in bounds],
                }
            )
        )
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def knob_items(knobs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Knob values as a hashable cache key, NumPy scalars made Python ones."""
    return tuple(
        (knob, value.item() if hasattr(value, "item") else value) for knob, value in knobs.items()
    )


def estimates(table: pd.DataFrame) -> list[ModelEstimate]:
    """The rows of `config_predictions` for one configuration, as `modeling.decision` takes them."""
    return [
        ModelEstimate(
            name=str(row["model"]),
            title=str(row["title"]),
            predicted_bytes=float(row["predicted_bytes"]),
            upper_bytes=float(row["upper_bytes"]),
            raised_to_closed_form=bool(row["raised_to_closed_form"]),
            beyond=str(row["beyond"]),
            reach=float(row["reach"]),
            bound_evidence=str(row.get("bound_evidence", "")),
            own_upper_bytes=float(row.get("own_upper_bytes", math.nan)),
        )
        for row in table.to_dict("records")
    ]


def decision_for(
    models: Sequence[BoundedModel],
    config: WorkloadConfig,
    runs: pd.DataFrame,
    budget_gib: float,
    headroom_pct: float,
    asked_model: str,
) -> Decision:
    """The decision for one question: every model's estimate, the credible ones, the evidence.

    runs : the runs of the machine profile the models are of (any status).
    """
    table = config_predictions(models, [config])
    return decide(
        estimates(table),
        asked_model,
        config,
        evidence_for(config, runs),
        budget_gib * GIB,
        headroom_pct / 100,
    )


# Why models are left out of an answer (`modeling.decision.LeftOut.kind`), in words.
LEFT_OUT_WORDS = {
    "no positive prediction": "Predict no positive peak",
    "unbounded": "Give no finite bound",
    "below the floor": "Bound below the refined closed-form estimate, which every measured "
    "run exceeded",
    "outlier": f"Bound more than {OUTLIER_FACTOR:g}x away from the models' median bound",
}
# How each confidence colours the headline: green only where evidence backs a "fits".
TONES = {
    (Confidence.VERIFIED, True): "success",
    (Confidence.INSIDE, True): "success",
    (Confidence.BEYOND, True): "warning",
}


def headline_tone(decision: Decision) -> str:
    """``success``, ``warning`` or ``error``: a fit beyond the measured runs is a warning."""
    return TONES.get((decision.confidence, decision.fits), "error")


def decision_sentence(decision: Decision, image_label: str, machine: str) -> str:
    """The headline's sentence: the bound, the headroom, the budget, the model, the machine.

    machine : whose models answer, in words (`dashboard.machine_panel.Picked.words`).
    """
    estimate = decision.estimate
    config = decision.config
    budget = f"{decision.budget_bytes / GIB:,g} GiB"
    if decision.untrainable:
        return (
            f"{decision.untrainable} Asked: {image_label} at batch {config.batch_size}, {machine}."
        )
    if estimate is None:
        return (
            f"{decision.spread.capitalize()} for {image_label} at batch {config.batch_size}, "
            f"{machine}: measure it before sizing for it."
        )
    headroom = f"{decision.headroom * 100:g}% headroom"
    sentence = (
        f"{image_label} at batch {config.batch_size} needs up to {approx_gib(estimate.upper_bytes)}"
        f" ({estimate.title}; its point prediction is {approx_gib(estimate.predicted_bytes)}), "
        f"{approx_gib(decision.needed_bytes)} with {headroom}, of the {budget} budget; "
        f"{machine}."
    )
    if estimate.bound_evidence and not estimate.raised_to_closed_form:
        sentence += f" Its bound rests on {estimate.bound_evidence}."
    if decision.confidence is Confidence.BEYOND and estimate.beyond:
        sentence += f" Beyond the measured runs: {estimate.beyond}."
    return sentence


def left_out_lines(decision: Decision) -> list[str]:
    """The models left out of the answer, one line per reason: ``why: title (value), …``."""
    grouped: dict[str, list[str]] = {}
    for out in decision.credibility.left_out:
        grouped.setdefault(out.kind, []).append(f"{out.estimate.title} ({out.figure})")
    return [f"{LEFT_OUT_WORDS[kind]}: {', '.join(titles)}" for kind, titles in grouped.items()]


# Why a model is left out (`modeling.decision.LeftOut.kind`), in a table cell.
LEFT_OUT_CELLS = {
    "no positive prediction": "no positive peak",
    "unbounded": "no finite bound",
    "below the floor": "below closed form",
    "outlier": "bound {times} median",
}
# A verdict not given: the model is left out of the answer, so whether it fits says nothing.
NOT_JUDGED = "–"


def left_out_cell(decision: Decision, name: str) -> str:
    """Why model ``name`` is left out of the answer, in a few words; "" when it is credible."""
    out = decision.credibility.left_out_as(name)
    if out is None:
        return ""
    return LEFT_OUT_CELLS[out.kind].format(times=out.figure.rpartition(", ")[2])


def fits_cell(decision: Decision, name: str) -> str:
    """``yes`` or ``no``: model ``name``'s bound within what training may use of the budget;
    `NOT_JUDGED` for a model left out of the answer."""
    if not decision.credibility.is_credible(name):
        return NOT_JUDGED
    return (
        "yes" if decision.credibility.by_name[name].upper_bytes <= decision.usable_bytes else "no"
    )


def models_frame(table: pd.DataFrame, decision: Decision) -> pd.DataFrame:
    """Every model's estimate for the question as the page's table shows it.

    table : `config_predictions` rows of the question's configuration. Short
    column names so the table fits a 1024 px wide page. A model left out of the
    answer says why in a column of its own (the full reasons are listed under the
    table), gets no "fits" verdict, and shows the bound it is left out for: its
    own, where that fell below the closed form.
    """
    by_name = decision.credibility.by_name
    names = [name for name in table["model"] if name in by_name]
    ratios = dict(zip(table["model"], table["bound_ratio"], strict=True))
    return pd.DataFrame(
        {
            "model": [by_name[name].title for name in names],
            "predicted GiB": [by_name[name].predicted_bytes / GIB for name in names],
            "bound GiB": [by_name[name].shown_upper_bytes / GIB for name in names],
            "bound from": [f"x{ratios[name]:.2f}" for name in names],
            "fits": [fits_cell(decision, name) for name in names],
            "left out because": [left_out_cell(decision, name) for name in names],
        }
    )


def credible_at(models: Sequence[BoundedModel], config: WorkloadConfig) -> list[BoundedModel]:
    """The ``models`` credible for ``config`` (`modeling.decision.credible_models`), in order."""
    found = credible_models(estimates(config_predictions(models, [config])))
    return [model for model in models if found.is_credible(model.name)]


def report_file_name(state: SizingState) -> str:
    """``memplan-sizing-240x240x144-batch16.html``: the question, in a file name."""
    image = "x".join(str(side) for side in state.image_shape)
    return f"memplan-sizing-{state.workload}-{image}-batch{state.batch_size}.html"
