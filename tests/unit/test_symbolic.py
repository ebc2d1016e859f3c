"""gplearn symbolic regression: recovers a known law, reads as a formula, errors clearly."""

import pickle

import numpy as np
import pandas as pd
import pytest
import sympy
from sklearn.exceptions import NotFittedError

from modeling.estimators.symbolic import SymbolicRegression, linear_scaling, readable_formula

# Small on purpose: the tests must stay fast on a shared 2-core machine.
SMALL = {"population_size": 200, "generations": 5, "target_unit": 1.0, "random_state": 0}


def _known_law(rows: int = 40, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    inputs = pd.DataFrame({"x": rng.uniform(1, 10, rows), "b": rng.integers(1, 17, rows)})
    return inputs, 3 * inputs["x"].to_numpy() * inputs["b"].to_numpy() + 5


def test_symbolic_regression_recovers_y_equals_3xb_plus_5() -> None:
    inputs, target = _known_law()

    model = SymbolicRegression(**SMALL).fit(inputs, target)

    assert model.formula_ == "3.0*b*x + 5.0"
    assert model.formula_length_ == 6
    fresh, expected = _known_law(rows=10, seed=1)
    np.testing.assert_allclose(model.predict(fresh), expected, rtol=1e-9)


def test_fit_records_the_program_its_length_and_the_fit_time() -> None:
    inputs, target = _known_law()

    model = SymbolicRegression(**SMALL).fit(inputs, target)

    assert model.program_ == "mul(x, b)"
    assert model.program_length_ == 3
    assert model.fit_seconds_ > 0
    assert list(model.feature_names_in_) == ["x", "b"]


def test_the_same_seed_gives_the_same_formula() -> None:
    inputs, target = _known_law()
    noisy = target * (1 + 0.05 * np.random.default_rng(3).standard_normal(len(target)))

    first = SymbolicRegression(**SMALL).fit(inputs, noisy)
    second = SymbolicRegression(**SMALL).fit(inputs, noisy)

    assert first.formula_ == second.formula_


def test_target_unit_only_changes_the_units_of_the_formula() -> None:
    inputs, target = _known_law()

    model = SymbolicRegression(**(SMALL | {"target_unit": 2.0**30})).fit(inputs, target * 2**30)

    assert model.formula_ == "3.0*b*x + 5.0"
    np.testing.assert_allclose(model.predict(inputs), target * 2**30, rtol=1e-9)


def test_a_fitted_model_survives_pickling() -> None:
    inputs, target = _known_law()
    model = SymbolicRegression(**SMALL).fit(inputs, target)

    restored = pickle.loads(pickle.dumps(model))

    np.testing.assert_array_equal(restored.predict(inputs), model.predict(inputs))


def test_linear_scaling_finds_the_exact_intercept_and_slope() -> None:
    g = np.array([1.0, 2.0, 5.0, 7.0])

    assert linear_scaling(4 + 2.5 * g, g) == pytest.approx((4.0, 2.5))


def test_linear_scaling_of_a_constant_program_is_the_weighted_mean() -> None:
    intercept, slope = linear_scaling(np.array([2.0, 2.0]), np.array([7.0, 7.0]))

    assert (intercept, slope) == (pytest.approx(2.0), 0.0)


def test_readable_formula_simplifies_gplearns_prefix_notation() -> None:
    expression = readable_formula("add(mul(x, x), sub(x, x))", ["x"], intercept=1.0, slope=2.0)

    assert str(expression) == "2.0*x**2 + 1.0"


def test_predict_before_fit_is_refused() -> None:
    with pytest.raises(NotFittedError):
        SymbolicRegression().predict(pd.DataFrame({"x": [1.0]}))


@pytest.mark.parametrize(
    ("inputs", "target", "message"),
    [
        (np.ones((10, 2)), np.ones(10), "X must be a DataFrame of named inputs, got ndarray"),
        (pd.DataFrame({"x": [1.0] * 4}), [1.0] * 4, "need at least 5 samples to fit a formula"),
        (pd.DataFrame({"x": [1.0] * 6}), [1.0] * 5, "X has 6 rows but y has 5 values"),
        (pd.DataFrame({"x": [1.0] * 6}), [1.0] * 5 + [0.0], "y must be finite and positive"),
        (pd.DataFrame({"x": [1.0] * 5 + [np.nan]}), [1.0] * 6, "X has missing or infinite values"),
    ],
)
def test_bad_training_data_is_refused_with_the_reason(inputs, target, message) -> None:
    with pytest.raises((ValueError, TypeError), match=message.replace("(", "\\(")):
        SymbolicRegression(**SMALL).fit(inputs, target)


def test_an_unknown_function_is_refused_with_the_allowed_ones() -> None:
    inputs, target = _known_law()

    with pytest.raises(ValueError, match="unsupported entries \\['tan'\\]; allowed: add, sub"):
        SymbolicRegression(**(SMALL | {"function_set": ("add", "tan")})).fit(inputs, target)


def test_predict_names_a_missing_input_column() -> None:
    inputs, target = _known_law()
    model = SymbolicRegression(**SMALL).fit(inputs, target)

    with pytest.raises(ValueError, match="X lacks column\\(s\\) b"):
        model.predict(inputs[["x"]])


def test_a_long_program_is_shown_as_evolved_rather_than_simplified(monkeypatch) -> None:
    # simplify can run for many minutes on a long rational program: it is never asked to.
    def refuse(expression):
        raise AssertionError("simplify called on a long program")

    monkeypatch.setattr(sympy, "simplify", refuse)
    program = "x"
    for _ in range(30):
        program = f"add(div({program}, y), div(y, x))"

    expression = readable_formula(program, ["x", "y"], intercept=0.5, slope=2.0)

    x, y = sympy.symbols("x y", positive=True)
    value = float(expression.subs({x: 3.0, y: 2.0}))
    expected = 3.0
    for _ in range(30):
        expected = expected / 2.0 + 2.0 / 3.0
    assert value == pytest.approx(0.5 + 2.0 * expected, rel=1e-3)
