"""Train/test splits over measured runs, by configuration, so no test point is ever seen.

A *point* is one configuration (shape, batch, knobs). Repeats of a point are
near-identical measurements, so they always land on the same side of a split:
a repeat in the training data would let a model "predict" a test point it has
effectively seen. Splits return run ids (the feature frame's index).

* `random_split` — the paper's protocol: a seeded random share of the points.
* `extrapolation_split` — fit on the smaller image sizes, test on the largest:
  what a small machine must answer about a big one.
* `knob_split` — leave one value of one network knob out (base filters 8, say):
  fit on every other run, test on that value's. What a user asks when they change
  the network rather than the image. Only where a knob varies in the data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from modeling.features import KNOB_COLUMNS, SHAPE_COLUMNS

RANDOM = "random"
EXTRAPOLATION = "extrapolation"
KNOB = "knob"
SPLIT_KINDS = (RANDOM, EXTRAPOLATION, KNOB)
POINT_COLUMNS: tuple[str, ...] = (*SHAPE_COLUMNS, "batch_size", *KNOB_COLUMNS)
# The paper's protocol holds out 30%.
TEST_FRACTION = 0.3
# Validation carved from the training points (random kind).
VALIDATION_FRACTION = 0.25
# The extrapolation split tests on this many of the largest image sizes.
EXTRAPOLATION_TEST_SIDES = 2
# A side is a cube root: round before comparing so 64.0000001 == 64.
SIDE_DECIMALS = 6


@dataclass(frozen=True)
class Split:
    """Run ids to fit on and to test on; ``train`` and ``test`` never share a point."""

    kind: str
    seed: int | None
    train: tuple[str, ...]
    test: tuple[str, ...]


def point_ids(frame: pd.DataFrame) -> pd.Series:
    """One integer per distinct configuration, aligned with ``frame``'s rows."""
    return frame.groupby(list(POINT_COLUMNS), sort=True, dropna=False).ngroup()


def random_split(frame: pd.DataFrame, test_fraction: float = TEST_FRACTION, seed: int = 0) -> Split:
    """Hold out a seeded random ``test_fraction`` of the points (all their repeats with them)."""
    if not 0 < test_fraction < 1:
        raise ValueError(f"test_fraction must be between 0 and 1 (exclusive), got {test_fraction}")
    points = point_ids(frame)
    distinct = np.unique(points.to_numpy())
    if len(distinct) < 2:
        raise ValueError(f"need at least 2 distinct configurations to split, got {len(distinct)}")
    n_test = min(len(distinct) - 1, max(1, round(test_fraction * len(distinct))))
    rng = np.random.default_rng(seed)
    test_points = set(rng.choice(distinct, size=n_test, replace=False).tolist())
    in_test = points.isin(test_points).to_numpy()
    return Split(
        RANDOM,
        seed,
        tuple(frame.index[~in_test].astype(str)),
        tuple(frame.index[in_test].astype(str)),
    )


def extrapolation_split(
    frame: pd.DataFrame, test_sides: int = EXTRAPOLATION_TEST_SIDES, seed: int | None = None
) -> Split:
    """Test on the runs of the ``test_sides`` largest image sizes, fit on all smaller ones.

    Size is ``side`` (cube root of the voxel count), so non-cubes order sensibly.
    """
    sides = frame["side"].round(SIDE_DECIMALS)
    distinct = np.sort(sides.unique())
    if not 1 <= test_sides < len(distinct):
        raise ValueError(
            f"an extrapolation split needs more image sizes than it tests on: asked to test on "
            f"{test_sides} of {len(distinct)} size(s) ({', '.join(f'{s:g}' for s in distinct)})"
        )
    in_test = (sides >= distinct[-test_sides]).to_numpy()
    return Split(
        EXTRAPOLATION,
        seed,
        tuple(frame.index[~in_test].astype(str)),
        tuple(frame.index[in_test].astype(str)),
    )


def held_out_knob_values(frame: pd.DataFrame) -> list[tuple[str, object]]:
    """The (knob, value) pairs knob splits leave out, in a fixed order.

    For each knob that takes more than one value in ``frame``, every value but its
    most measured one: that one is the network the grid was built around (the
    reference), and leaving it out would leave a handful of runs to fit on.
    """
    held_out = []
    for knob in KNOB_COLUMNS:
        if knob not in frame:
            continue
        counts = frame[knob].dropna().value_counts(sort=False).sort_index()
        if len(counts) < 2:
            continue
        reference = counts.idxmax()
        held_out += [(knob, value) for value in counts.index if value != reference]
    return held_out


def knob_split(frame: pd.DataFrame, seed: int) -> Split:
    """Leave the ``seed``-th of `held_out_knob_values` out: test on its runs, fit on the rest."""
    held_out = held_out_knob_values(frame)
    if not 0 <= seed < len(held_out):
        raise ValueError(
            f"knob split {seed} does not exist: the data has {len(held_out)} knob value(s) to "
            "leave out (a knob split needs runs of the same workload with another base filters, "
            "levels, precision or upsampling; data/REFERENCE.md)"
        )
    knob, value = held_out[seed]
    in_test = (frame[knob] == value).to_numpy()
    return Split(
        KNOB,
        seed,
        tuple(frame.index[~in_test].astype(str)),
        tuple(frame.index[in_test].astype(str)),
    )


def knob_split_label(frame: pd.DataFrame, seed: int) -> str:
    """What the ``seed``-th knob split leaves out, in words: ``base_filters = 8``."""
    knob, value = held_out_knob_values(frame)[seed]
    return f"{knob} = {value}"


def kinds_for(frame: pd.DataFrame, kinds: tuple[str, ...] = SPLIT_KINDS) -> tuple[str, ...]:
    """Those of ``kinds`` that ``frame`` can be split by (no knob split when no knob varies)."""
    return tuple(kind for kind in kinds if kind != KNOB or held_out_knob_values(frame))


def make_split(
    frame: pd.DataFrame, kind: str, seed: int, test_fraction: float = TEST_FRACTION
) -> Split:
    """The split of ``kind`` (`SPLIT_KINDS`); for the knob kind ``seed`` picks the value left
    out, for the extrapolation kind it only names the models' randomness."""
    if kind == RANDOM:
        return random_split(frame, test_fraction, seed)
    if kind == EXTRAPOLATION:
        return extrapolation_split(frame, seed=seed)
    if kind == KNOB:
        return knob_split(frame, seed)
    raise ValueError(f"split kind {kind!r} is not one of {', '.join(SPLIT_KINDS)}")


def validation_split(train: pd.DataFrame, kind: str, seed: int) -> Split:
    """Carve a validation split out of *training* rows, mirroring the test split's kind.

    Random: a random quarter of the training points. Extrapolation: the largest
    training image size, so settings are chosen for extrapolating too. Knob: a
    random quarter too, since the training rows may hold one value of the knob only.
    """
    if kind in (RANDOM, KNOB):
        return random_split(train, VALIDATION_FRACTION, seed)
    if kind == EXTRAPOLATION:
        return extrapolation_split(train, test_sides=1, seed=seed)
    raise ValueError(f"split kind {kind!r} is not one of {', '.join(SPLIT_KINDS)}")
