"""Formulas as data: gplearn programs as token lists, and formula text read without evaluating it.

Nothing here runs stored text as code:

* A fitted gplearn program is kept as a list of tokens, ``["f", "add"]`` (a
  function of `FUNCTIONS`), ``["x", 2]`` (input column 2) or ``["c", 0.125]``
  (a constant), in gplearn's prefix order. `program_tokens` makes the list from
  a fitted program, `check_tokens` validates one read back from a database,
  and `execute` evaluates it exactly as gplearn does (its own protected
  functions, the same order of operations), so a stored model predicts to the
  bit what the fitted one did.
* `parse_formula` reads formula text (``1.137*batch_size*megavoxels + 0.9604``,
  or gplearn's ``add(mul(x, b), 0.5)``) into a sympy expression through a
  whitelist of Python syntax: numbers, known names, ``+ - * / **``, unary
  minus and the functions of `FUNCTIONS`. Anything else (attributes,
  subscripts, strings, lambdas, other calls) is refused with `FormulaError`;
  sympy never sees the text.
"""

from __future__ import annotations

import ast
import math
import types
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gplearn.functions import _function_map

from modeling.features import ARCHITECTURE_INPUTS, KNOB_CODES, KNOB_COLUMNS, SHAPE_INPUTS

if TYPE_CHECKING:
    import sympy

# The hybrid models' extra inputs and the name its ratio formula multiplies.
REFINED_INPUT = "refined_gib"
PAPER_ACTIVATION_INPUT = "paper_activation_gib"
REFINED_ANALYTICAL = "refined_analytical"
# Every name a stored formula of this package may use.
KNOWN_NAMES: frozenset[str] = frozenset(
    (
        *SHAPE_INPUTS,
        *ARCHITECTURE_INPUTS,
        *KNOB_COLUMNS,
        *KNOB_CODES.values(),
        REFINED_INPUT,
        PAPER_ACTIVATION_INPUT,
        REFINED_ANALYTICAL,
    )
)


def _sympy() -> types.ModuleType:
    """SymPy, imported when formula text is first read: a stored model predicts from its
    tokens, which need none of it (importing it took ~0.6 s CPU on the 2-core VM)."""
    import sympy

    return sympy


# gplearn's function set, shown to sympy as the plain operations. The protected
# versions (division by |x| < 0.001 gives 1, sqrt and log of |x|) are shown as
# the plain ones: on the inputs this package feeds in, the guards never trigger.
FUNCTIONS: dict[str, Callable[..., sympy.Expr]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "sqrt": lambda a: _sympy().sqrt(a),
    "log": lambda a: _sympy().log(a),
    "neg": lambda a: -a,
    "inv": lambda a: 1 / a,
}
# Limits that keep a hostile formula from costing much: stored ones are far smaller.
MAX_FORMULA_CHARS = 4000
MAX_FORMULA_NODES = 600
MAX_PROGRAM_TOKENS = 4000
MAX_EXPONENT = 64
MAX_POWER_BASE = 1e100

Token = list[Any]  # ["f", name] | ["x", column] | ["c", value]


class FormulaError(ValueError):
    """Formula text or a token program that is not one this package reads."""


# --- token programs -----------------------------------------------------------------------


def program_tokens(program: Sequence[Any]) -> list[Token]:
    """A fitted gplearn program (``SymbolicRegressor._program.program``) as tokens."""
    tokens: list[Token] = []
    for node in program:
        if isinstance(node, int | np.integer):
            tokens.append(["x", int(node)])
        elif isinstance(node, float | np.floating):
            tokens.append(["c", float(node)])
        else:
            tokens.append(["f", str(node.name)])
    return check_tokens(tokens, n_features=None)


def check_tokens(tokens: Any, n_features: int | None) -> list[Token]:
    """``tokens`` if it is a complete program of known functions, columns and constants."""
    if not isinstance(tokens, list) or not 0 < len(tokens) <= MAX_PROGRAM_TOKENS:
        raise FormulaError(f"a program is a list of 1 to {MAX_PROGRAM_TOKENS} tokens")
    needed = 1
    for token in tokens:
        if needed == 0:
            raise FormulaError("the program has tokens after its end")
        if not (isinstance(token, list) and len(token) == 2 and token[0] in ("f", "x", "c")):
            raise FormulaError(f"{token!r} is not a token ['f', name], ['x', column], ['c', value]")
        tag, value = token
        if tag == "f":
            if value not in FUNCTIONS:
                raise FormulaError(f"function {value!r} is not one of {', '.join(FUNCTIONS)}")
            needed += _function_map[value].arity - 1
            continue
        if tag == "x" and not (
            type(value) is int and value >= 0 and (n_features is None or value < n_features)
        ):
            raise FormulaError(f"input column {value!r} is not one the model reads")
        if tag == "c" and not (type(value) is float and math.isfinite(value)):
            raise FormulaError(f"constant {value!r} is not a finite number")
        needed -= 1
    if needed:
        raise FormulaError("the program ends before every function has its arguments")
    return tokens


