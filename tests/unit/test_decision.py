"""The sizing decision: which models are believed, how sure the verdict is, and its words
(`presentation.sizing_text`)."""

from __future__ import annotations

import dataclasses
import math

import pandas as pd
import pytest

from core import workloads
from core.workloads.unet3d import UNetConfig
from modeling.decision import (
    Confidence,
    ModelEstimate,
    approx_gib,
    credible_models,
    decide,
    evidence_for,
)
from presentation import sizing_text

GIB = 2**30
DELL = UNetConfig((240, 240, 144), 16)
MEASURED = UNetConfig((128, 128, 128), 4)


def estimate(
    name: str,
    upper_gib: float,
    predicted_gib: float | None = None,
    *,
    raised: bool = False,
    beyond: str = "",
    reach: float = 0.5,
) -> ModelEstimate:
    predicted = upper_gib / 1.06 if predicted_gib is None else predicted_gib
    return ModelEstimate(name, name, predicted * GIB, upper_gib * GIB, raised, beyond, reach)


# What the bundled Intel reference's ten models answer for the Dell–Intel question
# (rounded), 12x the image x batch of its largest run.
BEYOND = "image x batch (132.7 megavoxels) is more than any measured run (11.2)"
DELL_ESTIMATES = [
    estimate("paper", 1617, 160, beyond=BEYOND, reach=11.85),
    estimate("refined", 190, 152, beyond=BEYOND, reach=11.85),
    estimate("least_squares", 161, 152, beyond=BEYOND, reach=11.85),
    estimate("symbolic", 161, 152, beyond=BEYOND, reach=11.85),
    estimate("hybrid_terms", 159, 150, beyond=BEYOND, reach=11.85),
    estimate("xgboost", 152, 17.3, raised=True, beyond=BEYOND, reach=11.85),
    estimate("hybrid_ratio", -1, -394_029, beyond=BEYOND, reach=11.85),
]


def run_row(config: UNetConfig, peak_gib: float | None, status: str = "ok", run_id: str = "r"):
    peak = None if peak_gib is None else int(peak_gib * GIB)
    return {
        **workloads.config_columns(config),
        "status": status,
        "peak_hwm_bytes": peak,
        "run_id": run_id,
    }


def test_bounds_read_to_three_figures() -> None:
    assert [approx_gib(v * GIB) for v in (0.9384, 7.814, 10.55, 161.03, 1617.4)] == [
        "0.938 GiB",
        "7.81 GiB",
        "10.6 GiB",
        "161 GiB",
        "1,617 GiB",
    ]
    assert approx_gib(math.inf) == "unbounded"


def test_absurd_models_are_named_with_why_and_left_out_of_the_spread() -> None:
    found = credible_models(DELL_ESTIMATES)

    assert [e.name for e in found.credible] == [
        "refined",
        "least_squares",
        "symbolic",
        "hybrid_terms",
    ]
    assert sizing_text.span(found) == "159–190 GiB"
    reasons = {out.estimate.name: out.reason for out in found.left_out}
    assert reasons["hybrid_ratio"] == "predicts -394,029 GiB here, which no run can take"
    assert reasons["xgboost"].startswith(
        "predicts 17.3 GiB, and its bound falls below the closed-form floor"
    )
    assert reasons["paper"] == "its bound, 1,617 GiB, is 10.0x the models' median bound (161 GiB)"


def test_with_two_models_neither_is_called_the_odd_one_out() -> None:
    found = credible_models([estimate("a", 10), estimate("b", 100)])
    assert len(found.credible) == 2 and sizing_text.span(found) == "10.0–100 GiB"


