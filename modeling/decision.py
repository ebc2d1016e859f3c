"""The sizing decision and the evidence behind it: which models to believe, how sure to be.

A fitted model answers anywhere, including where it is nonsense: far past the
measured runs a tree ensemble predicts the largest peak it was trained on, a
hybrid formula can go negative, and the paper's analytical model carries a
bound ten times everyone else's. A buyer needs the decision worded by how much
evidence stands behind it. So:

* `estimates_for` — every model's `ModelEstimate` for configurations: its point
  prediction and its upper bound, raised where it falls below the closed-form floor
  (`modeling.closed_form_floor.replace_below_floor`), so it agrees with the sizing answers;
* `credible_models` — sorts every model's estimate for one configuration into
  the credible ones (their bounds give the spread shown beside the answer) and
  those left out, each with the reason in words: no positive prediction or no
  finite bound; a bound below the closed-form floor, the least share of the
  refined closed-form estimate any measured run reached; or a bound far from
  the others' median;
* `evidence_for` — what this machine's runs say about the configuration: the
  runs of exactly it (a measured answer), the largest run measured, and whether
  a setting of it never trained there (`modeling.trainable`: then the decision
  is that reason, not a prediction);
* `decide` — the verdict with its `Confidence`: verified by a run, a prediction
  inside the measured range, or a prediction so many times beyond the largest
  measured run that it should be verified first; every answer from another
  machine's runs (`modeling.transfer`) is beyond the measured range of the machine
  asked about, whatever those runs measured.

The verdict uses the upper bound, never the point prediction: a point
prediction is low half the time. The verdict is data (`Decision`, its `Confidence`);
how it reads on a page or in a report is `presentation.sizing_text`'s.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

import numpy as np
import pandas as pd

from core import workloads
from core.units import GIB, approx_gib
from core.workloads.base import WorkloadConfig
from modeling import trainable
from modeling.closed_form_floor import SizingModel, replace_below_floor
from modeling.evaluation.bounds import upper_bound

# A bound more than this factor above or below the median bound of the models
# otherwise credible is "far outside the others" (the paper model's bound is
# about 10x the rest at every point of the reference grid; credible models stay
# within 1.3x of each other there).
OUTLIER_FACTOR = 3.0
# With fewer credible models than this, no median can tell which one is the odd one out.
MIN_MODELS_FOR_OUTLIERS = 3
# The peak column the models fit (`modeling.features.MEASURED_PEAK_COLUMN`).
PEAK_COLUMN = "peak_hwm_bytes"
# A run's sampled peak this far from its high-water mark (a fraction of it) or more is quoted
# beside it: the sampler missed a spike (docs/measurement.md).
SAMPLED_GAP_QUOTED = 0.005


@dataclass(frozen=True)
class ModelEstimate:
    """One model's answer for one configuration."""

    name: str
    title: str
    predicted_bytes: float
    upper_bytes: float  # as `modeling.closed_form_floor.replace_below_floor` leaves it
    raised_to_closed_form: bool  # the model's own bound fell below the refined estimate
    beyond: str  # how the configuration lies outside the model's measured range; "" inside
    reach: float  # image x batch over the largest measured run's (> 1: beyond it)
    # What the bound rests on, in words (`ConformalBound.evidence`): how many distinct
    # configurations, and "thin evidence" where the bound is the worst of few; "" unknown.
    bound_evidence: str = ""
    # The model's own conformal bound, before `replace_below_floor` (NaN: unknown).
    own_upper_bytes: float = math.nan
    bound_ratio: float = math.nan  # the own bound is the prediction times this
    config: WorkloadConfig | None = None  # the configuration estimated
    # The model's runs are another machine's than the one asked about (`modeling.transfer`):
    # no run of theirs measured this machine, so none verifies its answer.
    another_machine: bool = False

    @property
    def shown_upper_bytes(self) -> float:
        """The bound a table shows beside this model: its own where it fell below the closed
        form (what it is left out for), else `upper_bytes`."""
        if self.raised_to_closed_form and math.isfinite(self.own_upper_bytes):
            return self.own_upper_bytes
        return self.upper_bytes


