"""What a sizing report's answer rests on, as plain values: its evidence.

* `BoundEvidence` — the answering model's upper bound and what stands behind it
  (coverage, how many distinct held-out configurations, which calibration, "thin
  evidence"), in a sentence;
* `ModelLine` — one stored model's estimate, believed or left out with why;
* `RunLine` and `run_lines` — the machine profile's runs of the workload, those of
  exactly the question marked;
* `published_for` — the Dell EMC / Intel study's figures when they are about the question.

`presentation.sizing_report` (the report's content) gathers them;
`presentation.sizing_report_html` writes the report out.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from core import published, workloads
from core.units import GIB, approx_gib
from core.workloads.base import WorkloadConfig
from modeling.decision import Decision
from modeling.evaluation.bounds import ConformalBound
from modeling.stored.predictor import TrainingRange
from presentation import sizing_text, workload_labels

# The study behind `core.published` trained the U-Net; no other workload's question is its.
STUDY_WORKLOAD = "unet3d"
# A run id is a 32-digit hex; its first 12 name it uniquely (``memplan show``).
RUN_ID_CHARS = 12
PEAK_COLUMN = "peak_hwm_bytes"
SAMPLED_COLUMN = "peak_sampled_bytes"


@dataclass(frozen=True)
class BoundEvidence:
    """The chosen model's upper bound at the question, and what stands behind it."""

    model: str  # the model's name
    title: str
    predicted_bytes: float
    upper_bytes: float
    coverage: float  # 0.9: the bound holds for 90% of points like the held-out ones
    ratio: float  # the bound is the point prediction times this
    # Distinct held-out configurations the ratio was taken from; an older evaluation's
    # bound (``legacy``) counted residuals instead, a configuration once per seed.
    n_configurations: int
    source: str  # which calibration, in words: "5-fold cross-conformal, 41 distinct ..."
    thin: bool  # so few configurations that the bound is the worst one seen
    legacy: bool  # stored by an older evaluation: ``n_configurations`` counts residuals
    raised_to_closed_form: bool  # the model's bound fell below the refined closed form
    beyond: str  # how the question lies outside the model's measured range; "" inside
    # Each factor the conformal bound was widened by after it, with why (`widenings_of`):
    # (1.083, "another machine"); empty: not widened.
    widened: tuple[tuple[float, str], ...] = ()

    @classmethod
    def of(
        cls, decision: Decision, bound: ConformalBound, widened: Sequence[tuple[float, str]] = ()
    ) -> BoundEvidence:
        estimate = decision.estimate
        assert estimate is not None, "only a decision with a model has a bound"
        return cls(
            model=estimate.name,
            title=estimate.title,
            predicted_bytes=estimate.predicted_bytes,
            upper_bytes=estimate.upper_bytes,
            coverage=bound.coverage,
            ratio=bound.ratio,
            n_configurations=bound.n_calibration,
            source=bound.source,
            thin=bound.thin,
            legacy=bound.legacy,
            raised_to_closed_form=estimate.raised_to_closed_form,
            beyond=estimate.beyond,
            widened=tuple(widened),
        )

    @property
    def factors(self) -> str:
        """The bound over the prediction, every factor named: ``x1.081 (conformal) x1.083
        (another machine) = x1.171``; ``x1.081`` where nothing widened it."""
        if not self.widened:
            return f"x{self.ratio:.3f}"
        named = [f"x{self.ratio:.3f} (conformal)"]
        named += [f"x{factor:.3f} ({why})" for factor, why in self.widened]
        total = self.ratio * math.prod(factor for factor, _ in self.widened)
        return " ".join(named) + f" = x{total:.3f}"

    @property
    def sentence(self) -> str:
        """The bound in words: what it is, at which coverage, from how much held-out evidence."""
        coverage = f"{self.coverage:.0%}"
        text = (
            f"{self.title} predicts {approx_gib(self.predicted_bytes)}; its {coverage} "
            f"{'split-conformal' if self.legacy else 'conformal'} upper bound is "
            f"{approx_gib(self.upper_bytes)}, the prediction {self.factors}, "
        )
        if self.widened:
            text += f"x{self.ratio:.3f} being "
        if self.legacy:
            text += (
                f"the multiplier that covered {coverage} of {self.n_configurations} held-out "
                f"residuals (measured / predicted on runs the model was not fitted on; "
                f"{self.source}). Those residuals count a configuration once per seed (an "
                "older evaluation): re-run `memplan evaluate` for a bound counted "
                "by configuration."
            )
        else:
            text += (
                f"the multiplier that covered {coverage} of {self.n_configurations} distinct "
                "configurations the model was not fitted on (measured / predicted, the worst "
                f"of each configuration's runs; {self.source})."
            )
        if self.thin:
            text += (
                f" Thin evidence: the bound is the worst of only {self.n_configurations} "
                "configurations."
            )
        if self.raised_to_closed_form:
            text += (
                " The model's bound fell below the closed-form floor, the least share of the"
                " refined closed-form estimate any measured run reached, so the bound is that"
                " estimate times the most a run exceeded it."
            )
        if self.beyond:
            text += (
                f" The guarantee is for points like the held-out ones; this question is beyond "
                f"them: {self.beyond}."
            )
        return text


