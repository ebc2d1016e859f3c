"""Which step count a fit keeps, how the answer says what it rests on, and how steps show."""

from __future__ import annotations

import pandas as pd
import pytest

from modeling.errors import ModelingError
from modeling.evaluation.steps import choose_steps, configurations_by_steps, describe_steps
from modeling.features import measured_frame
from modeling.stored.evidence import FitEvidence, check_steps
from presentation import browse, charts_sweeps
from presentation.evidence import evidence_line, fitted_when
from tests.conftest import build_runs


def runs_at(steps: int, sides: tuple[int, ...], batches: tuple[int, ...] = (1,)) -> pd.DataFrame:
    """Synthetic ok runs of every side x batch, each trained for ``steps`` steps."""
    runs = build_runs(sides=sides, batches=batches)
    runs["steps"] = steps
    runs["run_id"] = [f"s{steps}-{run_id}" for run_id in runs["run_id"]]
    return runs


def choice_of(runs: pd.DataFrame, requested: int | None = None):
    return choose_steps(measured_frame(runs), runs.set_index("run_id")["steps"], requested)


def test_the_step_count_with_most_configurations_is_fitted_and_the_rest_left_out() -> None:
    production = runs_at(6, sides=(32, 48, 64), batches=(1, 2))  # 6 configurations
    smoke = runs_at(1, sides=(32, 48))  # 2, as the sidebar sweep of issue 26
    runs = pd.concat([production, smoke], ignore_index=True)

    choice = choice_of(runs)

    assert choice.steps == 6
    assert set(choice.run_ids) == set(production["run_id"])
    assert dict(choice.left_out) == {1: 2} and choice.n_left_out == 2
    frame = measured_frame(runs)
    assert configurations_by_steps(frame, runs.set_index("run_id")["steps"]) == {6: 6, 1: 2}


def test_a_tie_in_configurations_fits_the_larger_step_count() -> None:
    runs = pd.concat([runs_at(1, sides=(32, 48)), runs_at(6, sides=(64, 80))], ignore_index=True)

    assert choice_of(runs).steps == 6


def test_the_step_count_asked_for_is_fitted_and_one_without_runs_is_refused() -> None:
    runs = pd.concat([runs_at(6, sides=(32, 48, 64)), runs_at(1, sides=(32,))], ignore_index=True)

    assert choice_of(runs, requested=1).run_ids == tuple(runs.loc[3:, "run_id"])
    with pytest.raises(ModelingError) as refused:
        choice_of(runs, requested=3)
    assert str(refused.value) == (
        "no usable runs at 3 steps; the usable runs are 3 runs at 6 steps, 1 run at 1 step: "
        "pass one of those to --steps"
    )


def test_runs_by_step_count_read_as_words() -> None:
    assert describe_steps({1: 4, 6: 39}) == "39 runs at 6 steps, 4 runs at 1 step"


def evidence(**changes) -> FitEvidence:
    values = dict(
        workload="unet3d",
        machine="9b59349f74",
        evaluation_id="6ce9f46d7f984cf3aae001fd033ff271",
        fitted_at="2026-11-24T02:43:37+00:00",
        n_runs=39,
        n_points=33,
        steps=6,
        other_steps={1: 2},
        data_fingerprint="5393508bc640a103",
        command="memplan evaluate --workload unet3d",
    )
    return FitEvidence(**(values | changes))


def test_the_evidence_line_names_model_evaluation_runs_steps_and_date() -> None:
    line = evidence_line(evidence(), ["least squares on analytical terms"])

    assert line == (
        "Rests on the model “least squares on analytical terms”, from evaluation 6ce9f46d7f98, "
        "fitted 2026-11-24 02:43 UTC on 39 runs, 33 configurations, at 6 training steps; "
        "left out: 2 runs at 1 step."
    )


def test_a_smoke_test_fit_and_an_unrecorded_step_count_say_so() -> None:
    quick = evidence(command="memplan evaluate --quick", steps=None, other_steps=None)

    line = evidence_line(quick)

    assert line.startswith("Rests on evaluation 6ce9f46d7f98 (smoke-test settings, --quick), ")
    assert line.endswith("at a step count its runs did not record.")
    assert evidence(bundled=True).smoke_test is False
    assert "the bundled evaluation 6ce9f46d7f98" in evidence_line(evidence(bundled=True))
    assert fitted_when("not a time") == "not a time"


def test_a_question_at_the_fitted_steps_passes_and_another_is_refused() -> None:
    check_steps(evidence(), None)
    check_steps(evidence(steps=None), 1)  # unknown: nothing to check against
    with pytest.raises(ModelingError, match=r"--machine 9b59349f74 --steps 1`"):
        check_steps(evidence(), 1)


def test_the_sweeps_chart_draws_runs_of_other_step_counts_as_their_own_series() -> None:
    runs = pd.concat([runs_at(6, sides=(32, 48)), runs_at(1, sides=(32, 48))], ignore_index=True)
    runs["created_at"] = "2026-11-25T00:00:00+00:00"

    points = browse.batch_peaks(runs, batch_size=1)

    assert sorted(set(points["network"])) == [
        "16 filters, float32, 1 step",
        "16 filters, float32, 6 steps",
    ]
    assert sorted(points["steps"]) == [1, 1, 6, 6]
    chart = charts_sweeps.peaks_by_machine(points).to_dict()
    tooltips = [t.get("title") for t in chart["layer"][1]["encoding"]["tooltip"]]
    assert "training steps" in tooltips
    # One step count only: the network reads as before.
    only = browse.batch_peaks(runs[runs["steps"] == 6], batch_size=1)
    assert set(only["network"]) == {"16 filters, float32"}
    assert "steps" in browse.runs_table(browse.with_image(runs)).columns
