"""The paper's ML baselines and least squares on the analytical terms."""

import numpy as np
import pytest

from core.analytical import REFINED_TERM_COLUMNS
from modeling.estimators.baselines import (
    ML_KINDS,
    MODEL_STATE_TERMS,
    PER_BATCH_TERMS,
    AnalyticalLeastSquares,
    least_squares_inputs,
    make_regressor,
)
from modeling.features import SHAPE_INPUTS, measured_frame


def test_least_squares_groups_cover_every_refined_term_once() -> None:
    assert sorted(PER_BATCH_TERMS + MODEL_STATE_TERMS) == sorted(REFINED_TERM_COLUMNS)


def test_least_squares_recovers_a_law_that_is_linear_in_the_terms(make_runs) -> None:
    frame = measured_frame(make_runs())
    per_batch = least_squares_inputs(frame)["per_batch_bytes"]
    target = 0.9e9 + 1.1 * per_batch

    model = AnalyticalLeastSquares().fit(frame, target)

    assert model.intercept_bytes_ == pytest.approx(0.9e9, rel=1e-6)
    assert model.coefficients_["per_batch_bytes"] == pytest.approx(1.1, rel=1e-6)
    np.testing.assert_allclose(model.predict(frame), target, rtol=1e-9)


def test_a_constant_term_gets_no_coefficient_and_the_intercept_absorbs_it(make_runs) -> None:
    # One network only: model state never changes, so it cannot be told from the intercept.
    frame = measured_frame(make_runs())

    model = AnalyticalLeastSquares().fit(frame, frame["peak_bytes"])

    assert model.coefficients_["model_state_bytes"] == 0.0
    assert model.formula_.startswith(f"{model.intercept_bytes_ / 2**30:.4g} GiB + ")


def test_least_squares_with_the_workspace_term_recovers_it(make_runs) -> None:
    frame = measured_frame(make_runs(batches=(1, 2, 4)))
    terms = least_squares_inputs(frame)
    target = 0.8e9 + 2.0 * terms["per_batch_bytes"] + 1.1 * terms["workspace_bytes"]

    model = AnalyticalLeastSquares(workspace=True).fit(frame, target)

    assert model.coefficients_["workspace_bytes"] == pytest.approx(1.1, rel=1e-6)
    assert "1.1*workspace_bytes" in model.formula_
    np.testing.assert_allclose(model.predict(frame), target, rtol=1e-9)
    restored = AnalyticalLeastSquares.from_state(model.to_state())
    np.testing.assert_allclose(restored.predict(frame), target, rtol=1e-9)


def test_least_squares_with_the_batch_of_one_term_recovers_it(make_runs) -> None:
    # PyTorch's runs at batch 1 lie ~0.1 GiB above the line of its other batches.
    frame = measured_frame(make_runs(batches=(1, 2, 4, 8)))
    terms = least_squares_inputs(frame)
    extra_bytes = 0.1 * 2**30
    target = 0.5e9 + 0.87 * terms["per_batch_bytes"] + extra_bytes * terms["batch_of_one"]

    model = AnalyticalLeastSquares(batch_of_one=True).fit(frame, target)

    assert model.coefficients_["batch_of_one"] == pytest.approx(extra_bytes, rel=1e-6)
    assert "0.1 GiB*batch_of_one" in model.formula_
    np.testing.assert_allclose(model.predict(frame), target, rtol=1e-9)
    restored = AnalyticalLeastSquares.from_state(model.to_state())
    np.testing.assert_allclose(restored.predict(frame), target, rtol=1e-9)
    # Without the term the line cannot follow the single samples.
    plain = AnalyticalLeastSquares().fit(frame, target)
    assert np.abs(plain.predict(frame) / target - 1).max() > 0.01


def test_a_least_squares_model_stored_before_the_workspace_term_still_predicts(make_runs) -> None:
    frame = measured_frame(make_runs())
    state = AnalyticalLeastSquares().fit(frame, frame["peak_bytes"]).to_state()
    del state["workspace"], state["batch_of_one"]  # as models stored before the terms existed

    restored = AnalyticalLeastSquares.from_state(state)

    assert restored.workspace is False
    assert restored.batch_of_one is False
    assert restored.predict(frame).shape == (len(frame),)


@pytest.mark.parametrize("kind", ML_KINDS)
def test_every_ml_baseline_fits_and_predicts_positive_bytes(make_runs, kind: str) -> None:
    frame = measured_frame(make_runs(batches=(1, 2, 4)))
    inputs = frame[list(SHAPE_INPUTS)]

    model = make_regressor(kind, random_state=0).fit(inputs, frame["peak_bytes"])

    predicted = model.predict(inputs)
    assert predicted.shape == (len(frame),)
    assert np.all(np.isfinite(predicted))


def test_the_same_seed_gives_the_same_ml_predictions(make_runs) -> None:
    frame = measured_frame(make_runs(batches=(1, 2)))
    inputs = frame[list(SHAPE_INPUTS)]

    first = make_regressor("random_forest", random_state=3).fit(inputs, frame["peak_bytes"])
    second = make_regressor("random_forest", random_state=3).fit(inputs, frame["peak_bytes"])

    np.testing.assert_array_equal(first.predict(inputs), second.predict(inputs))


def test_an_unknown_baseline_kind_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="kind 'svm' is not one of xgboost, random_forest"):
        make_regressor("svm")
