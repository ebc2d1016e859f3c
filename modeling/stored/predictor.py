"""A fitted model ready to answer: point prediction, upper bound, and "is this extrapolating?".

A `Predictor` bundles what the dashboard and the sizing functions need without
ever fitting: the fitted estimator, the feature columns it reads, its
conformal bounds (one cross-conformal, inside the measured range; one
forward-chaining by image size, beyond it: `modeling.evaluation.conformal`),
and the range of the data it was fit on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from core import workloads
from core.analytical import DEFAULT_FRAMEWORK_BYTES, REFINED_TERM_COLUMNS
from core.workloads.base import WorkloadConfig
from modeling.evaluation.bounds import ConformalBound, upper_bound
from modeling.features import (
    BASELINE_COLUMN,
    KNOB_COLUMNS,
    L3_CACHE_COLUMN,
    TARGET_COLUMN,
    config_frame,
    equivalent_side,
)
from modeling.stored import codec
from modeling.unmeasured import KnobEvidence, Widening

# Predictions `Predictor.remember` keeps per model at most (the Sizing page asks ~1,200 at once).
MAX_REMEMBERED = 20_000


def _median_baseline(frame: pd.DataFrame) -> float:
    measured = frame[BASELINE_COLUMN].dropna() if BASELINE_COLUMN in frame else pd.Series([])
    return float(measured.median()) if len(measured) else float(DEFAULT_FRAMEWORK_BYTES)


def _machine_l3_cache(frame: pd.DataFrame) -> int | None:
    """The L3 cache the runs recorded (the most common value; a profile's runs share one)."""
    known = frame[L3_CACHE_COLUMN].dropna() if L3_CACHE_COLUMN in frame else pd.Series([])
    return int(known.mode().iloc[0]) if len(known) else None


def _closed_form_ratios(frame: pd.DataFrame, framework_bytes: float) -> pd.Series:
    """Each run's peak / the refined closed form with ``framework_bytes`` as its framework term."""
    estimates = frame[list(REFINED_TERM_COLUMNS)].sum(axis=1) + framework_bytes
    return frame[TARGET_COLUMN] / estimates


def closed_form_excess(frame: pd.DataFrame, framework_bytes: float) -> float | None:
    """The most any run of ``frame`` (a measured frame) peaked above the refined closed form
    with ``framework_bytes`` as its framework term: max(peak / estimate); None without runs."""
    return None if frame.empty else float(_closed_form_ratios(frame, framework_bytes).max())


def closed_form_least(frame: pd.DataFrame, framework_bytes: float) -> float | None:
    """The least any run of ``frame`` peaked relative to the refined closed form:
    min(peak / estimate); None without runs. Below 1 where a run needed less than the
    closed form says (PyTorch's runs, to 0.85x on the bundled U-Net)."""
    return None if frame.empty else float(_closed_form_ratios(frame, framework_bytes).min())


def _seen(values: pd.Series) -> tuple[Any, ...]:
    """The distinct values of a knob column (a workload's foreign knobs are all empty)."""
    return tuple(sorted(values.dropna().unique().tolist()))


@dataclass(frozen=True)
class TrainingRange:
    """What the model was fit on: side and batch ranges, total voxels x batch, knob values."""

    min_side: float
    max_side: float
    max_batch: int
    max_sample_megavoxels: float
    max_peak_bytes: float
    knobs: dict[str, tuple[Any, ...]]  # knob -> the values seen
    framework_bytes: float = DEFAULT_FRAMEWORK_BYTES  # median measured post-import memory
    # The most a run peaked above the refined closed form (`closed_form_excess`); None in
    # models stored before it was kept (`modeling.stored.bundle.load_predictors` fills it in).
    closed_form_excess: float | None = None
    excess_runs: int | None = None  # how many runs that maximum is over
    # The least a run peaked relative to it (`closed_form_least`), over the same runs; None
    # in models stored before it was kept (filled in as the excess is).
    closed_form_least: float | None = None
    # The machine's L3 cache as TensorFlow reads it, which sizes the convolution-gradient
    # workspace of the configurations predicted (None: the runs did not record it).
    l3_cache_bytes: int | None = None
    # The model's stored knob-split results on every profile (`modeling.unmeasured`), which
    # widen its bound for a knob value never measured here; None: not attached (no widening).
    # Not stored with the model: `application.sizing.models_of` attaches it at answer time.
    knob_evidence: KnobEvidence | None = None
    # Where this profile answers for another machine (`modeling.transfer.Transfer`): how far
    # its bounds widen (1: it answers for itself), and why its runs are not that machine's
    # measured range, naming the profile (`Transfer.measured_elsewhere`; "": its own). Not
    # stored either.
    machine_widening: float = 1.0
    other_machine: str = ""
    # How far its bounds widen to cover the peaks its configurations reached on other hosts
    # of the profile (`modeling.host_spread`; 1: covered, or unmeasured), and that in words
    # for the bound's name ("": not attached). Not stored: `application.sizing.models_of`.
    host_widening: float = 1.0
    host_spread: str = ""
    # How far a bound for a server with more cores than the profile's widens (`core.cores`;
    # 1: not). Not stored: `application.sizing.answer` attaches it to the memory to buy.
    cores_widening: float = 1.0

    @classmethod
    def of(cls, frame: pd.DataFrame) -> TrainingRange:
        framework = _median_baseline(frame)
        return cls(
            min_side=float(frame["side"].min()),
            max_side=float(frame["side"].max()),
            max_batch=int(frame["batch_size"].max()),
            max_sample_megavoxels=float(frame["sample_megavoxels"].max()),
            max_peak_bytes=float(frame[TARGET_COLUMN].max()),
            knobs={knob: _seen(frame[knob]) for knob in KNOB_COLUMNS if knob in frame},
            framework_bytes=framework,
            closed_form_excess=closed_form_excess(frame, framework),
            excess_runs=len(frame),
            closed_form_least=closed_form_least(frame, framework),
            l3_cache_bytes=_machine_l3_cache(frame),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "min_side": self.min_side,
            "max_side": self.max_side,
            "max_batch": self.max_batch,
            "max_sample_megavoxels": self.max_sample_megavoxels,
            "max_peak_bytes": self.max_peak_bytes,
            "knobs": {knob: list(values) for knob, values in self.knobs.items()},
            "framework_bytes": self.framework_bytes,
            "closed_form_excess": self.closed_form_excess,
            "excess_runs": self.excess_runs,
            "closed_form_least": self.closed_form_least,
            "l3_cache_bytes": self.l3_cache_bytes,
        }

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainingRange:
        knobs = {knob: tuple(seen) for knob, seen in values["knobs"].items()}
        return cls(**(values | {"knobs": knobs}))

    def unmeasured(self, config: WorkloadConfig) -> list[tuple[str, Any]]:
        """The (knob, value) settings of ``config`` that no run of this range measured."""
        return [
            (knob, getattr(config, knob))
            for knob in workloads.of(config).NETWORK_KNOBS
            if getattr(config, knob) not in self.knobs.get(knob, ())
        ]

    def widenings(self, config: WorkloadConfig) -> list[Widening]:
        """How the bound widens for each of `unmeasured`'s values (none without evidence)."""
        if self.knob_evidence is None:
            return []
        return [self.knob_evidence.widening(knob, value) for knob, value in self.unmeasured(config)]

    def widening(self, config: WorkloadConfig) -> float:
        """The factor the bound of ``config`` is widened by (>= 1): the product of `widenings`,
        `machine_widening`, `host_widening` and `cores_widening`."""
        knobs = float(np.prod([w.factor for w in self.widenings(config)]))
        return knobs * self.machine_widening * self.host_widening * self.cores_widening

    def widened_for(self, config: WorkloadConfig) -> str:
        """Why `widening` is above 1, in a few words ("" where it is not), but for
        `host_widening` and `cores_widening`, which the bound's name says each with its own
        factor (`modeling.sizing`)."""
        causes = []
        if any(w.factor > 1 for w in self.widenings(config)):
            causes.append("knob values never measured")
        if self.machine_widening > 1:
            causes.append("another machine")
        return " and ".join(causes)

    def beyond(self, config: WorkloadConfig) -> list[str]:
        """In plain words, each way ``config`` lies beyond the measured range of the machine
        asked about (empty when inside): `outside` this range, and runs of another machine."""
        return [*self.outside(config), *([self.other_machine] if self.other_machine else [])]

    def outside(self, config: WorkloadConfig) -> list[str]:
        """In plain words, each way ``config`` lies outside this range (empty when inside)."""
        reasons = []
        side = equivalent_side(config)
        power = f"^{len(config.image_shape)}"
        # A relative tolerance: the cube root of a cube is not always exact.
        tolerance = 1e-9 * max(side, 1.0)
        if side > self.max_side + tolerance:
            reasons.append(
                f"image size ~{side:.0f}{power} is larger than the largest measured "
                f"(~{self.max_side:.0f}{power})"
            )
        if side < self.min_side - tolerance:
            reasons.append(
                f"image size ~{side:.0f}{power} is smaller than the smallest measured "
                f"(~{self.min_side:.0f}{power})"
            )
        if config.batch_size > self.max_batch:
            reasons.append(
                f"batch {config.batch_size} is larger than the largest measured ({self.max_batch})"
            )
        sample_megavoxels = config.elements * config.batch_size / 1e6
        if sample_megavoxels > self.max_sample_megavoxels * (1 + 1e-9):
            reasons.append(
                f"image x batch ({sample_megavoxels:.1f} megavoxels) is more than "
                f"any measured run ({self.max_sample_megavoxels:.1f})"
            )
        widenings = self.widenings(config)
        for i, (knob, value) in enumerate(self.unmeasured(config)):
            listed = ", ".join(str(v) for v in self.knobs.get(knob, ()))
            widened = f"; {widenings[i].words}" if widenings else ""
            reasons.append(
                f"{knob} {value} was never measured on this profile (measured: {listed}){widened}"
            )
        return reasons


@dataclass(frozen=True)
class Predictor:
    """A fitted model with its bounds; predicts for configurations, in bytes."""

    name: str  # the catalogue's short name, e.g. "symbolic"
    title: str
    kind: str
    estimator: Any  # fitted; reads ``columns`` of a `modeling.features` frame
    columns: tuple[str, ...]
    bound: ConformalBound  # cross-conformal by configuration (older: random-split residuals)
    extrapolation_bound: ConformalBound | None  # forward-chaining by image size
    training_range: TrainingRange
    params_json: str = "{}"  # the settings chosen on validation data
    formula: str | None = None  # readable form, for the models that have one
    formula_length: int | None = None
    fit_seconds: float = 0.0
    # Predictions made ahead by `remember`, by configuration: a page keeps its models for
    # a database version and asks them again as its sliders move.
    _known: dict[WorkloadConfig, float] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    @property
    def knob_model(self) -> str:
        """The model whose stored knob splits speak for this one on a knob value never
        measured (`modeling.unmeasured`): a calibrated model's prior (offset + scale x prior,
        ``params_json``'s ``prior``), else this model."""
        try:
            prior = json.loads(self.params_json or "{}").get("prior")
        except (ValueError, AttributeError):
            prior = None
        # `modeling.calibration_model.NAME` is the codec's type name (it imports this module).
        return prior if self.name == codec.CALIBRATED and isinstance(prior, str) else self.name

    def read_back(self) -> None:
        """Decode the stored estimator now if it waits for its first use (`codec.Stored`):
        raises its refusal (`ModelingError`) here rather than at a prediction."""
        if isinstance(self.estimator, codec.Stored):
            self.estimator.decoded()

    def point_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        """Point predictions, bytes, one per configuration."""
        if self._known and configs:
            known = [self._known.get(config) for config in configs]
            if None not in known:
                return np.array(known, dtype=float)
        return self._predict(configs)

    def _predict(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        frame = config_frame(configs, self.training_range.l3_cache_bytes)
        return np.asarray(self.estimator.predict(frame[list(self.columns)]), dtype=float)

    def knows(self, config: WorkloadConfig) -> bool:
        """Whether `remember` has predicted ``config`` already."""
        return config in self._known

    def remember(self, configs: Sequence[WorkloadConfig]) -> None:
        """Predict those of ``configs`` not yet known, in one call, and keep them for
        `point_bytes`.

        One call predicts a thousand rows in about the time one row takes (a forest walks
        its trees one by one either way), so a page asks for the configurations one slider
        move away at once. Rows are predicted independently: the same figures (the MLP's
        matrix product may differ in the last bit, ~1e-15 relative).
        """
        new = [config for config in dict.fromkeys(configs) if config not in self._known]
        if not new:
            return
        if len(self._known) + len(new) > MAX_REMEMBERED:  # bounded: a long session's moves
            self._known.clear()
        self._known.update(zip(new, self._predict(new).tolist(), strict=True))

    def bound_for(self, config: WorkloadConfig) -> ConformalBound:
        """The bound that applies: the larger one when ``config`` is outside the measured range.

        For another machine the profile's own bound applies, widened by `machine_widening`:
        the factor `benchmarks/transfer.py` checks leave-one-profile-out widens that bound.
        """
        if self.extrapolation_bound is not None and self.training_range.outside(config):
            return max(self.bound, self.extrapolation_bound, key=lambda bound: bound.ratio)
        return self.bound

    def upper_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        """Upper bounds, bytes, one per configuration (+inf where the model predicts <= 0)."""
        points = self.point_bytes(configs)
        ratios = np.array([self.bound_for(config).ratio for config in configs], dtype=float)
        return upper_bound(points, ratios)
