"""Calibrating a new machine point by point: `memplan calibrate`'s use case.

The prior is the best stored model of the nearest profile with models
(`modeling.nearest.nearest_profile`: same workload and framework). Each step fits
peak ~ a + b * prior(x) to this profile's measured points and measures the candidate
whose upper bound is widest relative to its prediction (`modeling.calibration_choice`);
it stops when the leave-one-out MAPE is at most 5% over at least 3 points, or at 6.
Points this profile measured before count (a calibration resumes). The result is
stored as the profile's evaluation (`modeling.calibration_model`), so the profile
answers `memplan size` like any other.

A plan may cover knob values besides its own (``LoopPlan.also``: `memplan calibrate
--precision mixed_bfloat16`): the candidates span every setting, the first points
take one of each (a setting with no point would be answered by the prior's knob
splits alone), and the model is measured on, so answers without widening for, each
(`Outcome.covers`).

Measuring is passed in (``measure``): the command runs a one-point sweep, a benchmark
replays a database's runs, a test hands in numbers. Nothing here runs a child.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from application import results_store as writer
from core import profiles, snapshot, store, workloads
from core.profiles import MachineProfile
from core.workloads.base import WorkloadConfig
from modeling import calibration_choice as choice
from modeling import calibration_model, machines, transfer
from modeling.errors import NoModelsError
from modeling.features import TARGET_COLUMN, measured_frame
from modeling.stored import bundle
from modeling.stored.predictor import Predictor

# The candidates: small cubes at small batches, each a few seconds to about a minute of
# training on 2 cores (the 2026-11-27 VM: 9 s at 32^3 batch 1, 72 s at 128^3 batch 4),
# spanning the prior's predictions from ~1 to ~10 GiB, so the line is fitted over the
# range the questions start from; larger ones cost minutes each.
CANDIDATE_SIDES = (32, 48, 64, 80, 96, 112, 128)
CANDIDATE_BATCHES = (1, 2, 4)
# A candidate whose estimated run is longer is left out: six of them stay under 10 minutes.
MAX_POINT_SECONDS = 90.0


@dataclass(frozen=True)
class Prior:
    """The model a calibration starts from: another profile's best, and how far it may be off."""

    key: str
    label: str
    predictor: Predictor
    widening: float  # the between-profile factor (`modeling.transfer.widening_for`)
    why: str  # `Nearest.sentence`
    seconds: Callable[[float], float]  # estimated wall seconds of a run, from its prior peak


# One knob setting of the network: (knob, value) pairs; the knobs not named keep their default.
Setting = tuple[tuple[str, object], ...]
# The column of `measured_points` that says which of the plan's settings a point is of.
SETTING_COLUMN = "calibration_setting"


@dataclass(frozen=True)
class Candidate:
    side: int
    batch: int
    prior_bytes: float
    seconds: float
    setting: int = 0  # the index of its knob setting in `LoopPlan.settings`


@dataclass(frozen=True)
class Step:
    """One chosen point and why: its relative bound width, the widest of ``among``."""

    side: int
    batch: int
    width: float
    among: int
    points_before: int
    knobs: Setting = ()  # the knob values it sets (none: the plan's own)
    reason: str = ""  # "", or why it was chosen besides its width

    def sentence(self) -> str:
        knobs = "".join(f" {knob} {value}" for knob, value in self.knobs)
        return (
            f"point {self.points_before + 1}: {self.side}^3 batch {self.batch}{knobs}, its bound "
            f"+{self.width:.1%} of its prediction, the widest of {self.among} candidates"
            f"{self.reason}"
        )

    def record(self) -> dict[str, object]:
        """The step's fields and its sentence (``why``): what the model keeps and --json prints."""
        return self.__dict__ | {"knobs": dict(self.knobs), "why": self.sentence()}