@dataclass(frozen=True)
class LeftOut:
    """A model left out of the answer, and why, in words."""

    estimate: ModelEstimate
    reason: str  # a sentence: "predicts 17.3 GiB, and its bound falls below …"
    kind: str  # "no positive prediction", "unbounded", "below the floor" or "outlier"
    figure: str  # the number that gives it away: "predicts 17.3 GiB", "bound 1,617 GiB, 10.0x"


@dataclass(frozen=True)
class Credibility:
    """The models believed for one configuration, and those left out."""

    credible: tuple[ModelEstimate, ...]
    left_out: tuple[LeftOut, ...]
    every: tuple[ModelEstimate, ...] = ()  # every model's estimate, in the models' order

    @property
    def low_bytes(self) -> float:
        return min((e.upper_bytes for e in self.credible), default=math.nan)

    @property
    def high_bytes(self) -> float:
        return max((e.upper_bytes for e in self.credible), default=math.nan)

    def is_credible(self, name: str) -> bool:
        return any(e.name == name for e in self.credible)

    @property
    def by_name(self) -> dict[str, ModelEstimate]:
        """Every model's estimate, credible or left out, by the model's name."""
        return {e.name: e for e in self.credible} | {
            o.estimate.name: o.estimate for o in self.left_out
        }

    def left_out_as(self, name: str) -> LeftOut | None:
        """Why model ``name`` was left out, as `LeftOut`; None when it is credible."""
        return next((out for out in self.left_out if out.estimate.name == name), None)

    def reason(self, name: str) -> str:
        """Why model ``name`` was left out; empty when it is credible."""
        out = self.left_out_as(name)
        return out.reason if out else ""


def sampled_aside(hwm_bytes: float, sampled_bytes: float | None, interval_s: float | None) -> str:
    """``high-water mark; the 0.1 s sampler saw 7.36 GiB``; "" where the two peaks agree.

    A measured peak is the kernel's high-water mark, what the models fit; the run's
    sampled peak (memory_profiler every ``interval_s`` seconds) is named beside it only
    when it lies `SAMPLED_GAP_QUOTED` of it or more away.
    """
    if sampled_bytes is None or not math.isfinite(sampled_bytes) or not hwm_bytes > 0:
        return ""
    if abs(hwm_bytes - sampled_bytes) < SAMPLED_GAP_QUOTED * hwm_bytes:
        return ""
    known = interval_s is not None and math.isfinite(interval_s)
    sampler = f"the {interval_s:g} s sampler" if known else "the sampler"
    return f"high-water mark; {sampler} saw {approx_gib(sampled_bytes)}"


class BoundedModel(SizingModel, Protocol):
    """A model with a title and upper bounds (`modeling.stored.predictor.Predictor` is one)."""

    title: str


def reach(model: BoundedModel, config: WorkloadConfig) -> float:
    """Image x batch of ``config`` over the largest the model's runs measured (> 1: beyond)."""
    largest = float(model.training_range.max_sample_megavoxels)
    sample_megavoxels = config.elements * config.batch_size / 1e6
    return sample_megavoxels / largest if largest > 0 else math.inf


def estimates_for(model: BoundedModel, configs: Sequence[WorkloadConfig]) -> list[ModelEstimate]:
    """``model``'s estimate of each of ``configs``, predicted in one call (a page asks for
    every batch size of one image at once)."""
    predicted = np.asarray(model.point_bytes(configs), dtype=float)
    bounds = [model.bound_for(config) for config in configs]
    ratios = np.array([bound.ratio for bound in bounds])
    # What `Predictor.upper_bytes` computes, without predicting a second time.
    own = upper_bound(predicted, ratios)
    upper, raised = replace_below_floor(model, configs, own)
    return [
        ModelEstimate(
            name=model.name,
            title=model.title,
            predicted_bytes=float(predicted[i]),
            upper_bytes=float(upper[i]),
            raised_to_closed_form=bool(raised[i]),
            beyond="; ".join(model.training_range.beyond(config)),
            reach=reach(model, config),
            bound_evidence=bounds[i].evidence,
            own_upper_bytes=float(own[i]),
            bound_ratio=float(ratios[i]),
            config=config,
            another_machine=bool(model.training_range.other_machine),
        )
        for i, config in enumerate(configs)
    ]


