"""The paper's evaluation protocol, and the extrapolation question, for every model.

For each seed and each split kind (`modeling.evaluation.splits`):

* **random** — the paper's protocol: 70% of the configurations to fit, 30% to test;
* **extrapolation** — fit on the smaller image sizes, test on the largest;
* **knob** — leave one value of a network knob out (where the data varies one),
  once per value left out: the ``seed`` of its scores numbers those values
  (`modeling.evaluation.splits.knob_split_label` names them);

the first two repeated over seeds (10 by default for the random split, as the paper did;
3 for the fixed extrapolation split, where seeds only vary the models' own
randomness), each model's settings are chosen on validation data carved from the training
rows (`modeling.evaluation.selection`), the winner is refit on the training rows, and
only then does it see the test rows, once, to be scored: MAPE, R² and the
worst-case percentage error. Test rows never reach ``fit`` or the selection:
`score_split` hands them over only to ``predict``.

`summarise` turns the per-seed scores into the table ``memplan
evaluate`` prints: mean and spread (standard deviation over seeds) of MAPE.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from modeling.errors import ModelingError
from modeling.evaluation.selection import fit_with_selection, mape_pct
from modeling.evaluation.splits import (
    EXTRAPOLATION,
    KNOB,
    RANDOM,
    SPLIT_KINDS,
    Split,
    held_out_knob_values,
    kinds_for,
    make_split,
    point_ids,
)
from modeling.features import TARGET_COLUMN

if TYPE_CHECKING:  # the catalogue imports every estimator: only fitting needs it
    from modeling.estimators.catalogue import ModelSpec

DEFAULT_SEEDS = 10
# The extrapolation split is the same for every seed; seeds only vary the models'
# own randomness (and validation carving), so fewer repeats show that spread.
DEFAULT_EXTRAPOLATION_SEEDS = 3
# Fewer distinct configurations than this and a 70/30 split tests on a handful.
MIN_POINTS = 10
PREDICTION_COLUMNS = ("model", "split", "seed", "run_id", "measured_bytes", "predicted_bytes")
# Column prefixes of the summary table, per split kind.
SUMMARY_PREFIXES = {RANDOM: "random", EXTRAPOLATION: "extrap", KNOB: "knob"}


@dataclass(frozen=True)
class Score:
    """One model on one split: test errors, how it was tuned, how long fitting took."""

    model: str
    split: str
    seed: int
    mape_pct: float
    r2: float
    max_ape_pct: float
    n_train: int
    n_test: int
    fit_seconds: float
    params_json: str
    validation_mape_pct: float | None
    formula: str | None


@dataclass(frozen=True)
class Evaluation:
    """Every score, every held-out prediction, and what data they came from."""

    scores: tuple[Score, ...]
    predictions: pd.DataFrame = field(repr=False)  # PREDICTION_COLUMNS
    n_runs: int
    n_points: int
    data_fingerprint: str
    seeds: dict[str, tuple[int, ...]]  # split kind -> the seeds it was repeated with

    def scores_frame(self) -> pd.DataFrame:
        return pd.DataFrame([score.__dict__ for score in self.scores])


def data_fingerprint(frame: pd.DataFrame) -> str:
    """A short hash of which runs (and peaks) a result was computed from."""
    rows = sorted(zip(frame.index.astype(str), frame[TARGET_COLUMN].astype(float), strict=True))
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def score_split(spec: ModelSpec, frame: pd.DataFrame, split: Split) -> tuple[Score, pd.DataFrame]:
    """Fit ``spec`` on ``split.train`` (tuning inside it) and score it on ``split.test``."""
    # Here, not at the top: reading stored results (``memplan size``, the pages) imports
    # this module for its records, and scikit-learn's import alone takes ~2 s on 2 cores.
    from sklearn.metrics import r2_score

    overlap = set(split.train) & set(split.test)
    if overlap:
        raise ModelingError(f"split {split.kind} shares {len(overlap)} run(s) between fit and test")
    seed = split.seed or 0
    train = frame.loc[list(split.train)]
    test = frame.loc[list(split.test)]

    def build(rows: pd.DataFrame, params: dict) -> object:
        return spec.build(rows, params, seed)

    outcome = fit_with_selection(build, spec.candidates, spec.columns, train, split.kind, seed)
    predicted = np.asarray(outcome.estimator.predict(test[list(outcome.columns)]), dtype=float)
    measured = test[TARGET_COLUMN].to_numpy(dtype=float)
    errors_pct = np.abs(predicted - measured) / measured * 100
    score = Score(
        model=spec.name,
        split=split.kind,
        seed=seed,
        mape_pct=mape_pct(measured, predicted),
        r2=float(r2_score(measured, predicted)) if len(measured) > 1 else float("nan"),
        max_ape_pct=float(errors_pct.max()),
        n_train=len(train),
        n_test=len(test),
        fit_seconds=outcome.fit_seconds,
        params_json=outcome.selection.params_json,
        validation_mape_pct=outcome.selection.validation_mape_pct,
        formula=getattr(outcome.estimator, "formula_", None),
    )
    predictions = pd.DataFrame(
        {
            "model": spec.name,
            "split": split.kind,
            "seed": seed,
            "run_id": list(split.test),
            "measured_bytes": measured,
            "predicted_bytes": predicted,
        }
    )
    return score, predictions


def score_or_explain(
    spec: ModelSpec, frame: pd.DataFrame, split: Split, where: str, remedy: str
) -> tuple[Score, pd.DataFrame]:
    """`score_split`, with a model refusing data too small for it told as what to measure.

    where : the split in words ("the random split, seed 0"); remedy : what to measure.
    """
    try:
        return score_split(spec, frame, split)
    except ValueError as error:
        raise ModelingError(
            f"{spec.name} cannot be fitted on {where} ({len(split.train)} run(s) to fit on): "
            f"{error}; measure more configurations{remedy} (memplan sweep)"
        ) from error


def evaluate(
    frame: pd.DataFrame,
    specs: Sequence[ModelSpec],
    seeds: Sequence[int] = tuple(range(DEFAULT_SEEDS)),
    kinds: Sequence[str] = SPLIT_KINDS,
    progress: Callable[[str], None] | None = None,
    extrapolation_seeds: Sequence[int] | None = None,
) -> Evaluation:
    """Score every spec on every (kind, seed) split of ``frame`` (a measured feature frame).

    ``extrapolation_seeds`` (default: ``seeds``) are the seeds of the extrapolation split.
    The knob kind is scored once per knob value it can leave out, and skipped when
    no knob varies in ``frame``.
    """
    if not seeds:
        raise ModelingError("no seeds given; the protocol needs at least one (the paper's: 10)")
    seeds_of = {kind: seeds for kind in SPLIT_KINDS}
    if extrapolation_seeds is not None:
        seeds_of[EXTRAPOLATION] = extrapolation_seeds
    seeds_of[KNOB] = range(len(held_out_knob_values(frame)))
    unknown = [kind for kind in kinds if kind not in SPLIT_KINDS]
    if unknown:
        raise ModelingError(f"split kind(s) {unknown} unknown; known: {', '.join(SPLIT_KINDS)}")
    kinds = kinds_for(frame, tuple(kinds))
    n_points = int(point_ids(frame).nunique()) if len(frame) else 0
    if n_points < MIN_POINTS:
        raise ModelingError(
            f"only {n_points} distinct measured configuration(s) ({len(frame)} ok run(s)); "
            f"the evaluation needs at least {MIN_POINTS}; measure more (memplan sweep)"
        )
    scores: list[Score] = []
    predictions: list[pd.DataFrame] = []
    for kind in kinds:
        for seed in seeds_of[kind]:
            split = make_split(frame, kind, seed)
            for spec in specs:
                if progress:
                    progress(f"{kind} split, seed {seed}: {spec.name}")
                score, held_out = score_or_explain(
                    spec,
                    frame,
                    split,
                    f"the {kind} split, seed {seed}",
                    ", e.g. more image sizes below the largest two",
                )
                scores.append(score)
                predictions.append(held_out)
    return Evaluation(
        scores=tuple(scores),
        predictions=pd.concat(predictions, ignore_index=True),
        n_runs=len(frame),
        n_points=n_points,
        data_fingerprint=data_fingerprint(frame),
        seeds={kind: tuple(seeds_of[kind]) for kind in kinds},
    )


def summarise(evaluation: Evaluation, specs: Sequence[ModelSpec]) -> pd.DataFrame:
    """One row per model: MAPE mean and spread over seeds, mean R², worst error, per split."""
    scores = evaluation.scores_frame()
    rows = []
    for spec in specs:
        row: dict[str, object] = {"model": spec.title}
        for kind in SPLIT_KINDS:
            mine = scores[(scores["model"] == spec.name) & (scores["split"] == kind)]
            prefix = SUMMARY_PREFIXES[kind]
            if mine.empty:
                continue
            row[f"{prefix} MAPE %"] = mine["mape_pct"].mean()
            row[f"{prefix} MAPE sd"] = mine["mape_pct"].std(ddof=1) if len(mine) > 1 else 0.0
            row[f"{prefix} R2"] = mine["r2"].mean()
            row[f"{prefix} worst %"] = mine["max_ape_pct"].max()
        row["fit s"] = scores.loc[scores["model"] == spec.name, "fit_seconds"].median()
        rows.append(row)
    return pd.DataFrame(rows)
