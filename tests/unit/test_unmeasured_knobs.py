"""A knob value the answering profile never measured widens its bound, by stored knob splits.

The evidence is `modeling.unmeasured`'s: each knob split's largest measured / predicted
peak of a model fitted without the value; the bound is multiplied by it after the
closed-form floor (`modeling.closed_form_floor.replace_below_floor`), never by less than 1.
"""

from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from application import widening
from core.workloads.unet3d import UNetConfig
from modeling import decision
from modeling.sizing import memory_to_buy
from modeling.unmeasured import HeldOut, KnobEvidence, held_out_results
from tests.unit.test_sizing import _model

BF16 = ("precision", "mixed_bfloat16")


def _held_out(value: object, ratio: float, profile: str = "intel", knob: str = "precision"):
    return HeldOut(profile, "exact", knob, value, ratio, 10)


def _with(evidence: KnobEvidence):
    model = _model()
    return dataclasses.replace(
        model, training_range=dataclasses.replace(model.training_range, knob_evidence=evidence)
    )


def test_a_value_measured_elsewhere_widens_by_its_own_largest_ratio() -> None:
    evidence = KnobEvidence((_held_out("mixed_bfloat16", 1.17), _held_out("mixed_float16", 1.4)))

    widening = evidence.widening(*BF16)

    assert widening.factor == pytest.approx(1.17)
    assert "widened x1.17" in widening.words and "intel mixed_bfloat16: 1.17 over 10 runs" in (
        widening.words
    )


def test_a_value_no_profile_left_out_widens_by_the_knobs_largest_ratio_and_says_so() -> None:
    evidence = KnobEvidence((_held_out("mixed_float16", 1.4), _held_out(8, 2.0, knob="levels")))

    widening = evidence.widening(*BF16)

    assert widening.factor == pytest.approx(1.4)
    assert widening.words.startswith("no profile's stored knob split left mixed_bfloat16 out")


def test_ratios_below_one_or_no_evidence_never_narrow_the_bound() -> None:
    assert KnobEvidence((_held_out("mixed_bfloat16", 0.8),)).widening(*BF16).factor == 1.0
    nothing = KnobEvidence().widening(*BF16)
    assert nothing.factor == 1.0 and "the bound is not widened" in nothing.words


def test_a_model_with_no_split_of_the_knob_widens_by_other_models_and_says_so() -> None:
    # A model kind fitted where precision never varied (a calibration, a float32-only profile)
    # still has the stored splits of precision behind its bound: never "not widened".
    other = dataclasses.replace(_held_out("mixed_bfloat16", 1.31, "259d139078"), model="forest")
    evidence = KnobEvidence((_held_out(8, 1.1, knob="levels"), other)).of_model("exact")

    found = evidence.widening(*BF16)

    assert found.factor == pytest.approx(1.31)
    assert found.words.startswith("this model has no stored knob split of precision")
    assert "259d139078 mixed_bfloat16: 1.31 over 10 runs" in found.words
    assert evidence.widening("levels", 6).factor == pytest.approx(1.1)  # its own, first


def test_a_calibrated_model_answers_with_its_priors_knob_splits() -> None:
    calibrated = dataclasses.replace(
        _model(), name="calibrated", params_json='{"prior": "exact", "scale": 1.05}'
    )
    evidence = KnobEvidence((_held_out("mixed_bfloat16", 1.17),))

    [answering] = widening.with_knob_evidence([calibrated], evidence)

    assert calibrated.knob_model == "exact" and _model().knob_model == _model().name
    assert answering.training_range.widenings(UNetConfig((64,) * 3, 2, precision=BF16[1]))[
        0
    ].factor == pytest.approx(1.17)


def test_the_bound_of_an_unmeasured_value_is_never_narrower_and_names_it() -> None:
    config = UNetConfig((64, 64, 64), 2, precision="mixed_bfloat16")
    plain = memory_to_buy(_model(), (64, 64, 64), 2, 0.0, {"precision": "mixed_bfloat16"})
    evidence = KnobEvidence((_held_out("mixed_bfloat16", 1.17),))
    widened = memory_to_buy(_with(evidence), (64, 64, 64), 2, 0.0, {"precision": "mixed_bfloat16"})
    unhelpful = memory_to_buy(
        _with(KnobEvidence((_held_out("mixed_bfloat16", 0.5),))),
        (64, 64, 64),
        2,
        0.0,
        {"precision": "mixed_bfloat16"},
    )

    assert widened.bound_bytes == pytest.approx(plain.bound_bytes * 1.17, rel=1e-6)
    assert unhelpful.bound_bytes >= plain.bound_bytes
    assert "mixed_bfloat16 was never measured on this profile" in widened.basis.warning
    assert "widened x1.17" in widened.basis.bound
    [estimate] = decision.estimates_for(_with(evidence), [config])
    assert estimate.upper_bytes == pytest.approx(widened.bound_bytes, rel=1e-6)
    assert "mixed_bfloat16 was never measured on this profile" in estimate.beyond


def test_a_measured_value_is_not_widened() -> None:
    evidence = KnobEvidence((_held_out("float32", 3.0),))

    assert _with(evidence).training_range.widening(UNetConfig((64, 64, 64), 2)) == 1.0


def test_knob_splits_are_read_from_stored_held_out_predictions() -> None:
    runs = pd.DataFrame(
        {
            "run_id": ["a", "b", "c", "d"],
            "precision": ["float32", "float32", "mixed_bfloat16", "mixed_bfloat16"],
            "levels": [5, 4, 5, 5],
        }
    )
    predictions = pd.DataFrame(
        {
            "model": ["exact"] * 5,
            "split": ["random", "knob", "knob", "knob", "random"],
            "seed": [0, 0, 1, 1, 0],
            "run_id": ["a", "b", "c", "d", "c"],
            "measured_bytes": [1.0, 1.0, 1.2, 1.1, 1.0],
            "predicted_bytes": [1.0, 1.1, 1.0, 1.0, 1.0],
        }
    )

    found = held_out_results("amd", predictions, runs, ("levels", "precision"))

    assert found == [
        HeldOut("amd", "exact", "levels", 4, pytest.approx(1 / 1.1), 1),
        HeldOut("amd", "exact", "precision", "mixed_bfloat16", pytest.approx(1.2), 2),
    ]


def test_only_a_question_with_an_unmeasured_value_needs_the_knob_evidence() -> None:
    # The CLI reads the stored knob splits (~2 s) only for such a question.
    measured = _model()

    assert not widening.asks_unmeasured([measured], "unet3d", {})
    assert not widening.asks_unmeasured([measured], "unet3d", {"precision": "float32"})
    assert widening.asks_unmeasured([measured], "unet3d", {"precision": "mixed_bfloat16"})
