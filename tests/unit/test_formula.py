"""Formulas as data: token programs predict as gplearn does; formula text is never evaluated."""

from __future__ import annotations

import numpy as np
import pytest
import sympy
from gplearn.genetic import SymbolicRegressor

from modeling.estimators.formula import (
    FormulaError,
    check_tokens,
    execute,
    parse_formula,
    program_tokens,
)
from presentation.formulas import formula_latex

# Formulas the bundled models store (data/reference_results, data/alexnet_results).
STORED_FORMULAS = [
    "1.137*batch_size*megavoxels + 0.9604",
    "refined_analytical * ((-0.003348*batch_size*side + (1.322 - 0.003348*batch_size)"
    "*(batch_size + 0.921))/(batch_size + 0.921))",
    "0.04192*megavoxels + 0.9315*paper_activation_gib + 0.9576",
    "3.982e-8*batch_size**2*side + 7.965e-8*batch_size*side**2 + 3.982e-8*side**3 + 1.065",
    "-1.571*paper_activation_gib + 1.571*refined_gib - 0.3166",
    "sqrt(side) + log(batch_size)",
]


@pytest.mark.parametrize("text", STORED_FORMULAS)
def test_stored_formulas_read_as_sympy_itself_reads_them(text: str) -> None:
    # sympy's own parser evaluates the text: only ever run here, on known strings.
    assert parse_formula(text) == sympy.parse_expr(text)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('touch /tmp/pwned')",
        "side.__class__",
        "(lambda: 1)()",
        "[side for side in ()]",
        "'text'",
        "open('x')",
        "exec('1')",
        "sympy.Symbol('x')",
        "side[0]",
        "side if batch_size else 1",
        "unknown_name * 2",
        "Symbol('x')",
        "batch_size == 1",
        "2j * side",
        "True + side",
        "9**9**9**9",
        "side ** 1000",
        "(10**90)**2 ** 2",
        "1 +" * 2000 + "1",
        "(" * 300 + "side" + ")" * 300,
        "add(side)",
        "add(side, side, side)",
        "mul(side, b=2)",
    ],
)
def test_anything_but_arithmetic_on_known_names_is_refused(text: str) -> None:
    with pytest.raises(FormulaError):
        parse_formula(text)


def test_a_refused_formula_is_shown_as_code_not_latex() -> None:
    assert formula_latex("__import__('os').system('x')") is None
    assert formula_latex("0.9604 GiB + 0.9956*per_batch_bytes") is None  # prose: units
    assert formula_latex("1.137*batch_size*megavoxels + 0.9604") == (
        r"1.137 \cdot \text{batch} \cdot \text{megavoxels} + 0.9604"
    )


def test_gplearn_program_text_reads_with_the_fit_inputs_as_names() -> None:
    expression = parse_formula("add(mul(x, b), div(x, 0.5))", ["x", "b"])

    assert str(expression) == "b*x + 2.0*x"
    with pytest.raises(FormulaError, match="'side' is not a known input"):
        parse_formula("add(side, 1.0)", ["x", "b"])


def test_token_programs_predict_exactly_as_gplearn_does() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-5, 5, size=(50, 3))
    y = X[:, 0] * X[:, 1] + np.sqrt(np.abs(X[:, 2])) + 3
    regressor = SymbolicRegressor(
        population_size=300,
        generations=3,
        function_set=("add", "sub", "mul", "div", "sqrt", "log", "neg", "inv"),
        random_state=0,
        n_jobs=1,
    ).fit(X, y)
    # Every program of the last generation: many shapes, protected functions included.
    programs = [program for program in regressor._programs[-1] if program is not None]

    for program in programs:
        tokens = program_tokens(program.program)
        np.testing.assert_array_equal(execute(tokens, X), program.execute(X))


def test_single_node_programs_are_a_column_or_a_constant() -> None:
    X = np.arange(6.0).reshape(3, 2)

    np.testing.assert_array_equal(execute([["x", 1]], X), X[:, 1])
    np.testing.assert_array_equal(execute([["c", 0.5]], X), np.full(3, 0.5))


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        ([], "a program is a list"),
        ("add", "a program is a list"),
        ([["f", "__import__"], ["c", 1.0]], "function '__import__' is not one of"),
        ([["f", "sin"], ["c", 1.0]], "function 'sin' is not one of"),
        ([["x", 5]], "input column 5 is not one the model reads"),
        ([["x", -1]], "input column -1"),
        ([["x", True]], "input column True"),
        ([["c", "1"]], "constant '1' is not a finite number"),
        ([["c", float("nan")]], "constant nan"),
        ([["f", "add"], ["c", 1.0]], "ends before every function has its arguments"),
        ([["c", 1.0], ["c", 2.0]], "tokens after its end"),
        ([["y", 1]], "is not a token"),
        ([{"f": "add"}], "is not a token"),
    ],
)
def test_malformed_token_programs_are_refused(tokens, message: str) -> None:
    with pytest.raises(FormulaError, match=message):
        check_tokens(tokens, n_features=3)