def estimates_at(models: Iterable[BoundedModel], config: WorkloadConfig) -> list[ModelEstimate]:
    """Every model's estimate of ``config``, in the models' order."""
    return [estimate for model in models for estimate in estimates_for(model, [config])]


def _unusable(estimate: ModelEstimate) -> LeftOut | None:
    """Why ``estimate`` cannot be believed whatever the others say; None if it can."""
    predicted = approx_gib(estimate.predicted_bytes)
    if not (math.isfinite(estimate.predicted_bytes) and estimate.predicted_bytes > 0):
        figure = f"predicts {estimate.predicted_bytes / GIB:,.0f} GiB"
        reason = f"{figure} here, which no run can take"
        return LeftOut(estimate, reason, "no positive prediction", figure)
    if not math.isfinite(estimate.upper_bytes):
        return LeftOut(estimate, "gives no finite upper bound here", "unbounded", "no bound")
    if estimate.raised_to_closed_form:
        own = estimate.own_upper_bytes
        bound = f"its bound, {approx_gib(own)}," if math.isfinite(own) else "its bound"
        reason = (
            f"predicts {predicted}, and {bound} falls below the closed-form floor, the "
            "least share of the refined closed-form estimate any measured run reached"
        )
        return LeftOut(estimate, reason, "below the floor", f"predicts {predicted}")
    return None


def credible_models(estimates: Sequence[ModelEstimate]) -> Credibility:
    """Which of ``estimates`` (every model's, for one configuration) to believe, and why not."""
    left_out: list[LeftOut] = []
    usable: list[ModelEstimate] = []
    for estimate in estimates:
        unusable = _unusable(estimate)
        if unusable:
            left_out.append(unusable)
        else:
            usable.append(estimate)
    if len(usable) < MIN_MODELS_FOR_OUTLIERS:
        return Credibility(tuple(usable), tuple(left_out), tuple(estimates))
    median = float(np.median([e.upper_bytes for e in usable]))
    credible = []
    for estimate in usable:
        ratio = estimate.upper_bytes / median
        if ratio > OUTLIER_FACTOR or ratio < 1 / OUTLIER_FACTOR:
            times = f"{ratio:,.1f}x" if ratio > 1 else f"1/{1 / ratio:,.1f}"
            figure = f"bound {approx_gib(estimate.upper_bytes)}, {times}"
            reason = (
                f"its bound, {approx_gib(estimate.upper_bytes)}, is {ratio:,.1f}x the models' "
                f"median bound ({approx_gib(median)})"
                if ratio > 1
                else f"its bound, {approx_gib(estimate.upper_bytes)}, is 1/{1 / ratio:,.1f} of the "
                f"models' median bound ({approx_gib(median)})"
            )
            left_out.append(LeftOut(estimate, reason, "outlier", figure))
        else:
            credible.append(estimate)
    return Credibility(tuple(credible), tuple(left_out), tuple(estimates))


@dataclass(frozen=True)
class Evidence:
    """What the runs of one machine profile say about one configuration."""

    measured_peak_bytes: float | None  # the highest peak of the ok runs of exactly it
    run_ids: tuple[str, ...]  # those runs
    largest_measured_bytes: float | None  # the highest peak of any ok run of the workload
    # The run of that highest peak: its sampled peak and sampling interval, where stored.
    measured_sampled_bytes: float | None = None
    sample_interval_s: float | None = None
    # Why the configuration cannot train on the profile at all (`modeling.trainable`):
    # a setting of it whose every run there ended in error; "" when it may.
    untrainable: str = ""

    @property
    def measured(self) -> bool:
        return self.measured_peak_bytes is not None


def same_config(row: dict, config: WorkloadConfig) -> bool:
    """Whether a runs row measured exactly ``config`` (workload, shape, batch, every knob)."""
    try:
        return workloads.config_from_row(row) == config
    except (ValueError, TypeError):  # a row that is not a valid configuration measures nothing
        return False


def stored_number(row: pd.Series, column: str) -> float | None:
    """``row[column]`` as a float; None where it is missing or not stored."""
    value = row.get(column)
    return None if value is None or pd.isna(value) else float(value)


