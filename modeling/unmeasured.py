"""Knob values a profile never measured: how far to widen a bound there, and why, in words.

A model fitted on a profile's float32 runs knows nothing of mixed_bfloat16; its
conformal bound was calibrated on float32 residuals only. The evaluation already
measured how wrong a model is on a knob value it never saw: each knob split
(`modeling.evaluation.splits.knob_split`) fits without one value and predicts its
runs. `HeldOut` is one such result on one profile — the largest measured peak
over the prediction of the model that never saw the value — and
`KnobEvidence.widening` turns those ratios into the factor a bound is multiplied
by where the answering profile never measured the value:

* the largest ratio of the same model on the profiles that did measure the value;
* where none did (or none stored a knob split of it), the largest ratio the same
  model had on any value of that knob, said so;
* where the same model has no stored knob split of that knob (a model kind fitted
  where no knob varied), the largest ratio any model had on the value, else on any
  value of the knob, naming the models, said so: never unwidened while a split of
  the knob is stored;
* where no knob split of that knob is stored at all, no widening, said so.

A calibrated model (`modeling.calibration_model`) answers with its prior's evidence:
offset + scale x prior inherits what the prior does on a value never measured
(`modeling.stored.predictor.Predictor.knob_model`).

Never below 1: a value never tried must not narrow a bound. Stored evidence only:
nothing is refitted at answer time (`modeling.stored.knob_splits` reads it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

# How many of several models' knob split results the words name (the largest first).
SHOWN_OF_SEVERAL = 3


@dataclass(frozen=True)
class HeldOut:
    """One knob split's result for one model on one profile."""

    profile: str
    model: str
    knob: str
    value: Any  # the value left out of the fit
    ratio: float  # the largest measured peak / prediction over the value's runs
    runs: int  # how many runs of the value were predicted


@dataclass(frozen=True)
class Widening:
    """How far to widen a bound for one value never measured, and on what evidence."""

    factor: float  # >= 1
    words: str  # "the bound is widened x1.17: …"


@dataclass(frozen=True)
class KnobEvidence:
    """Every stored knob split result of one workload, on every fitted profile."""

    held_out: tuple[HeldOut, ...] = ()
    # Other models' results (`of_model` keeps them): the widening where the answering
    # model has no knob split of a knob at all, rather than none while one is stored.
    other_models: tuple[HeldOut, ...] = ()

    def of_model(self, model: str) -> KnobEvidence:
        """The results of ``model`` (what a widening of its bound rests on), other models'
        kept apart for a knob ``model`` has no split of."""
        every = (*self.held_out, *self.other_models)
        return KnobEvidence(
            tuple(h for h in every if h.model == model),
            tuple(h for h in every if h.model != model),
        )

    def widening(self, knob: str, value: Any) -> Widening:
        """The widening for ``knob`` = ``value``, never measured by the answering profile
        (call on `of_model`'s evidence: the ratios of the model that answers)."""
        own = _of_knob(self.held_out, knob, value)
        if own is not None:
            return own
        others = _of_knob(self.other_models, knob, value, "a model")
        if others is not None:
            return Widening(
                others.factor,
                f"this model has no stored knob split of {knob}, so by other models': "
                f"{others.words}",
            )
        return Widening(
            1.0, f"no stored knob split of {knob} on any profile: the bound is not widened"
        )


def _of_knob(
    results: Sequence[HeldOut], knob: str, value: Any, whose: str = "this model"
) -> Widening | None:
    """The widening ``results`` give ``knob`` = ``value``: by the value's own splits, else by
    the knob's largest; None where none of them split ``knob``."""
    same = [h for h in results if h.knob == knob and h.value == value]
    if same:
        return Widening(_factor(same), f"the bound is widened {_evidence(same, whose)}")
    any_value = [h for h in results if h.knob == knob]
    if any_value:
        return Widening(
            _factor(any_value),
            f"no profile's stored knob split left {value} out, so the bound is widened by "
            f"the largest for any {knob} value, {_evidence(any_value, whose)}",
        )
    return None


def _factor(results: Sequence[HeldOut]) -> float:
    return max(1.0, *(h.ratio for h in results))


def _evidence(results: Sequence[HeldOut], whose: str) -> str:
    """``x1.17, the largest measured / predicted peak of this model fitted without the value
    left out (259d139078 mixed_bfloat16: 1.17 over 10 runs)``."""
    several = len({h.model for h in results}) > 1
    ordered = sorted(results, key=lambda h: -h.ratio)
    # Several models' results: the largest few, or the words would list every model.
    shown_results = ordered[:SHOWN_OF_SEVERAL] if several else ordered
    shown = ", ".join(
        f"{h.profile} {h.value}{f' ({h.model})' if several else ''}: {h.ratio:.2f} over "
        f"{h.runs} runs"
        for h in shown_results
    )
    if len(ordered) > len(shown_results):
        shown += f", and {len(ordered) - len(shown_results)} smaller"
    return (
        f"x{_factor(results):.2f}, the largest measured / predicted peak of {whose} fitted "
        f"without the value left out ({shown})"
    )


def held_out_results(
    profile: str, predictions: pd.DataFrame, runs: pd.DataFrame, knobs: Sequence[str]
) -> list[HeldOut]:
    """The knob split results of ``profile``'s stored ``predictions`` (its evaluation's held-out
    predictions), the knob values read from ``runs`` by run id.

    A knob split seed left out (knob, value) when its test runs are exactly the
    evaluated runs with that value; ratios where a prediction is not positive are skipped.
    """
    if predictions.empty or "split" not in predictions:
        return []
    known = runs.drop_duplicates("run_id").set_index("run_id")
    evaluated = known.loc[known.index.intersection(predictions["run_id"].unique())]
    found = []
    for _seed, split in predictions[predictions["split"] == "knob"].groupby("seed"):
        left_out = _left_out(set(split["run_id"]), evaluated, knobs)
        if left_out is None:
            continue
        for model, rows in split.groupby("model"):
            usable = rows[rows["predicted_bytes"] > 0]
            if usable.empty:
                continue
            ratio = float((usable["measured_bytes"] / usable["predicted_bytes"]).max())
            found.append(HeldOut(profile, str(model), *left_out, ratio, len(usable)))
    return found


def _left_out(
    test_ids: set[str], evaluated: pd.DataFrame, knobs: Sequence[str]
) -> tuple[str, Any] | None:
    """The (knob, value) whose evaluated runs are exactly ``test_ids``; None if none is."""
    for knob in knobs:
        if knob not in evaluated:
            continue
        values = evaluated.loc[evaluated.index.intersection(list(test_ids)), knob].dropna().unique()
        if len(values) != 1:
            continue
        with_value = set(evaluated.index[evaluated[knob] == values[0]])
        if with_value == test_ids:
            value = values[0]
            return knob, value.item() if hasattr(value, "item") else value
    return None