def test_the_runs_of_exactly_the_question_verify_it() -> None:
    runs = pd.DataFrame(
        [
            run_row(MEASURED, 10.4, run_id="a"),
            run_row(MEASURED, 10.6, run_id="b"),
            run_row(MEASURED, None, status="oom", run_id="c"),
            run_row(UNetConfig((144, 144, 144), 4), 14.2, run_id="d"),
            run_row(UNetConfig((128, 128, 128), 4, base_filters=8), 6.0, run_id="e"),
        ]
    )

    found = evidence_for(MEASURED, runs)

    assert found.measured_peak_bytes == int(10.6 * GIB)
    assert found.run_ids == ("a", "b")
    assert found.largest_measured_bytes == int(14.2 * GIB)
    assert not evidence_for(DELL, runs).measured


@pytest.mark.parametrize(
    ("measured_gib", "budget_gib", "headline", "fits"),
    [
        (10.6, 256, "Fits, verified by a run (measured 10.6 GiB)", True),
        (10.6, 12, "Does not fit, measured: a run peaked at 10.6 GiB", False),
        # 10.6 x 1.2 = 12.7 fits 13; the bound, 11.0 x 1.2 = 13.2, does not.
        (
            10.6,
            13,
            "Too close to call: a run measured 10.6 GiB, which fits, but the upper bound does not",
            False,
        ),
    ],
)
def test_a_measured_question_is_decided_by_the_run_and_the_bound(
    measured_gib: float, budget_gib: float, headline: str, fits: bool
) -> None:
    runs = pd.DataFrame([run_row(MEASURED, measured_gib)])
    decision = decide(
        [estimate("symbolic", 11.0), estimate("refined", 12.9), estimate("least_squares", 11.0)],
        "symbolic",
        MEASURED,
        evidence_for(MEASURED, runs),
        budget_gib * GIB,
        0.2,
    )
    assert decision.confidence is Confidence.VERIFIED
    assert (sizing_text.headline(decision), decision.fits) == (headline, fits)


def test_a_verified_headline_quotes_the_sampled_peak_where_the_sampler_missed_a_spike() -> None:
    # The mixed_bfloat16 run: 7.78 GiB high-water mark, 7.36 GiB sampled (5.4% under).
    row = run_row(MEASURED, 7.78) | {
        "peak_sampled_bytes": int(7.36 * GIB),
        "sample_interval_s": 0.1,
    }
    evidence = evidence_for(MEASURED, pd.DataFrame([row]))
    estimates = [estimate("symbolic", 7.9), estimate("refined", 8.0)]

    decision = decide(estimates, "symbolic", MEASURED, evidence, 16 * GIB, 0.2)

    assert sizing_text.headline(decision) == (
        "Fits, verified by a run: it measured 7.78 GiB "
        "(high-water mark; the 0.1 s sampler saw 7.36 GiB)"
    )


def test_a_prediction_says_how_far_it_lies_from_anything_measured() -> None:
    nothing = evidence_for(DELL, pd.DataFrame())
    decision = decide(DELL_ESTIMATES, "symbolic", DELL, nothing, 256 * GIB, 0.2)

    assert (
        sizing_text.headline(decision)
        == "Predicted to fit, 12x beyond the largest measured run: verify first"
    )
    assert sizing_text.spread(decision) == "159–190 GiB across 4 of 7 models"
    assert sizing_text.headline_tone(decision) == "warning"  # never a green "fits" out there

    smaller = decide(DELL_ESTIMATES, "symbolic", DELL, nothing, 128 * GIB, 0.2)
    assert (
        sizing_text.headline(smaller) == "Predicted not to fit, 12x beyond the largest measured run"
    )
    assert sizing_text.headline_tone(smaller) == "error"

    inside = [estimate("symbolic", 11.0), estimate("refined", 12.9)]
    within = decide(inside, "symbolic", MEASURED, nothing, 256 * GIB, 0.2)
    assert sizing_text.headline(within) == "Fits by prediction, inside the measured range"
    assert sizing_text.headline_tone(within) == "success"


