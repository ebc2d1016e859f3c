"""Stored formulas as the Models page shows them: LaTeX broken into lines, inputs in words.

A symbolic-regression or hybrid model stores its formula as text over the
feature frame's column names (``1.807*activation_gib + 0.7239``,
`modeling.features`); the least-squares models store prose with units. The
page never shows those names: `formula_latex` and `formula_text` name each
input by its display name (`INPUT_NAMES`: ``activations``, ``batch``, a knob's
own words), and `inputs_caption` says what each input of the shown formulas
is. `formula_lines` and `formula_display` fit a long formula into the page's
column. Nothing here needs Streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sympy

from core import workloads
from modeling.estimators.formula import FormulaError, parse_formula
from presentation import workload_labels

# Each input a stored formula may name (`modeling.estimators.formula.KNOWN_NAMES`, and the
# least-squares models' prose) -> its display name and, for the caption, what it is.
# Units: the architecture and analytical terms are GiB, the least-squares ones bytes.
INPUTS: dict[str, tuple[str, str]] = {
    "side": ("side", "{elements}, {root} of {product}"),
    "megavoxels": ("megavoxels", "{product} / 10^6"),
    "batch_size": ("batch", "the batch size"),
    "activation_gib": ("activations", "what the backward pass keeps of a batch, GiB"),
    "state_gib": ("state", "weights, their gradients and the optimizer's slots, GiB"),
    "workspace_gib": ("workspace", "the convolution gradients' buffers, GiB"),
    "refined_gib": ("refined", "the refined analytical estimate, GiB"),
    "refined_analytical": ("refined", "the refined analytical estimate, GiB"),
    "paper_activation_gib": ("paper activations", "the paper's Eq. 1 activations, GiB"),
    # each text knob's numeric code, in the words its declaration gives (`KnobCode`)
    **{
        knob.code.column: (knob.code.words, knob.code.meaning)
        for knob in workloads.KNOBS.values()
        if knob.code
    },
    "per_batch_bytes": ("batch terms", "activations, backward pass and input batch, bytes"),
    "model_state_bytes": ("model state", "weights, gradients and optimizer, bytes"),
    "workspace_bytes": ("workspace", "the convolution gradients' buffers, bytes"),
}


def _knob_names() -> dict[str, str]:
    """Each workload's knob by its own words (``base filters``), as its declaration says."""
    return {
        knob.name: knob.words for module in workloads.WORKLOADS.values() for knob in module.KNOBS
    }


def input_names() -> dict[str, str]:
    """Every input's display name: `INPUTS`' and the knobs' words, in that order."""
    return {**{name: shown for name, (shown, _) in INPUTS.items()}, **_knob_names()}


def _used(formula: str) -> list[str]:
    """The inputs ``formula`` names, in `input_names`' order."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula))
    return [name for name in input_names() if name in words]


def formula_latex(formula: str | None) -> str | None:
    """A stored formula (sympy syntax, e.g. ``1.137*batch_size*megavoxels + 0.9604``) as LaTeX.

    Inputs are set as text by their display names (``\\text{batch}``). None when
    the text is not a formula of numbers, the known inputs, arithmetic and
    gplearn's functions (some models store prose, e.g. units). The text is read by
    `modeling.estimators.formula.parse_formula`, a whitelist: it is never evaluated.
    """
    if not formula:
        return None
    try:
        expression = parse_formula(formula)
    except FormulaError:
        return None
    shown = input_names()
    names = {
        symbol: r"\text{" + shown.get(symbol.name, symbol.name) + "}"
        for symbol in expression.free_symbols
        if isinstance(symbol, sympy.Symbol)
    }
    return sympy.latex(expression, symbol_names=names, mul_symbol="dot")


def formula_text(formula: str) -> str:
    """``formula`` as text, each input by its display name (for one LaTeX cannot show).

    A name of several words is put in parentheses, so ``x/(paper activations)`` reads
    as one quotient.
    """
    shown = {name: f"({words})" if " " in words else words for name, words in input_names().items()}
    return re.sub(
        r"[A-Za-z_][A-Za-z0-9_]*", lambda found: shown.get(found.group(0), found.group(0)), formula
    )


# LaTeX source characters before a line of a displayed formula may break. KaTeX sets
# about 5.5 px of page per source character of these formulas (\mathrm{} and \cdot
# draw narrower than they spell), and a line runs on to the next sign (one more term),
# so lines stay inside the main column at 1024 px (~560 px); on one line the SR formula
# ran ~600 px past it, and at 45 a hybrid's line still ran 44 px past the window (issue 26).
FORMULA_LINE_CHARS = 30
# Sizing parentheses are groups KaTeX cannot break a line inside; plain ones are not.
_SIZED_PARENTHESES = {r"\left(": "(", r"\right)": ")"}


def formula_lines(latex: str, line_chars: int = FORMULA_LINE_CHARS) -> str:
    r"""``latex`` broken into lines of about ``line_chars`` source characters, each new line
    starting at a + or - sign outside braces, as a KaTeX ``aligned`` block; unchanged when
    it fits one line. Its ``\left( ... \right)`` become plain parentheses, so a long sum
    inside them (a hybrid model's) breaks too: KaTeX refuses a line break inside a sized
    pair, and plain ones only lose their growing with the contents."""
    if len(latex) <= line_chars:
        return latex
    for sized, plain_parenthesis in _SIZED_PARENTHESES.items():
        latex = latex.replace(sized, plain_parenthesis)
    lines, current, depth = [], "", 0
    for char in latex:
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        elif char in "+-" and depth == 0 and len(current) >= line_chars:
            lines.append(current)
            current = ""
        current += char
    lines.append(current)
    if len(lines) == 1:
        return latex
    return r"\begin{aligned}" + r" \\ ".join("&" + line for line in lines) + r"\end{aligned}"


# A line longer than this (a fraction, a product: no sign to break at) would run past
# the main column at 1024 px; such a formula is shown as wrapped text instead.
FORMULA_MAX_LINE_CHARS = 80


def formula_display(latex: str | None) -> str | None:
    """`formula_lines` of ``latex`` when every line fits `FORMULA_MAX_LINE_CHARS`; None when
    a line cannot be broken short enough (show the formula as wrapped text then)."""
    if not latex:
        return None
    shown = formula_lines(latex)
    body = shown.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}")
    longest = max(len(line) for line in body.split(r"\\"))
    return shown if longest <= FORMULA_MAX_LINE_CHARS else None


def inputs_caption(formulas: Iterable[str], workload: str) -> str:
    """``side (voxels, cube root of D x H x W), batch (the batch size), ...``: every input of
    ``formulas``, by its display name, and what it is for ``workload``'s images."""
    dims = workload_labels.dims(workload)
    words = {
        "elements": workload_labels.ELEMENTS[dims],
        "root": workload_labels.ROOTS[dims],
        "product": workload_labels.PRODUCTS[dims],
    }
    knobs = _knob_names()
    said: dict[str, str] = {}
    for name in _used(" ".join(formulas)):
        shown, what = INPUTS.get(name, (knobs.get(name, name), "a network knob"))
        said.setdefault(shown, f"{shown} ({what.format(**words)})")
    return ", ".join(said.values())
