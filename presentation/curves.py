"""What the dashboard plots and tabulates about the models, as frames: nothing here fits.

* `measured_points` — the ``ok`` runs with a high-water mark, one row each;
* `predicted_curves` — each model's prediction over valid cube sides x batch
  sizes for given network knobs (one curve per model and batch);
* `predictions_at_points` — the measured points joined with each model's prediction;
* `held_out_points` — the stored held-out predictions of an evaluation joined
  with their runs: what the parity and residual plots show;
* `error_table` — the stored scores per model and split kind;
* `config_predictions` — every model's point prediction and upper bound for one
  configuration, the bound raised to the closed-form floor as `modeling.sizing` does;
* `breakdown_frame` — the refined analytical model's terms for one configuration;
* `formula_latex` — a stored formula as LaTeX.

The analytical models need no fitting, so `closed_form_models` builds them
straight from the runs: the paper's Eq. 1 + Eq. 2, and the refined model with
the median measured framework baseline, exactly what the stored ``paper`` and
``refined`` models of an evaluation compute. A database without an evaluation
still gets those two curves.

Memory is bytes in the inputs and GiB (2^30 bytes) in the frames, whose
columns end in ``_gib``: they exist to be shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd
import sympy
from sympy.parsing.sympy_parser import TokenError

from core.analytical import (
    DEFAULT_FRAMEWORK_BYTES,
    MemoryBreakdown,
    paper_estimate,
    refined_breakdown,
)
from core.units import GIB
from core.workloads.unet3d import UNetConfig, format_image_shape
from modeling.evaluation.bounds import ConformalBound, upper_bound
from modeling.features import (
    BASELINE_COLUMN,
    KNOB_COLUMNS,
    MEASURED_PEAK_COLUMN,
    OK_STATUS,
    TARGET_COLUMN,
    measured_frame,
)
from modeling.sizing import closed_form_floor

PAPER = "paper"
REFINED = "refined"
# Titles as the evaluation's catalogue (`modeling.estimators.catalogue`) names these two models.
PAPER_TITLE = "paper analytical (Eq. 1 + Eq. 2)"
REFINED_TITLE = "refined analytical (closed form)"
RANDOM_SPLIT = "random"
EXTRAPOLATION_SPLIT = "extrapolation"
# The breakdown's terms in words, in `MemoryBreakdown`'s order.
BREAKDOWN_TERMS: dict[str, str] = {
    "framework_bytes": "framework",
    "weight_bytes": "weights",
    "gradient_bytes": "gradients",
    "optimizer_bytes": "optimizer (Adam)",
    "activation_bytes": "activations",
    "backward_bytes": "backward pass",
    "input_bytes": "input batch",
}


class PointModel(Protocol):
    """What a curve needs from a model: a name, a title and point predictions in bytes."""

    name: str
    title: str

    def point_bytes(self, configs: Sequence[UNetConfig]) -> np.ndarray: ...


@dataclass(frozen=True)
class ClosedFormModel:
    """An analytical model that needs no fitting: the paper's, or the refined one.

    framework_bytes : the refined model's framework baseline (bytes); None for the paper's.
    """

    name: str
    title: str
    framework_bytes: int | None = None

    def point_bytes(self, configs: Sequence[UNetConfig]) -> np.ndarray:
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


def measured_points(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per ``ok`` run with a high-water mark, indexed by ``run_id``.

    Columns: ``image`` (e.g. ``"64"`` or ``"240x240x144"``), ``depth, height,
    width, batch_size``, the knobs, ``side`` (the side of the cube with as many
    voxels), ``peak_gib`` (the kernel's high-water mark) and ``sampled_gib``.
    """
    frame = measured_frame(runs)
    columns = ["depth", "height", "width", "batch_size", *KNOB_COLUMNS, "side"]
    points = frame[columns].copy()
    points.insert(0, "image", [
        format_image_shape((int(d), int(h), int(w)))
        for d, h, w in zip(points["depth"], points["height"], points["width"], strict=True)
    ])  # fmt: skip
    points["peak_gib"] = frame[TARGET_COLUMN] / GIB
    sampled = runs.set_index("run_id")["peak_sampled_bytes"].astype(float)
    points["sampled_gib"] = sampled.reindex(points.index).to_numpy() / GIB
    return points


