"""How well `modeling.gpu_memory` predicts runs it was not fitted to, as CPU models are judged.

Two protocols, over the ``ok`` runs of one GPU profile, and a third on runs apart:

* `random_split`: seeded random splits (a quarter held out each time, per network so
  every network keeps two runs to fit); every held-out run is predicted once per split.
* `beyond_sides`: per network, the runs with the largest elements (input elements
  times batch; a quarter, at least one) held out and predicted from the rest: the
  answers beyond the measured range that a larger GPU asks for.
* `held_out`: another set of runs of the same GPU, predicted by a model of all the
  first (memplan's own child's H200 runs by the bundled ones: `benchmarks.gpu_holdout`).

For each held-out run: the allocated line's relative error, whether the bound covers
what the device had in use when it trained (``nvml_used_peak_bytes``: what fitting
needs at most; the bound is sound when it is at least that), whether the floor stays at
or under the tensors' peak plus the context (what fitting needs at least: "does not
fit" is sound then), and how much room the bound leaves (bound / device used). Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from modeling.gpu_memory import GpuMemoryModel, GpuPoint, points_of

DEFAULT_SPLITS = 20
TEST_SHARE = 0.25
SEED = 0


@dataclass(frozen=True)
class GpuScores:
    """One protocol's figures over every held-out prediction."""

    protocol: str
    predictions: int  # held-out runs predicted (counted once per split)
    unanswered: int  # held-out runs no line answered
    median_error_pct: float  # |predicted - measured| / measured allocated, median
    p90_error_pct: float
    max_error_pct: float
    bound_coverage: float  # share with device used <= bound
    inside_predictions: int  # of them within their line's measured range
    inside_bound_coverage: float  # the share among those (where "fits" is said)
    floor_soundness: float  # share with floor <= allocated + context
    inside_floor_soundness: float
    median_bound_room: float  # bound / device used, median
    max_beyond_factor: float  # the farthest held-out run beyond its training range


def _predict(train: list[GpuPoint], test: list[GpuPoint]) -> list[dict[str, float]]:
    model = GpuMemoryModel().fit_points(train)
    rows = []
    for point in test:
        need = model.need(point.config)
        if need is None:
            rows.append({"answered": 0.0})
            continue
        rows.append(
            {
                "answered": 1.0,
                "error_pct": abs(need.allocated_bytes - point.allocated) / point.allocated * 100,
                "covered": float(point.used <= need.bound_bytes),
                "floor_sound": float(need.floor_bytes <= point.allocated + point.context),
                "room": need.bound_bytes / point.used,
                "beyond": need.beyond_factor,
                "inside": float(need.inside),
            }
        )
    return rows


def _groups(points: list[GpuPoint]) -> list[list[int]]:
    """The indexes of ``points`` per network, in order."""
    groups: dict[tuple, list[int]] = {}
    for index, point in enumerate(points):
        groups.setdefault(point.key, []).append(index)
    return list(groups.values())


def _scores(protocol: str, rows: list[dict[str, float]]) -> GpuScores:
    answered = [r for r in rows if r["answered"]]
    if not answered:
        raise ValueError(f"{protocol}: no held-out run was answered")

    def column(name: str) -> np.ndarray:
        return np.array([r[name] for r in answered])

    errors = column("error_pct")
    inside = column("inside") == 1.0

    def inside_share(name: str) -> float:
        return float(column(name)[inside].mean()) if inside.any() else float("nan")

    return GpuScores(
        protocol=protocol,
        predictions=len(rows),
        unanswered=len(rows) - len(answered),
        median_error_pct=float(np.median(errors)),
        p90_error_pct=float(np.percentile(errors, 90)),
        max_error_pct=float(errors.max()),
        bound_coverage=float(column("covered").mean()),
        inside_predictions=int(inside.sum()),
        inside_bound_coverage=inside_share("covered"),
        floor_soundness=float(column("floor_sound").mean()),
        inside_floor_soundness=inside_share("floor_sound"),
        median_bound_room=float(np.median(column("room"))),
        max_beyond_factor=float(column("beyond").max()),
    )


def random_split(runs: pd.DataFrame, splits: int = DEFAULT_SPLITS, seed: int = SEED) -> GpuScores:
    """`GpuScores` over ``splits`` seeded random splits of the ``ok`` runs of one GPU profile."""
    points = points_of(runs)
    rng = np.random.default_rng(seed)
    rows: list[dict[str, float]] = []
    for _ in range(splits):
        held: set[int] = set()
        for group in _groups(points):
            count = min(round(len(group) * TEST_SHARE), len(group) - 2)
            if count > 0:
                held |= {int(i) for i in rng.choice(group, size=count, replace=False)}
        train = [p for i, p in enumerate(points) if i not in held]
        rows += _predict(train, [points[i] for i in sorted(held)])
    return _scores("random split", rows)


def beyond_sides(runs: pd.DataFrame) -> GpuScores:
    """`GpuScores` of each network's largest runs (a quarter) predicted from the rest."""
    points = points_of(runs)
    held: set[int] = set()
    for group in _groups(points):
        count = min(max(1, round(len(group) * TEST_SHARE)), len(group) - 2)
        smallest = min(points[i].elements for i in group)
        if count > 0:
            largest = sorted(group, key=lambda i: points[i].elements)[-count:]
            held |= {i for i in largest if points[i].elements > smallest}
    train = [p for i, p in enumerate(points) if i not in held]
    return _scores("beyond the measured sides", _predict(train, [points[i] for i in sorted(held)]))


def held_out(train: pd.DataFrame, test: pd.DataFrame) -> GpuScores:
    """`GpuScores` of ``test``'s ``ok`` runs predicted by a model of all of ``train``: runs
    the model never saw, measured apart (memplan's own GPU child against the runs it is
    bundled with)."""
    return _scores("held out", _predict(points_of(train), points_of(test)))
