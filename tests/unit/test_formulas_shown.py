"""Stored formulas as the Models page shows them: LaTeX in lines, inputs by display name."""

import re

import pytest

from modeling.estimators.formula import KNOWN_NAMES
from presentation import formulas

# Formulas the bundled evaluations store (data/*_results), the least-squares ones prose.
STORED = [
    "1.137*batch_size*megavoxels + 0.9604",
    "1.807*activation_gib + 0.1807*batch_size*workspace_gib/(batch_size*(state_gib + "
    "workspace_gib) + state_gib + workspace_gib) + 1.446*state_gib + 0.7239",
    "refined_analytical * ((1.701*base_filters*workspace_gib + 1.701*side - 23.78*state_gib"
    " + 47.57*workspace_gib - 11.12)/(base_filters*workspace_gib + side + 0.119))",
    "0.5174*activation_gib + 0.5174*activation_gib*workspace_gib/paper_activation_gib"
    " + 1.157*refined_gib",
    "0.8214 GiB + 1.617*per_batch_bytes + 1.441*model_state_bytes + 0.6637*workspace_bytes",
    "2*element_bytes*transpose + levels + classes + in_channels",
]
# What a model's formula may name: the feature frame's columns and the least-squares terms.
INTERNAL = sorted(KNOWN_NAMES | {"per_batch_bytes", "model_state_bytes", "workspace_bytes"})


def test_a_stored_formula_becomes_latex_with_its_inputs_named_and_prose_does_not() -> None:
    latex = formulas.formula_latex("1.137*batch_size*megavoxels + 0.9604")
    assert latex is not None
    assert r"\text{batch}" in latex and "1.137" in latex and "0.9604" in latex
    assert formulas.formula_latex("0.9604 GiB + 0.9956*per_batch_bytes") is None
    assert formulas.formula_latex(None) is None


def test_a_long_formula_is_broken_into_lines_at_top_level_signs_only() -> None:
    # Issue 26: on one line the SR formula ran ~600 px past the page at 1024 px.
    latex = formulas.formula_latex(
        "0.9837*activation_gib + 0.4919*megavoxels*state_gib + 0.9323*batch_size"
        " + 0.4661*side + 0.9577*megavoxels + 0.9578"
    )
    broken = formulas.formula_lines(latex)
    assert broken.startswith(r"\begin{aligned}&") and broken.endswith(r"\end{aligned}")
    lines = broken.removeprefix(r"\begin{aligned}").removesuffix(r"\end{aligned}").split(r"\\")
    assert len(lines) > 1 and all(line.strip().startswith("&") for line in lines)
    assert all(line.strip().startswith("&+") for line in lines[1:])
    # Nothing lost: the lines joined are the formula.
    assert "".join(line.strip().removeprefix("&") for line in lines).replace(" ", "") == (
        latex.replace(" ", "")
    )
    # Short formulas stay as they are; a long sum in sized parentheses breaks inside them
    # (KaTeX refuses a break inside \left( ... \right), so they become plain ones).
    assert formulas.formula_lines("a + b") == "a + b"
    inside = formulas.formula_lines(r"\left(" + " + ".join(["x"] * 40) + r"\right)")
    assert r"\left" not in inside and r"\right" not in inside and inside.count(r"\\") >= 1
    # Signs inside braces (an exponent, a fraction) never start a line.
    assert formulas.formula_lines("e^{" + " - ".join(["y"] * 40) + "}") == (
        "e^{" + " - ".join(["y"] * 40) + "}"
    )


def test_a_formula_that_cannot_break_short_enough_is_shown_as_text() -> None:
    # A hybrid's ratio is one fraction: no sign outside braces to break at, and at 1024 px
    # it ran 44 px past the window (issue 26). The page shows it as wrapped text instead.
    ratio = formulas.formula_latex(
        "refined_analytical * ((0.9808*activation_gib + 1.286)/(activation_gib + 1))"
    )
    assert formulas.formula_display(ratio) is None
    assert formulas.formula_display(None) is None
    short = formulas.formula_latex("1.137*batch_size*megavoxels + 0.9604")
    assert formulas.formula_display(short) == formulas.formula_lines(short)


@pytest.mark.parametrize("formula", STORED)
def test_no_internal_column_name_reaches_a_shown_formula_or_its_caption(formula: str) -> None:
    # Issue 26: "activation_gib" beside "hybrid: SR given analytical terms" on the Models page.
    shown = [
        formulas.formula_latex(formula) or "",
        formulas.formula_text(formula),
        formulas.inputs_caption([formula], "unet3d"),
    ]
    for name in INTERNAL:
        if "_" in name:  # one-word names (side, megavoxels, levels) are their own display name
            assert not any(name in text for text in shown), (name, shown)
            escaped = name.replace("_", r"\_")
            assert not any(escaped in text for text in shown), (name, shown)


def test_a_formula_shown_as_text_keeps_a_name_of_several_words_together() -> None:
    assert formulas.formula_text("0.5*activation_gib/paper_activation_gib + 0.2*batch_size") == (
        "0.5*activations/(paper activations) + 0.2*batch"
    )
    assert (
        formulas.formula_text("0.96 GiB + 0.99*per_batch_bytes") == "0.96 GiB + 0.99*(batch terms)"
    )


def test_the_inputs_caption_says_what_each_input_of_the_formulas_is_for_the_workload() -> None:
    caption = formulas.inputs_caption(["1.1*side + 0.2*batch_size*activation_gib"], "alexnet")
    assert caption == (
        "side (pixels, square root of H x W), batch (the batch size), "
        "activations (what the backward pass keeps of a batch, GiB)"
    )
    unet = formulas.inputs_caption(["megavoxels*base_filters", "refined_gib"], "unet3d")
    assert unet == (
        "megavoxels (D x H x W / 10^6), refined (the refined analytical estimate, GiB), "
        "base filters (a network knob)"
    )


def test_every_name_a_stored_formula_may_use_has_a_display_name() -> None:
    names = formulas.input_names()
    assert set(INTERNAL) <= set(names)
    assert all(re.fullmatch(r"[a-z0-9 ]+", shown) for shown in names.values())