@dataclass
class Outcome:
    prior: Prior
    steps: list[Step] = field(default_factory=list)
    points: list[tuple[int, int, float]] = field(default_factory=list)  # side, batch, peak
    stopped: str = ""
    loo_mape_pct: float | None = None
    evaluation_id: str | None = None
    # The knob values the stored model measured (knob -> values): its answers for these are
    # not widened as never measured (`modeling.unmeasured`); other values are.
    covers: dict[str, tuple[object, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class LoopPlan:
    """What one calibration is of: the database, the workload, this machine, the runs' steps."""

    db_path: Path
    workload: str
    here: MachineProfile
    steps: int
    memory_limit_bytes: int | None = None
    command: str = ""
    sides: tuple[int, ...] = CANDIDATE_SIDES  # the candidates: each side x each batch
    batches: tuple[int, ...] = CANDIDATE_BATCHES
    knobs: Setting = ()  # the network's knobs set; others default
    # Further knob settings the answers are to cover (`memplan calibrate --precision ...`).
    also: tuple[Setting, ...] = ()

    @property
    def settings(self) -> tuple[Setting, ...]:
        """``knobs`` first, then each of ``also`` (once): the settings points are chosen across."""
        return tuple(dict.fromkeys((self.knobs, *self.also)))

    def config(self, side: int, batch: int, setting: int = 0) -> WorkloadConfig:
        """The network at ``side``^3 and ``batch`` with the knobs of ``settings[setting]``."""
        module = workloads.get(self.workload)
        return module.Config((side,) * module.DIMS, batch, **dict(self.settings[setting]))


def _wall_seconds(runs: pd.DataFrame, predictor: Predictor) -> Callable[[float], float]:
    """wall seconds ~ c0 + c1 * prior peak, from the prior profile's own ok runs."""
    ok = runs[(runs["status"] == "ok") & runs["wall_s"].notna()]
    configs = [workloads.config_from_row(row) for row in ok.to_dict("records")]
    if len(configs) < 2:
        return lambda _: 0.0
    slope, intercept = np.polyfit(predictor.point_bytes(configs), ok["wall_s"].astype(float), 1)
    return lambda peak: float(intercept + slope * peak)


def find_prior(db_path: Path, workload: str, here: MachineProfile) -> Prior:
    """The nearest other profile of ``here``'s framework with stored models, not calibrated."""
    read = snapshot.read(db_path, workload)  # one read of the database for the whole search
    runs = profiles.with_keys(read.runs)
    every = profiles.profiles_in(runs[runs["status"] == "ok"])
    same = {k: p for k, p in every.items() if p.framework == here.framework}
    fitted = set(machines.fitted_machines(read))
    pool = {k: p for k, p in same.items() if k in fitted and k != here.key}
    while pool:
        nearest = transfer.nearest_profile(here, pool)
        predictor = bundle.load_predictor(read, machine=nearest.key)
        if predictor.name != calibration_model.NAME:
            wide = transfer.widening_for(runs, same, nearest, excluded=(here.key,))
            mine = runs[runs[profiles.KEY_COLUMN] == nearest.key]
            return Prior(
                nearest.key,
                nearest.profile.label,
                predictor,
                # No evidence (one profile, or a first fact no pair spans): no prior width.
                wide.factor if wide and math.isfinite(wide.factor) else 1.0,
                nearest.sentence(),
                _wall_seconds(mine, predictor),
            )
        del pool[nearest.key]
    raise NoModelsError(
        f"no other {here.framework} profile of {workload} with fitted models to start from; "
        "calibrate with `memplan calibrate --grid`, which fits this machine's own models"
    )


def candidates(plan: LoopPlan, prior: Prior) -> list[Candidate]:
    """The plan's candidate points whose widened prior bound fits its memory limit and whose
    estimated run is short (`MAX_POINT_SECONDS`)."""
    grid = [(s, b, i) for i in range(len(plan.settings)) for s in plan.sides for b in plan.batches]
    configs = [plan.config(s, b, i) for s, b, i in grid]
    points = prior.predictor.point_bytes(configs)
    upper = prior.predictor.upper_bytes(configs) * prior.widening
    found = []
    for (side, batch, setting), point, bound in zip(grid, points, upper, strict=True):
        seconds = prior.seconds(point)
        if plan.memory_limit_bytes and bound > plan.memory_limit_bytes:
            continue
        if seconds <= MAX_POINT_SECONDS:
            found.append(Candidate(side, batch, float(point), seconds, setting))
    return found


def measured_points(plan: LoopPlan) -> pd.DataFrame:
    """One run per cube of the plan's networks (each of its settings) this profile measured
    ok at the plan's steps (the run of the median peak), as `measured_frame` rows with
    ``side``, ``batch_size`` and the index of the setting (`SETTING_COLUMN`)."""
    runs = store.load_runs(
        plan.db_path, store.RunFilter(status="ok", workload=plan.workload, machine=plan.here.key)
    )
    runs = runs[runs["steps"] == plan.steps]
    keep: dict[str, int] = {}
    for row in runs.to_dict("records"):
        config = workloads.config_from_row(row)
        side = config.image_shape[0]
        if len(set(config.image_shape)) != 1:
            continue
        for setting in range(len(plan.settings)):
            if config == plan.config(side, config.batch_size, setting):
                keep[row["run_id"]] = setting
    frame = measured_frame(runs[runs["run_id"].isin(keep)]) if keep else pd.DataFrame()
    if frame.empty:
        return frame
    frame[SETTING_COLUMN] = [keep[str(run_id)] for run_id in frame.index]
    rows = []
    for _, group in frame.groupby(["side", "batch_size", SETTING_COLUMN]):
        order = group[TARGET_COLUMN].sort_values()
        rows.append(order.index[(len(order) - 1) // 2])
    return frame.loc[rows]


def _cubes(frame: pd.DataFrame) -> list[tuple[int, int, int]]:
    """(side, batch, setting) of each `measured_points` row."""
    if frame.empty:
        return []
    return [
        (int(round(s)), int(b), int(i))
        for s, b, i in zip(frame["side"], frame["batch_size"], frame[SETTING_COLUMN], strict=True)
    ]


def _prior_of(prior: Prior, frame: pd.DataFrame, plan: LoopPlan) -> np.ndarray:
    return prior.predictor.point_bytes([plan.config(*point) for point in _cubes(frame)])


def _uncovered(plan: LoopPlan, frame: pd.DataFrame) -> set[int]:
    """The plan's settings without a measured point yet."""
    return set(range(len(plan.settings))) - {setting for _, _, setting in _cubes(frame)}


def run_loop(
    plan: LoopPlan,
    measure: Callable[..., None],
    report: Callable[[Step], None] = lambda step: None,
    prior: Prior | None = None,
) -> Outcome:
    """Choose, measure, refit, until the rule stops; then store the calibrated model.
    ``measure(side, batch)`` stores a run or fails to; where the plan has several knob
    settings, ``measure(side, batch, knobs)`` with the chosen point's knobs (a dict).
    ``report`` hears of each chosen point."""
    prior = prior or find_prior(plan.db_path, plan.workload, plan.here)
    pool = candidates(plan, prior)
    outcome, tried = Outcome(prior), set()
    while True:
        frame = measured_points(plan)
        x = _prior_of(prior, frame, plan) if len(frame) else np.array([])
        y = frame[TARGET_COLUMN].to_numpy(dtype=float) if len(frame) else np.array([])
        uncovered = _uncovered(plan, frame)
        outcome.stopped = _stop(x, y, uncovered, plan)
        if outcome.stopped:
            break
        seen = set(_cubes(frame)) | tried
        done = [(c.side, c.batch, c.setting) in seen for c in pool]
        # A setting without a point first: its own knob values are not yet measured here.
        first = [
            (c.side, c.batch, c.setting) in seen or bool(uncovered) and c.setting not in uncovered
            for c in pool
        ]
        widths = choice.relative_widths([c.prior_bytes for c in pool], x, y, prior.widening)
        index = choice.choose_next(widths, [c.seconds for c in pool], first)
        if index is None:
            index = choice.choose_next(widths, [c.seconds for c in pool], done)
        if index is None:
            outcome.stopped = f"no candidate left after {len(y)} point(s)"
            break
        chosen = pool[index]
        step = _step(plan, chosen, float(widths[index]), done.count(False), len(y), uncovered)
        outcome.steps.append(step)
        report(step)
        tried.add((chosen.side, chosen.batch, chosen.setting))
        knobs = [dict(plan.settings[chosen.setting])] if len(plan.settings) > 1 else []
        measure(chosen.side, chosen.batch, *knobs)
    return _finish(plan, outcome, frame, x)


def _stop(x: np.ndarray, y: np.ndarray, uncovered: set[int], plan: LoopPlan) -> str:
    """Why the loop stops ("": go on): `choice.stop_reason`, but not while a setting of the
    plan has no point and points are left to measure."""
    reason = choice.stop_reason(x, y) or ""
    if reason and uncovered and len(y) < choice.MAX_POINTS:
        return ""
    return reason


def _step(
    plan: LoopPlan, chosen: Candidate, width: float, among: int, before: int, uncovered: set[int]
) -> Step:
    """The step that measures ``chosen``, naming its knobs where the plan has several settings."""
    several = len(plan.settings) > 1
    knobs = plan.settings[chosen.setting] if several else ()
    reason = ", first of its knob values measured here" if chosen.setting in uncovered else ""
    reason = reason if several else ""
    return Step(chosen.side, chosen.batch, width, among, before, knobs, reason)


def _finish(plan: LoopPlan, outcome: Outcome, frame: pd.DataFrame, x: np.ndarray) -> Outcome:
    """Store the calibrated model of the measured points (at least one) in ``outcome``."""
    if frame.empty:
        return outcome
    y = frame[TARGET_COLUMN].to_numpy(dtype=float)
    outcome.points = [(s, b, float(p)) for (s, b, _), p in zip(_cubes(frame), y, strict=True)]
    outcome.loo_mape_pct = choice.loo_mape_pct(x, y)
    prior = outcome.prior
    predictor = calibration_model.calibrated_predictor(
        prior.predictor,
        frame,
        x,
        [step.record() for step in outcome.steps],
        prior.widening,
    )
    facts = writer.EvaluationFacts(plan.command, plan.workload, plan.here.key, plan.steps)
    # Modeling evaluates; storing is the application's (modeling never opens the database).
    evaluation = calibration_model.calibration_evaluation(frame, x)
    outcome.evaluation_id = writer.store_results(plan.db_path, evaluation, [predictor], facts)
    declared = workloads.get(plan.workload).NETWORK_KNOBS
    outcome.covers = {
        knob: values for knob, values in predictor.training_range.knobs.items() if knob in declared
    }
    return outcome