def evidence_for(config: WorkloadConfig, runs: pd.DataFrame) -> Evidence:
    """The measured evidence for ``config`` among ``runs`` (one machine profile's, any status)."""
    module = workloads.of(config)
    knobs = {knob: getattr(config, knob) for knob in module.NETWORK_KNOBS}
    failure = trainable.untrainable(runs, config.workload, knobs)
    if failure:
        return Evidence(None, (), None, untrainable=failure.reason)
    if runs.empty or PEAK_COLUMN not in runs:
        return Evidence(None, (), None)
    ok = runs[
        (runs["status"] == "ok") & (runs["workload"] == config.workload) & runs[PEAK_COLUMN].notna()
    ]
    if ok.empty:
        return Evidence(None, (), None)
    same = ok[[same_config(row, config) for row in ok.to_dict("records")]]
    largest = float(ok[PEAK_COLUMN].max())
    if same.empty:
        return Evidence(None, (), largest)
    top = same.iloc[int(np.argmax(same[PEAK_COLUMN].to_numpy(dtype=float)))]
    sampled = stored_number(top, "peak_sampled_bytes")
    interval = stored_number(top, "sample_interval_s")
    run_ids = tuple(map(str, same["run_id"]))
    return Evidence(float(top[PEAK_COLUMN]), run_ids, largest, sampled, interval)


class Confidence(Enum):
    """How much evidence stands behind a verdict, most first."""

    VERIFIED = "verified by a run"
    INSIDE = "a prediction inside the measured range"
    BEYOND = "a prediction beyond the measured range"


@dataclass(frozen=True)
class Decision:
    """The answer to "does this configuration fit this budget?", with its evidence."""

    config: WorkloadConfig
    budget_bytes: float
    usable_bytes: float  # what training may use: the budget less its headroom
    headroom: float  # 0.2 = 20%, on top of the bound
    estimate: ModelEstimate | None  # the model the answer uses; None: no credible model
    asked_model: str  # the model asked for
    credibility: Credibility
    evidence: Evidence
    fits: bool
    confidence: Confidence

    @property
    def untrainable(self) -> str:
        """Why the question has no answer on this profile (`Evidence.untrainable`); "" if it has."""
        return self.evidence.untrainable

    @property
    def bound_bytes(self) -> float:
        return self.estimate.upper_bytes if self.estimate else math.nan

    @property
    def needed_bytes(self) -> float:
        """The bound plus headroom: the memory this configuration asks of the budget."""
        return self.bound_bytes * (1 + self.headroom)


def decide(
    estimates: Sequence[ModelEstimate],
    asked_model: str,
    config: WorkloadConfig,
    evidence: Evidence,
    budget_bytes: float,
    headroom: float,
) -> Decision:
    """The verdict for ``config`` on ``budget_bytes`` with ``headroom`` on top of the bound.

    The asked model answers when it is credible here; otherwise the credible
    model with the highest bound does (the cautious choice; `presentation.sizing_text`
    says why). A configuration whose setting never trained on the profile
    (`Evidence.untrainable`) gets no model at all: it does not fit. Where the models
    answer for another machine than their runs', a run of exactly the configuration
    measured that other machine: the bound decides, and the verdict is BEYOND.
    """
    if evidence.untrainable:  # the reason answers, not a prediction
        estimates = ()
    credibility = credible_models(estimates)
    asked = next((e for e in credibility.credible if e.name == asked_model), None)
    estimate = asked or max(credibility.credible, key=lambda e: e.upper_bytes, default=None)
    usable = budget_bytes / (1 + headroom)
    fits = estimate is not None and estimate.upper_bytes <= usable
    elsewhere = estimate is not None and estimate.another_machine
    if evidence.measured_peak_bytes is not None and not elsewhere:
        if evidence.measured_peak_bytes > usable:
            fits = False
        confidence = Confidence.VERIFIED
    elif estimate is not None and not estimate.beyond:
        confidence = Confidence.INSIDE
    else:
        confidence = Confidence.BEYOND
    return Decision(
        config=config,
        budget_bytes=budget_bytes,
        usable_bytes=usable,
        headroom=headroom,
        estimate=estimate,
        asked_model=asked_model,
        credibility=credibility,
        evidence=evidence,
        fits=fits,
        confidence=confidence,
    )
