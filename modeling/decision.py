"""The sizing decision and the evidence behind it: which models to believe, how sure to be.

A fitted model answers anywhere, including where it is nonsense: far past the
measured runs a tree ensemble predicts the largest peak it was trained on, a
hybrid formula can go negative, and the paper's analytical model carries a
bound ten times everyone else's. A buyer needs the decision worded by how much
evidence stands behind it. So:

* `credible_models` — sorts every model's estimate for one configuration into
  the credible ones (their bounds give the spread shown beside the answer) and
  those left out, each with the reason in words: no positive prediction or no
  finite bound; a bound below the refined closed-form estimate, which every
  measured run exceeded; or a bound far from the others' median;
* `evidence_for` — what this machine's runs say about the configuration: the
  runs of exactly it (a measured answer), the largest run measured, and whether
  a setting of it never trained there (`modeling.trainable`: then the decision
  is that reason, not a prediction);
* `decide` — the verdict with its `Confidence`: verified by a run, a prediction
  inside the measured range, or a prediction so many times beyond the largest
  measured run that it should be verified first, and its headline in words.

The verdict uses the upper bound, never the point prediction: a point
prediction is low half the time.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

import numpy as np
import pandas as pd

from core import workloads
from core.units import GIB
from core.workloads.base import WorkloadConfig
from modeling import trainable

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
# Reach (image x batch over the largest measured) below this reads "just beyond", no factor.
STATED_REACH = 1.5


@dataclass(frozen=True)
class ModelEstimate:
    """One model's answer for one configuration."""

    name: str
    title: str
    predicted_bytes: float
    upper_bytes: float  # as `modeling.sizing.replace_below_floor` leaves it
    raised_to_closed_form: bool  # the model's own bound fell below the refined estimate
    beyond: str  # how the configuration lies outside the model's measured range; "" inside
    reach: float  # image x batch over the largest measured run's (> 1: beyond it)
    # What the bound rests on, in words (`ConformalBound.evidence`): how many distinct
    # configurations, and "thin evidence" where the bound is the worst of few; "" unknown.
    bound_evidence: str = ""
    # The model's own conformal bound, before `replace_below_floor` (NaN: unknown).
    own_upper_bytes: float = math.nan

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

    @property
    def low_bytes(self) -> float:
        return min((e.upper_bytes for e in self.credible), default=math.nan)

    @property
    def high_bytes(self) -> float:
        return max((e.upper_bytes for e in self.credible), default=math.nan)

    @property
    def span(self) -> str:
        """The credible bounds' range, ``159–190 GiB`` (one figure when they agree); "none"."""
        if not self.credible:
            return "none"
        low, high = approx_gib(self.low_bytes), approx_gib(self.high_bytes)
        return low if low == high else f"{low.removesuffix(' GiB')}–{high}"

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


def approx_gib(value_bytes: float) -> str:
    """Bytes in GiB to three significant figures: ``0.938 GiB``, ``7.81 GiB``, ``1,617 GiB``.

    An upper bound read to the hundredth of a GiB claims a precision no bound has.
    """
    if not math.isfinite(value_bytes):
        return "unbounded"
    value = value_bytes / GIB
    if value == 0:
        return "0 GiB"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    rounded = round(value, digits)
    return f"{rounded:,.{digits}f} GiB"


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
            f"predicts {predicted}, and {bound} falls below the refined closed-form "
            "estimate, which every measured run exceeded"
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
        return Credibility(tuple(usable), tuple(left_out))
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
    return Credibility(tuple(credible), tuple(left_out))


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
    sampled, interval = (
        float(top[column]) if column in top and pd.notna(top[column]) else None
        for column in ("peak_sampled_bytes", "sample_interval_s")
    )
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

    @property
    def substituted(self) -> str:
        """Why the asked model does not answer, in words; empty when it does."""
        if self.estimate is None or self.estimate.name == self.asked_model:
            return ""
        reason = self.credibility.reason(self.asked_model)
        return (
            f"Model {self.asked_model} is left out here ({reason}), so the answer uses "
            f"{self.estimate.title}, the highest bound of the credible models."
        )

    @property
    def reach_words(self) -> str:
        """``12x beyond the largest measured run`` or ``beyond the measured range``."""
        reach = self.estimate.reach if self.estimate else math.nan
        if math.isfinite(reach) and reach >= STATED_REACH:
            return f"{reach:,.0f}x beyond the largest measured run"
        return "beyond the measured range"

    @property
    def headline(self) -> str:
        """The verdict worded by its confidence, e.g. "Predicted to fit, 12x beyond …"."""
        if self.untrainable:
            return "Does not train on this machine profile"
        if self.estimate is None:
            return "No answer: no model is credible here"
        evidence = self.evidence
        measured = evidence.measured_peak_bytes
        if self.confidence is Confidence.VERIFIED and measured is not None:
            aside = sampled_aside(
                measured, evidence.measured_sampled_bytes, evidence.sample_interval_s
            )
            peak = approx_gib(measured) + (f" ({aside})" if aside else "")
            if measured * (1 + self.headroom) > self.budget_bytes:
                return f"Does not fit, measured: a run peaked at {peak}"
            if self.fits:
                if aside:
                    return f"Fits, verified by a run: it measured {peak}"
                return f"Fits, verified by a run (measured {peak})"
            return (
                f"Too close to call: a run measured {peak}, which fits, "
                "but the upper bound does not"
            )
        if self.confidence is Confidence.INSIDE:
            return (
                "Fits by prediction, inside the measured range"
                if self.fits
                else "Does not fit by prediction, inside the measured range"
            )
        if self.fits:
            return f"Predicted to fit, {self.reach_words}: verify first"
        return f"Predicted not to fit, {self.reach_words}"

    @property
    def spread(self) -> str:
        """The credible models' bounds, in words, e.g. "159–190 GiB across 4 of 10 models"."""
        credible = self.credibility.credible
        total = len(credible) + len(self.credibility.left_out)
        if self.untrainable:
            return "none asked: the setting does not train here"
        if not credible:
            return f"no credible model among the {total} stored"
        return f"{self.credibility.span} across {len(credible)} of {total} models"


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
    model with the highest bound does (the cautious choice), and the decision
    says why (`Decision.substituted`). A configuration whose setting never trained
    on the profile (`Evidence.untrainable`) gets no model at all: it does not fit.
    """
    if evidence.untrainable:  # the reason answers, not a prediction
        estimates = ()
    credibility = credible_models(estimates)
    asked = next((e for e in credibility.credible if e.name == asked_model), None)
    estimate = asked or max(credibility.credible, key=lambda e: e.upper_bytes, default=None)
    usable = budget_bytes / (1 + headroom)
    fits = estimate is not None and estimate.upper_bytes <= usable
    if evidence.measured_peak_bytes is not None:
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
