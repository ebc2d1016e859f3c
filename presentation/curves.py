"""What the dashboard plots and tabulates about the models, as frames: nothing here fits.

* `measured_points` — the ``ok`` runs with a high-water mark, one row each;
* `predicted_curves` — each model's prediction over valid square or cube sides
  x batch sizes for a workload's network knobs (one curve per model and batch);
* `drawn_sides` — the sides a curve is drawn at: every valid one, thinned
  when a workload takes any side (AlexNet: 67, 72, 80, ...); `side_choices`
  — those a page offers to draw up to, and its default;
* `predictions_at_points` — the measured points joined with each model's prediction;
* `held_out_points` — the stored held-out predictions of an evaluation joined
  with their runs: what the parity and residual plots show;
* `dwarfing` — the models whose predictions dwarf the others' (a case for log axes);
* `with_sample_megavoxels` — image x batch, the x axis of the charts beside the
  study's published figures (`presentation.charts_study`, `charts_published`).

The error table is `presentation.model_errors`'s, the formulas
`presentation.formulas`'.

The analytical models need no fitting, so `closed_form_models` builds them
straight from the runs: the paper's Eq. 1 + Eq. 2, and the refined model with
the median measured framework baseline, exactly what the stored ``paper`` and
``refined`` models of an evaluation compute. A database without an evaluation
still gets those two curves.

Every frame holds one workload's runs (`presentation.workload_labels.runs_of`);
the knobs are that workload's, the default workload's when none is named.

Memory is bytes in the inputs and GiB (2^30 bytes) in the frames, whose
columns end in ``_gib``: they exist to be shown.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from core import workloads
from core.analytical import (
    DEFAULT_FRAMEWORK_BYTES,
    paper_estimate,
    refined_breakdown,
)
from core.units import GIB
from core.workloads import DEFAULT_WORKLOAD
from core.workloads.base import WorkloadConfig
from modeling.evaluation import splits
from modeling.features import (
    BASELINE_COLUMN,
    KNOB_COLUMNS,
    MEASURED_PEAK_COLUMN,
    OK_STATUS,
    TARGET_COLUMN,
    measured_frame,
)
from presentation import workload_labels

PAPER = "paper"
REFINED = "refined"
# A curve is drawn at no more valid sides than this (a workload taking any side is thinned).
MAX_DRAWN_SIDES = 64
# Thinned sides are multiples of this (or of a multiple of it).
DRAWN_SIDE_STEP = 8
# Titles as the evaluation's catalogue (`modeling.estimators.catalogue`) names these two models.
PAPER_TITLE = "paper analytical (Eq. 1 + Eq. 2)"
REFINED_TITLE = "refined analytical (closed form)"
RANDOM_SPLIT = splits.RANDOM
# A model "dwarfs" the others when it predicts more than this many times their median for
# the same configuration somewhere: on linear axes their curves are then flat lines.
DWARF_RATIO = 10.0
# Image x batch, the published-points chart's x axis, in millions of voxels.
MEGA = 1e6


class PointModel(Protocol):
    """What a curve needs from a model: a name, a title and point predictions in bytes."""

    name: str
    title: str

    def point_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray: ...


@dataclass(frozen=True)
class ClosedFormModel:
    """An analytical model that needs no fitting: the paper's, or the refined one.

    framework_bytes : the refined model's framework baseline (bytes); None for the paper's.
    """

    name: str
    title: str
    framework_bytes: int | None = None

    def point_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        if self.framework_bytes is None:
            return np.array([paper_estimate(c).total_bytes for c in configs], dtype=float)
        framework = self.framework_bytes
        return np.array([refined_breakdown(c, framework).total_bytes for c in configs], dtype=float)


def framework_bytes(runs: pd.DataFrame) -> int:
    """The median measured post-import baseline of the ``ok`` runs (the default without any).

    The same number `modeling.estimators.analytical.RefinedAnalyticalModel` learns from
    the runs it is fit on.
    """
    usable = runs[(runs["status"] == OK_STATUS) & runs[MEASURED_PEAK_COLUMN].notna()]
    measured = usable[BASELINE_COLUMN].dropna().astype(float)
    return int(measured.median()) if len(measured) else DEFAULT_FRAMEWORK_BYTES


def closed_form_models(runs: pd.DataFrame) -> list[ClosedFormModel]:
    """The paper's and the refined analytical model, the latter with the runs' baseline."""
    return [
        ClosedFormModel(PAPER, PAPER_TITLE),
        ClosedFormModel(REFINED, REFINED_TITLE, framework_bytes(runs)),
    ]


def measured_points(runs: pd.DataFrame, steps: int | None = None) -> pd.DataFrame:
    """One row per ``ok`` run with a high-water mark, indexed by ``run_id``.

    Columns: ``image`` (e.g. ``"64"``, ``"240x240x144"`` or ``"227x200"``),
    ``workload, depth, height, width, batch_size`` (a 2D image has no depth),
    the knobs, ``side`` (the side of the square or cube with as many pixels or
    voxels), ``peak_gib`` (the kernel's high-water mark) and ``sampled_gib``.
    steps : only the runs of this many training steps (the step count the models
        were fitted on, `modeling.stored.evidence`), so a 1-step smoke test is never
        drawn among the 6-step runs as if it were one of them; None: every run.
    """
    if steps is not None and "steps" in runs:
        runs = runs[runs["steps"] == steps]
    frame = measured_frame(runs)
    columns = ["workload", "depth", "height", "width", "batch_size", *KNOB_COLUMNS, "side"]
    points = frame[columns].copy()
    points.insert(
        0,
        "image",
        [
            workload_labels.image_label(workload_labels.image_shape(row))
            for row in points[["depth", "height", "width"]].to_dict("records")
        ],
    )
    points["peak_gib"] = frame[TARGET_COLUMN] / GIB
    sampled = runs.set_index("run_id")["peak_sampled_bytes"].astype(float)
    points["sampled_gib"] = sampled.reindex(points.index).to_numpy() / GIB
    return points


def networks(points: pd.DataFrame, workload: str = DEFAULT_WORKLOAD) -> list[dict[str, Any]]:
    """The distinct knob settings of ``workload`` in ``points`` (`measured_points`).

    Most measured first; each a dict of that workload's knobs only.
    """
    mine = points[points["workload"] == workload] if "workload" in points else points
    if mine.empty:
        return []
    knobs = list(workloads.get(workload).NETWORK_KNOBS)
    counts = mine.groupby(knobs, sort=True, dropna=False).size()
    ordered = counts.sort_values(ascending=False, kind="stable")
    values = ordered.index if len(knobs) > 1 else [(value,) for value in ordered.index]
    return [dict(zip(knobs, setting, strict=True)) for setting in values]


def network_label(knobs: Mapping[str, Any], workload: str = DEFAULT_WORKLOAD) -> str:
    """``16 base filters, 5 levels, float32, transpose`` (and channels/classes when not default)."""
    return workload_labels.network_label(knobs, workload)


def with_knobs(points: pd.DataFrame, knobs: Mapping[str, Any]) -> pd.DataFrame:
    """The rows of ``points`` measured with exactly these knob settings."""
    keep = np.ones(len(points), dtype=bool)
    for knob, value in knobs.items():
        keep &= (points[knob] == value).to_numpy()
    return points[keep]


def config_knobs(knobs: Mapping[str, Any], workload: str) -> dict[str, Any]:
    """``workload``'s knob values as its config takes them (NumPy scalars to Python ones)."""
    return {
        knob: knobs[knob].item() if hasattr(knobs[knob], "item") else knobs[knob]
        for knob in workloads.get(workload).NETWORK_KNOBS
        if knob in knobs
    }


def drawn_sides(valid: Sequence[int], most: int = MAX_DRAWN_SIDES) -> list[int]:
    """``valid`` sides, thinned to about ``most`` when there are more (ends kept).

    A U-Net takes multiples of 16, few enough to draw each; an AlexNet takes
    every side from 67, and a curve through multiples of 8 reads the same.
    """
    valid = sorted(valid)
    if len(valid) <= most:
        return valid
    step = DRAWN_SIDE_STEP * math.ceil((valid[-1] - valid[0]) / most / DRAWN_SIDE_STEP)
    kept = [valid[0], *(side for side in valid[1:-1] if side % step == 0), valid[-1]]
    return list(dict.fromkeys(kept))


def side_choices(
    workload: str, knobs: Mapping[str, Any], points: pd.DataFrame, largest: int
) -> tuple[list[int], int]:
    """The sides a curve may be drawn up to (`drawn_sides` up to ``largest``), and the first
    of them at or past the largest measured in ``points`` (`measured_points`): the default.

    Without measured points the default is the workload's own (``LABELS.largest_side``),
    else a quarter up the sides.
    """
    module = workloads.get(workload)
    offered = drawn_sides(module.square_sides(1, largest, **knobs))
    default_largest = module.LABELS.largest_side or offered[len(offered) // 4]
    largest_measured = float(points["side"].max()) if len(points) else default_largest
    return offered, next((side for side in offered if side >= largest_measured), offered[-1])


def predicted_curves(
    models: Iterable[PointModel],
    sides: Sequence[int],
    batch_sizes: Sequence[int],
    knobs: Mapping[str, Any] | None = None,
    workload: str = DEFAULT_WORKLOAD,
) -> pd.DataFrame:
    """Each model's prediction for squares or cubes of ``sides`` at each of ``batch_sizes``.

    knobs : ``workload``'s other config fields (default: its reference network's).
    Columns: ``model, title, side, batch_size, predicted_gib``; one row per
    model x batch x side, sides ascending within each (model, batch) curve.
    """
    module = workloads.get(workload)
    settings = config_knobs(knobs or {}, workload)
    grid = [(batch, side) for batch in batch_sizes for side in sides]
    configs = [module.Config((side,) * module.DIMS, batch, **settings) for batch, side in grid]
    frames = []
    for model in models:
        frames.append(
            pd.DataFrame(
                {
                    "model": model.name,
                    "title": model.title,
                    "side": [side for _, side in grid],
                    "batch_size": [batch for batch, _ in grid],
                    "predicted_gib": model.point_bytes(configs) / GIB,
                }
            )
        )
    columns = ["model", "title", "side", "batch_size", "predicted_gib"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _with_errors(frame: pd.DataFrame) -> pd.DataFrame:
    frame["error_pct"] = (frame["predicted_gib"] - frame["measured_gib"]) / frame["measured_gib"]
    frame["error_pct"] *= 100
    return frame


def _configs_of(points: pd.DataFrame) -> list[WorkloadConfig]:
    return [workloads.config_from_row(row) for row in points.to_dict("records")]


def predictions_at_points(models: Iterable[PointModel], points: pd.DataFrame) -> pd.DataFrame:
    """The measured ``points`` (`measured_points`) joined with each model's prediction.

    Columns: ``model, title, run_id, image, side, batch_size, measured_gib,
    predicted_gib, error_pct`` (signed: (predicted - measured) / measured x 100).
    """
    configs = _configs_of(points)
    frames = []
    for model in models:
        frames.append(
            pd.DataFrame(
                {
                    "model": model.name,
                    "title": model.title,
                    "run_id": points.index.to_numpy(),
                    "image": points["image"].to_numpy(),
                    "side": points["side"].to_numpy(),
                    "batch_size": points["batch_size"].to_numpy(),
                    "measured_gib": points["peak_gib"].to_numpy(),
                    "predicted_gib": model.point_bytes(configs) / GIB if configs else [],
                }
            )
        )
    if not frames:
        return pd.DataFrame(columns=_HELD_OUT_COLUMNS)
    return _with_errors(pd.concat(frames, ignore_index=True))


_HELD_OUT_COLUMNS = [
    "model",
    "title",
    "run_id",
    "image",
    "side",
    "batch_size",
    "measured_gib",
    "predicted_gib",
    "error_pct",
]


def held_out_points(
    predictions: pd.DataFrame,
    points: pd.DataFrame,
    titles: Mapping[str, str],
    split: str = RANDOM_SPLIT,
) -> pd.DataFrame:
    """The stored held-out predictions of ``split`` joined with their runs (`measured_points`).

    predictions : the ``predictions`` table (`modeling.stored.tables.load_predictions`).
    One row per model x seed x held-out run; columns as `predictions_at_points`
    plus ``seed``. Runs no longer in ``points`` (deleted since) are dropped.
    """
    if predictions.empty:
        return pd.DataFrame(columns=[*_HELD_OUT_COLUMNS, "seed"])
    mine = predictions[predictions["split"] == split]
    joined = mine.join(points[["image", "side", "batch_size"]], on="run_id", how="inner")
    frame = pd.DataFrame(
        {
            "model": joined["model"].to_numpy(),
            "title": joined["model"].map(lambda name: titles.get(name, name)).to_numpy(),
            "run_id": joined["run_id"].to_numpy(),
            "image": joined["image"].to_numpy(),
            "side": joined["side"].to_numpy(),
            "batch_size": joined["batch_size"].to_numpy(),
            "measured_gib": joined["measured_bytes"].to_numpy(dtype=float) / GIB,
            "predicted_gib": joined["predicted_bytes"].to_numpy(dtype=float) / GIB,
            "seed": joined["seed"].to_numpy(),
        }
    )
    return _with_errors(frame)


def dwarfing(predictions: pd.DataFrame, ratio: float = DWARF_RATIO) -> list[str]:
    """The titles of the models whose largest prediction is over ``ratio`` x the others'.

    predictions : ``title, predicted_gib`` (`predicted_curves`, `predictions_at_points`).
    A model's height on a chart is its largest prediction; it dwarfs the rest when
    that is more than ``ratio`` times the median of the other models' largest
    predictions: on linear axes their curves would be flat lines. Needs two
    models at least; titles in the frame's order.
    """
    if predictions.empty:
        return []
    largest = predictions.groupby("title", sort=False)["predicted_gib"].max()
    found = []
    for title, height in largest.items():
        others = float(largest.drop(title).median()) if len(largest) > 1 else math.nan
        if others > 0 and height > ratio * others:
            found.append(str(title))
    return found


def with_sample_megavoxels(points: pd.DataFrame) -> pd.DataFrame:
    """``points`` (`measured_points`) with ``sample_megavoxels``: image x batch / 10^6."""
    depth = points["depth"].astype(float).fillna(1) if "depth" in points else 1.0
    elements = depth * points["height"].astype(float) * points["width"].astype(float)
    return points.assign(sample_megavoxels=elements * points["batch_size"] / MEGA)