@dataclass(frozen=True)
class ModelLine:
    """One stored model's estimate for the question, and whether it is believed."""

    name: str
    title: str
    predicted_bytes: float
    upper_bytes: float  # its own bound where it is left out below the closed form
    credible: bool
    reason: str  # why it is left out, in words; "" when credible
    answers: bool  # the model the decision uses
    fits: str = sizing_text.NOT_JUDGED  # yes, no, or NOT_JUDGED when left out


@dataclass(frozen=True)
class RunLine:
    """One run of the machine profile's workload, as the report's table lists it."""

    run_id: str
    image: str  # "128^3" (a cube), "240x240x144"
    batch_size: int
    network: str  # the knobs: "16 filters, float32"
    status: str  # ok, oom, failed, skipped, ...
    peak_gib: float | None  # the kernel's high-water mark; None when it did not finish
    sampled_gib: float | None  # memory_profiler's largest sample; None when it has none
    message: str
    this_config: bool  # a run of exactly the question's configuration

    @property
    def short_id(self) -> str:
        return self.run_id[:RUN_ID_CHARS]


def _knobs_default(config: WorkloadConfig) -> bool:
    defaults = workload_labels.knob_defaults(config.workload)
    return all(getattr(config, knob) == value for knob, value in defaults.items())


def published_for(config: WorkloadConfig) -> tuple[published.PublishedPoint, ...]:
    """The study's published points when they are about ``config``; empty otherwise."""
    applies = config.workload == STUDY_WORKLOAD and published.applies_to(
        tuple(config.image_shape), config.batch_size, _knobs_default(config)
    )
    return published.PUBLISHED_POINTS if applies else ()


def _is_config(row: Mapping[str, Any], stored: Mapping[str, Any]) -> bool:
    """Whether a runs row holds the configuration whose stored columns are ``stored``."""
    for column, value in stored.items():
        if value is None:
            continue
        found = row.get(column)
        if found is None or pd.isna(found) or found != value:
            return False
    return True


def run_lines(runs: pd.DataFrame, config: WorkloadConfig) -> tuple[RunLine, ...]:
    """The runs of ``config``'s workload in ``runs``, smallest image x batch first.

    runs : one machine profile's runs (any status). Those of exactly ``config``
    are marked (`RunLine.this_config`).
    """
    mine = workload_labels.runs_of(runs, config.workload)
    stored = workloads.config_columns(config)
    lines = []
    for row in mine.to_dict("records"):
        shape = workload_labels.image_shape(row)
        peak, sampled = row.get(PEAK_COLUMN), row.get(SAMPLED_COLUMN)
        message = row.get("message")
        lines.append(
            (
                math.prod(shape) * int(row["batch_size"]),
                str(row.get("created_at") or ""),
                RunLine(
                    run_id=str(row["run_id"]),
                    image=workload_labels.shape_label(shape, one_side=len(set(shape)) == 1),
                    batch_size=int(row["batch_size"]),
                    network=workload_labels.short_network(row),
                    status=str(row.get("status") or ""),
                    peak_gib=None if peak is None or pd.isna(peak) else float(peak) / GIB,
                    sampled_gib=None if pd.isna(sampled) else float(sampled) / GIB,
                    message="" if message is None or pd.isna(message) else str(message),
                    this_config=_is_config(row, stored),
                ),
            )
        )
    lines.sort(key=lambda entry: (entry[0], entry[2].batch_size, entry[1]))
    return tuple(line for _, _, line in lines)


def widenings_of(training_range: TrainingRange, config: WorkloadConfig) -> list[tuple[float, str]]:
    """Each factor a model's conformal bound at ``config`` is widened by after it, with why
    (`TrainingRange.widening` is their product): knob values never measured, another
    machine, host-to-host spread, a server's more cores; those of 1 left out."""
    knobs = math.prod(w.factor for w in training_range.widenings(config))
    named = [
        (knobs, "knob values never measured"),
        (training_range.machine_widening, "another machine"),
        (training_range.host_widening, "host-to-host spread"),
        (training_range.cores_widening, "a server's more cores"),
    ]
    return [(float(factor), why) for factor, why in named if factor > 1]