def _terminal(token: Token | np.ndarray, X: np.ndarray) -> np.ndarray:
    if isinstance(token, np.ndarray):
        return token
    tag, value = token
    return np.repeat(value, X.shape[0]) if tag == "c" else X[:, value]


def execute(tokens: Sequence[Token], X: np.ndarray) -> np.ndarray:
    """The program's value for each row of ``X``: gplearn's ``_Program.execute`` on tokens."""
    if tokens[0][0] != "f":
        return _terminal(tokens[0], X)
    stack: list[list[Any]] = []
    for token in tokens:
        if token[0] == "f":
            stack.append([_function_map[token[1]]])
        else:
            stack[-1].append(token)
        while len(stack[-1]) == stack[-1][0].arity + 1:
            function, *arguments = stack.pop()
            result = function(*(_terminal(argument, X) for argument in arguments))
            if not stack:
                return result
            stack[-1].append(result)
    raise FormulaError("the program ends before every function has its arguments")


# --- formula text -------------------------------------------------------------------------


_OPERATORS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def _checked_tree(text: str) -> ast.expr:
    if not isinstance(text, str) or len(text) > MAX_FORMULA_CHARS:
        raise FormulaError(f"a formula is text of at most {MAX_FORMULA_CHARS} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        raise FormulaError(f"not a formula: {error}") from None
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_FORMULA_NODES:
        raise FormulaError(f"a formula has at most {MAX_FORMULA_NODES} parts")
    return tree.body


def _power(base: sympy.Expr, exponent: sympy.Expr) -> sympy.Expr:
    if exponent.is_Number and abs(exponent) > MAX_EXPONENT:
        raise FormulaError(f"exponents are at most {MAX_EXPONENT} in size")
    if base.is_Number and abs(base) > MAX_POWER_BASE:
        raise FormulaError("a number raised to a power is at most 1e100")
    return base**exponent


def _number(value: Any) -> sympy.Expr:
    sympy = _sympy()
    if type(value) is int:
        return sympy.Integer(value)
    if type(value) is float and math.isfinite(value):
        # From its text, as sympy's own parser reads a literal.
        return sympy.Float(repr(value))
    raise FormulaError(f"{value!r} is not a number a formula may hold")


def _convert(node: ast.expr, names: dict[str, sympy.Symbol]) -> sympy.Expr:
    if isinstance(node, ast.Constant):
        return _number(node.value)
    if isinstance(node, ast.Name):
        if node.id not in names:
            raise FormulaError(f"{node.id!r} is not a known input or function")
        return names[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        operand = _convert(node.operand, names)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp):
        left, right = _convert(node.left, names), _convert(node.right, names)
        if isinstance(node.op, ast.Pow):
            return _power(left, right)
        if type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](left, right)
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in FUNCTIONS
        and not node.keywords
        and len(node.args) == _function_map[node.func.id].arity
    ):
        return FUNCTIONS[node.func.id](*(_convert(argument, names) for argument in node.args))
    raise FormulaError(f"{ast.unparse(node)!r} is not a part a formula may have")


def parse_formula(
    text: str,
    names: Collection[str] = KNOWN_NAMES,
    symbol: Callable[[str], sympy.Symbol] | None = None,
) -> sympy.Expr:
    """``text`` as a sympy expression, built from a whitelist of syntax (see module docstring).

    names : the variables it may use; each becomes ``symbol(name)`` (default: a plain
    ``sympy.Symbol``). Raises `FormulaError` for anything else.
    """
    tree = _checked_tree(text)
    symbol = symbol or _sympy().Symbol
    symbols = {name: symbol(name) for name in names if name not in FUNCTIONS}
    try:
        return _convert(tree, symbols)
    except RecursionError:
        raise FormulaError("the formula is nested too deeply") from None
