"""`python -m benchmarks.accuracy`'s mixed-precision section: how the models predict the runs
not in float32, held out at random and with their precision left out (issue 41, point 3)."""

import pandas as pd

from benchmarks.accuracy_precision import precision_section
from modeling.estimators.catalogue import catalogue, pick
from modeling.evaluation.protocol import evaluate
from modeling.features import measured_frame

GRID = {"sides": (32, 48, 64), "batches": (1, 2)}


def _scored(runs: pd.DataFrame) -> tuple[object, pd.DataFrame, tuple]:
    frame = measured_frame(runs)
    specs = pick(catalogue(quick=True), ["refined", "least_squares"])
    return evaluate(frame, specs, seeds=range(2), extrapolation_seeds=range(1)), frame, specs


def test_the_section_scores_the_bfloat16_runs_both_ways_and_pairs_them_with_float32(
    make_runs,
) -> None:
    bfloat16 = make_runs(**GRID, seed=1, network={"precision": "mixed_bfloat16"})
    evaluation, frame, specs = _scored(pd.concat([make_runs(**GRID), bfloat16]))

    text = precision_section(evaluation, frame, specs)

    assert text.startswith("## Mixed precision")
    assert "on the 6 runs not in float32" in text
    assert "| precision left out: MAPE % | precision left out: worst % |" in text
    # The synthetic peaks follow the closed form, so it moves exactly as measured.
    row = next(line for line in text.splitlines() if line.startswith("| 64x64x64 batch 2 |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[1] == "mixed_bfloat16" and cells[4] == cells[5]


def test_float32_runs_alone_have_no_section(make_runs) -> None:
    evaluation, frame, specs = _scored(make_runs(sides=(32, 48, 64, 80, 96), batches=(1, 2)))

    assert precision_section(evaluation, frame, specs) == ""