def networks(points: pd.DataFrame) -> list[dict[str, Any]]:
    """The distinct knob settings of ``points`` (`measured_points`), most measured first."""
    if points.empty:
        return []
    counts = points.groupby(list(KNOB_COLUMNS), sort=True).size()
    ordered = counts.sort_values(ascending=False, kind="stable")
    return [dict(zip(KNOB_COLUMNS, values, strict=True)) for values in ordered.index]


def network_label(knobs: Mapping[str, Any]) -> str:
    """``16 base filters, 5 levels, float32, transpose`` (and channels/classes when not 1)."""
    parts = [f"{knobs['base_filters']} base filters", f"{knobs['levels']} levels"]
    if knobs.get("in_channels", 1) != 1:
        parts.append(f"{knobs['in_channels']} input channels")
    if knobs.get("classes", 1) != 1:
        parts.append(f"{knobs['classes']} classes")
    parts += [str(knobs["precision"]), str(knobs["upsampling"])]
    return ", ".join(parts)


def with_knobs(points: pd.DataFrame, knobs: Mapping[str, Any]) -> pd.DataFrame:
    """The rows of ``points`` measured with exactly these knob settings."""
    keep = np.ones(len(points), dtype=bool)
    for knob, value in knobs.items():
        keep &= (points[knob] == value).to_numpy()
    return points[keep]


