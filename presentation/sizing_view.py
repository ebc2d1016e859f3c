"""What the Sizing page asks and answers, for any workload, as plain values: no Streamlit.

* `SizingChoices` — what the page offers one workload: its valid square or
  cube sides, batch sizes, the knobs it lets the user set and their values
  (a value whose every run on the profile ended in error marked as failing
  there, `modeling.trainable`), the stored models; `choices_for` builds it from
  the models and the runs;
* `SizingState` — one question: workload, image, batch, knobs, budget,
  headroom, model, machine profile; `default_state` is the question a page opens on;
* `config_predictions` — every model's estimate of configurations as a table
  (`modeling.decision.estimates_for`), for the curves and charts;
* `input_problems` — why a typed budget or headroom cannot be answered, in words,
  and `waiting_text`, what the answers say meanwhile.

How the answers read (captions, the verdict, the every-model table) is
`presentation.sizing_text`'s.

A workload offers only its own knobs (its ``LABELS.sizing_knobs``, a subset of its
``KNOBS``; `offered_knobs`): the U-Net's base filters and precision, the AlexNet's
classes and precision; the others keep the network's defaults.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import pandas as pd

from application.sizing import SizingQuestion
from core import workloads
from core.units import GIB
from core.workloads.base import WorkloadConfig
from core.workloads.knobs import SizingOffer
from modeling import sizing, trainable
from modeling.decision import BoundedModel, estimates_for
from modeling.stored.tables import best_model_name
from presentation import workload_labels

# Past ~1024^3 even batch 1 needs more than the largest purchasable server (3 TB).
MAX_OFFERED_SIDE = 1024
MAX_OFFERED_BATCH = 128
# Less than the framework's own ~0.7 GiB cannot train anything; more than 64 TiB is a typo.
MIN_BUDGET_GIB, MAX_BUDGET_GIB = 0.5, 65536.0
MAX_HEADROOM_PCT = sizing.MAX_HEADROOM * 100
DEFAULT_BUDGET_GIB = 256.0
# The question a page opens on where a workload's LABELS name none.
FALLBACK_SIDE, FALLBACK_BATCH = 128, 4
# The columns of `config_predictions`.
PREDICTION_COLUMNS = (
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
)
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


def _offer(workload: ModuleType, offer: SizingOffer) -> KnobOffer:
    """``workload``'s `SizingOffer` with its knob's declaration filling what it leaves out."""
    knob = {knob.name: knob for knob in workload.KNOBS}[offer.knob]
    return KnobOffer(
        offer.knob,
        offer.param or offer.knob,
        knob.label,
        offer.values or knob.choices or (knob.default,),
        offer.help or f"{knob.help[0].upper()}{knob.help[1:]}.",
    )


def offered_knobs(workload: str) -> list[KnobOffer]:
    """The knobs the page offers for ``workload``: its ``LABELS.sizing_knobs``, in widget order.

    Each offers the values its `SizingOffer` lists, else the knob's choices, else its
    default (plus any value the runs measured).
    """
    module = workloads.get(workload)
    return [_offer(module, offer) for offer in module.LABELS.sizing_knobs]


def _every_offer() -> dict[str, KnobOffer]:
    """Each knob some workload offers, as the first to offer it does, in KNOBS order."""
    found: dict[str, KnobOffer] = {}
    for name in workloads.WORKLOADS:
        for offer in offered_knobs(name):
            found.setdefault(offer.knob, offer)
    return {name: found[name] for name in workloads.SIZING_OFFERS}


# Every knob some workload offers, by name: its URL parameter, label and help are the
# same for every workload that offers it (`core.workloads.SIZING_OFFERS` checks).
KNOB_OFFERS: dict[str, KnobOffer] = _every_offer()


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
    labels = workloads.labels(workload)
    side = _nearest(choices.sides, labels.default_side or FALLBACK_SIDE)
    return SizingState(
        workload=workload,
        image_shape=(side,) * choices.dims,
        one_side=True,
        batch_size=labels.default_batch or FALLBACK_BATCH,
        knobs=tuple((knob, defaults[knob]) for knob in choices.knobs),
        budget_gib=DEFAULT_BUDGET_GIB,
        headroom_pct=sizing.DEFAULT_HEADROOM * 100,
        model=best if best in names else (names[0] if names else None),
        machine=machine,
    )


def typed_value(typed: float, offered: Sequence[int], what: str) -> tuple[int, str | None]:
    """The offered value a typed ``what`` (``batch size``, ``image side``) stands for: itself
    when offered, else the nearest offered one, with a sentence saying so."""
    value = _nearest(offered, round(typed))
    if value == typed:
        return value, None
    return value, (
        f"A typed {what} of {typed:g} is not offered (the offered ones: {sides_text(offered)}): "
        f"showing the nearest, {value}."
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


def config_predictions(
    models: Iterable[BoundedModel], configs: Sequence[WorkloadConfig]
) -> pd.DataFrame:
    """Every model's estimate (`modeling.decision.estimates_for`) of each of ``configs``, as a
    table: one row per model x configuration, columns ``model, title, batch_size,
    image_shape, predicted_bytes, upper_bytes, bound_ratio, raised_to_closed_form,
    own_upper_bytes, beyond, reach, bound_evidence`` (`ModelEstimate`'s fields)."""
    rows = [
        {
            "model": e.name,
            "title": e.title,
            "batch_size": config.batch_size,
            "image_shape": config.image_shape,
            "predicted_bytes": e.predicted_bytes,
            "upper_bytes": e.upper_bytes,
            "bound_ratio": e.bound_ratio,
            "raised_to_closed_form": e.raised_to_closed_form,
            "own_upper_bytes": e.own_upper_bytes,
            "beyond": e.beyond,
            "reach": e.reach,
            "bound_evidence": e.bound_evidence,
        }
        for model in models
        for e, config in zip(estimates_for(model, configs), configs, strict=True)
    ]
    return pd.DataFrame(rows, columns=list(PREDICTION_COLUMNS))


def knob_items(knobs: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """Knob values as a hashable cache key, NumPy scalars made Python ones."""
    return tuple(
        (knob, value.item() if hasattr(value, "item") else value) for knob, value in knobs.items()
    )


def report_file_name(state: SizingState) -> str:
    """``memplan-sizing-240x240x144-batch16.html``: the question, in a file name."""
    image = "x".join(str(side) for side in state.image_shape)
    return f"memplan-sizing-{state.workload}-{image}-batch{state.batch_size}.html"