def test_an_absurd_asked_model_gives_way_to_the_highest_credible_bound() -> None:
    nothing = evidence_for(DELL, pd.DataFrame())
    decision = decide(DELL_ESTIMATES, "hybrid_ratio", DELL, nothing, 256 * GIB, 0.2)

    assert decision.estimate is not None and decision.estimate.name == "refined"
    assert sizing_text.substituted(decision) == (
        "Model hybrid_ratio is left out here (predicts -394,029 GiB here, which no run can "
        "take), so the answer uses refined, the highest bound of the credible models."
    )


def test_no_credible_model_is_no_answer() -> None:
    decision = decide(
        [estimate("hybrid_ratio", -1, -5)],
        "hybrid_ratio",
        DELL,
        evidence_for(DELL, pd.DataFrame()),
        256 * GIB,
        0.2,
    )
    assert (decision.estimate, decision.fits) == (None, False)
    assert sizing_text.headline(decision) == "No answer: no model is credible here"
    assert sizing_text.decision_sentence(decision, "240x240x144", "for X") == (
        "No credible model among the 1 stored for 240x240x144 at batch 16, for X: measure it "
        "before sizing for it."
    )


def test_the_margin_column_is_the_bound_over_the_prediction_with_every_factor_in_it() -> None:
    # Issue 42: a model's own ratio x1.08, its bound widened for the machine to 1.17 times
    # the prediction; the column said "x1.08" beside the 1.17x bound.
    widened = dataclasses.replace(estimate("symbolic", 117.0, 100.0), bound_ratio=1.08)
    nothing = evidence_for(DELL, pd.DataFrame())
    decision = decide([widened], "symbolic", DELL, nothing, 256 * GIB, 0.2)

    shown = sizing_text.models_frame(decision).set_index("model")

    assert shown.loc["symbolic", "margin"] == "x1.17"
    assert "*margin*: the bound over the prediction" in sizing_text.MODELS_TABLE_NOTE


def test_the_every_model_table_says_why_a_model_is_left_out_and_gives_it_no_fits_verdict() -> None:
    # XGBoost as the issue found it: its own bound (18.4 GiB) below the closed form, replaced
    # by the closed form x its excess (200 GiB), which fits the 213 GiB usable; the paper
    # model's 1,617 GiB does not. Neither is in the answer, so neither gets a verdict.
    xgboost = dataclasses.replace(
        next(e for e in DELL_ESTIMATES if e.name == "xgboost"),
        upper_bytes=200 * GIB,
        own_upper_bytes=18.4 * GIB,
    )
    estimates = [
        dataclasses.replace(xgboost if e.name == "xgboost" else e, bound_ratio=1.06)
        for e in DELL_ESTIMATES
    ]
    nothing = evidence_for(DELL, pd.DataFrame())
    decision = decide(estimates, "symbolic", DELL, nothing, 256 * GIB, 0.2)

    shown = sizing_text.models_frame(decision).set_index("model")

    assert shown.columns.tolist() == [
        "predicted GiB",
        "bound GiB",
        "margin",
        "fits",
        "left out because",
    ]
    assert shown.loc["xgboost", ["fits", "left out because"]].tolist() == [
        "–",
        "below closed form",
    ]
    # The bound it is left out for: its own, below the closed form, not the replacement.
    assert shown.loc["xgboost", "bound GiB"] == pytest.approx(18.4)
    assert shown.loc["paper", ["fits", "left out because"]].tolist() == ["–", "bound 10.0x median"]
    assert shown.loc["hybrid_ratio", ["fits", "left out because"]].tolist() == [
        "–",
        "no positive peak",
    ]
    credible = ["refined", "least_squares", "symbolic", "hybrid_terms"]
    assert shown.loc[credible, "fits"].tolist() == ["yes"] * 4
    assert shown.loc[credible, "left out because"].tolist() == [""] * 4
    assert decision.credibility.reason("xgboost").startswith(
        "predicts 17.3 GiB, and its bound, 18.4 GiB, falls below the closed-form floor"
    )