def _config_knobs(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """Knob values as `UNetConfig` takes them (NumPy scalars to Python ones)."""
    return {knob: knobs[knob].item() if hasattr(knobs[knob], "item") else knobs[knob]
            for knob in KNOB_COLUMNS if knob in knobs}  # fmt: skip


def predicted_curves(
    models: Iterable[PointModel], sides: Sequence[int], batch_sizes: Sequence[int],
    knobs: Mapping[str, Any] | None = None,
) -> pd.DataFrame:  # fmt: skip
    """Each model's prediction for cubes of ``sides`` at each of ``batch_sizes``.

    knobs : the other `UNetConfig` fields (default: the reference network's).
    Columns: ``model, title, side, batch_size, predicted_gib``; one row per
    model x batch x side, sides ascending within each (model, batch) curve.
    """
    settings = _config_knobs(knobs or {})
    grid = [(batch, side) for batch in batch_sizes for side in sides]
    configs = [UNetConfig((side, side, side), batch, **settings) for batch, side in grid]
    frames = []
    for model in models:
        frames.append(pd.DataFrame({
            "model": model.name,
            "title": model.title,
            "side": [side for _, side in grid],
            "batch_size": [batch for batch, _ in grid],
            "predicted_gib": model.point_bytes(configs) / GIB,
        }))  # fmt: skip
    columns = ["model", "title", "side", "batch_size", "predicted_gib"]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def _with_errors(frame: pd.DataFrame) -> pd.DataFrame:
    frame["error_pct"] = (frame["predicted_gib"] - frame["measured_gib"]) / frame["measured_gib"]
    frame["error_pct"] *= 100
    return frame


def _configs_of(points: pd.DataFrame) -> list[UNetConfig]:
    return [
        UNetConfig((int(row.depth), int(row.height), int(row.width)), int(row.batch_size),
                   **_config_knobs({knob: getattr(row, knob) for knob in KNOB_COLUMNS}))
        for row in points.itertuples()
    ]  # fmt: skip


def predictions_at_points(models: Iterable[PointModel], points: pd.DataFrame) -> pd.DataFrame:
    """The measured ``points`` (`measured_points`) joined with each model's prediction.

    Columns: ``model, title, run_id, image, side, batch_size, measured_gib,
    predicted_gib, error_pct`` (signed: (predicted - measured) / measured x 100).
    """
    configs = _configs_of(points)
    frames = []
    for model in models:
        frames.append(pd.DataFrame({
            "model": model.name,
            "title": model.title,
            "run_id": points.index.to_numpy(),
            "image": points["image"].to_numpy(),
            "side": points["side"].to_numpy(),
            "batch_size": points["batch_size"].to_numpy(),
            "measured_gib": points["peak_gib"].to_numpy(),
            "predicted_gib": model.point_bytes(configs) / GIB if configs else [],
        }))  # fmt: skip
    if not frames:
        return pd.DataFrame(columns=_HELD_OUT_COLUMNS)
    return _with_errors(pd.concat(frames, ignore_index=True))


_HELD_OUT_COLUMNS = ["model", "title", "run_id", "image", "side", "batch_size", "measured_gib",
                     "predicted_gib", "error_pct"]  # fmt: skip


def held_out_points(
    predictions: pd.DataFrame, points: pd.DataFrame, titles: Mapping[str, str],
    split: str = RANDOM_SPLIT,
) -> pd.DataFrame:  # fmt: skip
    """The stored held-out predictions of ``split`` joined with their runs (`measured_points`).

    predictions : the ``predictions`` table (`modeling.stored.tables.load_predictions`).
    One row per model x seed x held-out run; columns as `predictions_at_points`
    plus ``seed``. Runs no longer in ``points`` (deleted since) are dropped.
    """
    if predictions.empty:
        return pd.DataFrame(columns=[*_HELD_OUT_COLUMNS, "seed"])
    mine = predictions[predictions["split"] == split]
    joined = mine.join(points[["image", "side", "batch_size"]], on="run_id", how="inner")
    frame = pd.DataFrame({
        "model": joined["model"].to_numpy(),
        "title": joined["model"].map(lambda name: titles.get(name, name)).to_numpy(),
        "run_id": joined["run_id"].to_numpy(),
        "image": joined["image"].to_numpy(),
        "side": joined["side"].to_numpy(),
        "batch_size": joined["batch_size"].to_numpy(),
        "measured_gib": joined["measured_bytes"].to_numpy(dtype=float) / GIB,
        "predicted_gib": joined["predicted_bytes"].to_numpy(dtype=float) / GIB,
        "seed": joined["seed"].to_numpy(),
    })  # fmt: skip
    return _with_errors(frame)


def error_table(scores: pd.DataFrame, titles: Mapping[str, str]) -> pd.DataFrame:
    """One row per scored model: random-split MAPE mean and sd, R², worst; extrapolation MAPE.

    scores : the ``scores`` table (`modeling.stored.tables.load_scores`), one row per
    model x split x seed. Rows follow ``titles``' order, then any other model.
    Columns: ``model, title, random_mape_pct, random_mape_sd, random_r2,
    random_worst_pct, extrapolation_mape_pct, extrapolation_worst_pct, seeds``.
    """
    columns = ["model", "title", "random_mape_pct", "random_mape_sd", "random_r2",
               "random_worst_pct", "extrapolation_mape_pct", "extrapolation_worst_pct",
               "seeds"]  # fmt: skip
    if scores.empty:
        return pd.DataFrame(columns=columns)
    by_split = scores.groupby(["model", "split"]).agg(
        mape_pct=("mape_pct", "mean"),
        mape_sd=("mape_pct", "std"),
        r2=("r2", "mean"),
        worst_pct=("max_ape_pct", "max"),
        seeds=("seed", "nunique"),
    )
    names = [name for name in titles if name in by_split.index.get_level_values(0)]
    names += sorted(set(by_split.index.get_level_values(0)) - set(names))
    rows = []
    for name in names:
        random = _split_row(by_split, name, RANDOM_SPLIT)
        extrapolation = _split_row(by_split, name, EXTRAPOLATION_SPLIT)
        rows.append({
            "model": name,
            "title": titles.get(name, name),
            "random_mape_pct": random.get("mape_pct"),
            "random_mape_sd": random.get("mape_sd"),
            "random_r2": random.get("r2"),
            "random_worst_pct": random.get("worst_pct"),
            "extrapolation_mape_pct": extrapolation.get("mape_pct"),
            "extrapolation_worst_pct": extrapolation.get("worst_pct"),
            "seeds": random.get("seeds"),
        })  # fmt: skip
    return pd.DataFrame(rows, columns=columns)


def _split_row(by_split: pd.DataFrame, name: str, split: str) -> dict[str, float]:
    if (name, split) not in by_split.index:
        return {}
    return {key: float(value) for key, value in by_split.loc[(name, split)].items()}


def formula_latex(formula: str | None) -> str | None:
    """A stored formula (sympy syntax, e.g. ``1.137*batch_size*megavoxels + 0.9604``) as LaTeX.

    Input names are set upright (``\\mathrm{batch\\_size}``). None when the text
    is not an expression sympy reads (some models store prose, e.g. units).
    sympy evaluates the text: parse only formulas from a database you trust,
    as for its pickled models (`modeling.stored.tables`).
    """
    if not formula:
        return None
    try:
        expression = sympy.parse_expr(formula)
    except (sympy.SympifyError, SyntaxError, TypeError, TokenError):
        return None
    names = {
        symbol: r"\mathrm{" + symbol.name.replace("_", r"\_") + "}"
        for symbol in expression.free_symbols
        if isinstance(symbol, sympy.Symbol)
    }
    return sympy.latex(expression, symbol_names=names, mul_symbol="dot")


class BoundedModel(PointModel, Protocol):
    """A model with upper bounds (`modeling.stored.predictor.Predictor` is one)."""

    def bound_for(self, config: UNetConfig) -> ConformalBound: ...

    @property
    def training_range(self) -> Any: ...


def config_predictions(
    models: Iterable[BoundedModel], configs: Sequence[UNetConfig]
) -> pd.DataFrame:
    """Every model's point prediction and upper bound for each of ``configs``.

    models : `modeling.stored.predictor.Predictor` objects; each predicts all of
    ``configs`` in one call (a page asks for every batch size of one image at
    once, so moving the batch slider needs no prediction). The upper bound is
    the model's conformal bound, raised to the refined closed-form estimate
    where it falls below it (`modeling.sizing.closed_form_floor`), so it agrees
    with the sizing answers. One row per model x configuration, columns
    ``model, title, batch_size, image_shape, predicted_bytes, upper_bytes,
    bound_ratio, raised_to_closed_form, beyond`` (how the configuration lies
    outside the model's measured range, in words; empty inside it).
    """
    columns = ["model", "title", "batch_size", "image_shape", "predicted_bytes", "upper_bytes",
               "bound_ratio", "raised_to_closed_form", "beyond"]  # fmt: skip
    if not configs:
        return pd.DataFrame(columns=columns)
    frames = []
    for model in models:
        predicted = np.asarray(model.point_bytes(configs), dtype=float)
        bounds = [model.bound_for(config) for config in configs]
        ratios = np.array([bound.ratio for bound in bounds])
        # What `Predictor.upper_bytes` computes, without predicting a second time.
        upper = upper_bound(predicted, ratios)
        floor = closed_form_floor(model, configs)
        frames.append(pd.DataFrame({
            "model": model.name,
            "title": model.title,
            "batch_size": [config.batch_size for config in configs],
            "image_shape": [config.image_shape for config in configs],
            "predicted_bytes": predicted,
            "upper_bytes": np.maximum(upper, floor),
            "bound_ratio": ratios,
            "raised_to_closed_form": upper < floor,
            "beyond": ["; ".join(model.training_range.beyond(config)) for config in configs],
        }))  # fmt: skip
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


def usable_budget_bytes(budget_bytes: float, headroom: float) -> int:
    """What training may use of ``budget_bytes`` when ``headroom`` (0.2 = 20%) stays free.

    The inverse of `modeling.sizing.memory_to_buy`'s rule (bound x (1 + headroom)
    <= memory), so a configuration "fits" a budget exactly when that memory
    would be enough to buy.
    """
    if headroom < 0:
        raise ValueError(f"headroom must be >= 0, got {headroom}")
    return int(budget_bytes / (1 + headroom))


def breakdown_frame(breakdown: MemoryBreakdown) -> pd.DataFrame:
    """The refined model's terms for one configuration: ``term, gib, share_pct``, display order."""
    parts = breakdown.parts()
    total = breakdown.total_bytes
    return pd.DataFrame({
        "term": [BREAKDOWN_TERMS[name] for name in parts],
        "gib": [value / GIB for value in parts.values()],
        "share_pct": [value / total * 100 if total else 0.0 for value in parts.values()],
    })  # fmt: skip
