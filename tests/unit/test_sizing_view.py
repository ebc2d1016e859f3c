"""The Sizing page's input checks and its headroom sentence, without Streamlit."""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from application.sizing import usable_budget_bytes
from core.units import GIB
from core.workloads.base import MAX_BATCH_SIZE
from modeling.sizing import Basis, BatchAnswer
from presentation import sizing_text, sizing_view
from presentation.sizing_view import SizingChoices, SizingState

RUNS = pd.DataFrame({"base_filters": [16], "precision": ["float32"]})


@pytest.fixture
def choices() -> SizingChoices:
    return sizing_view.choices_for("unet3d", ["symbolic"], RUNS)


@pytest.fixture
def state(choices: SizingChoices) -> SizingState:
    return sizing_view.default_state(choices, pd.DataFrame())


def test_a_valid_question_has_no_input_problems(state: SizingState, choices: SizingChoices) -> None:
    assert sizing_view.input_problems(state, choices) == {}
    edges = replace(state, budget_gib=choices.min_budget_gib, headroom_pct=0.0)
    assert sizing_view.input_problems(edges, choices) == {}


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (0.0, "A memory budget of 0 GiB is no memory at all: give one between 0.5 and 65,536 GiB."),
        (
            -5.0,
            "A memory budget of -5 GiB is no memory at all: give one between 0.5 and 65,536 GiB.",
        ),
        (
            0.25,
            "A memory budget of 0.25 GiB is less than TensorFlow alone takes (about 0.7 GiB): "
            "give one between 0.5 and 65,536 GiB.",
        ),
        (
            1e6,
            "A memory budget of 1e+06 GiB is more than 65,536 GiB, surely a typo: "
            "give one between 0.5 and 65,536 GiB.",
        ),
        (
            math.nan,
            "A memory budget of nan GiB is not a number: give one between 0.5 and 65,536 GiB.",
        ),
    ],
)
def test_a_budget_out_of_range_says_what_it_got_and_what_to_give(
    state: SizingState, choices: SizingChoices, budget: float, message: str
) -> None:
    assert sizing_view.budget_problem(budget, choices) == message
    assert sizing_view.input_problems(replace(state, budget_gib=budget), choices) == {
        "budget": message
    }


@pytest.mark.parametrize(
    ("headroom", "reason"),
    [
        (-5.0, "A headroom of -5% is negative (headroom is memory kept free on top of the bound)"),
        (1500.0, "A headroom of 1,500% is more than 10x the bound, surely a typo"),
    ],
)
def test_a_headroom_out_of_range_says_what_it_got_and_what_to_give(
    choices: SizingChoices, headroom: float, reason: str
) -> None:
    assert sizing_view.headroom_problem(headroom, choices) == (
        f"{reason}: give one between 0 and 1,000%."
    )


def test_the_answers_wait_naming_every_invalid_input(
    state: SizingState, choices: SizingChoices
) -> None:
    problems = sizing_view.input_problems(
        replace(state, budget_gib=0.0, headroom_pct=-1.0), choices
    )

    assert list(problems) == ["budget", "headroom"]
    assert sizing_view.waiting_text(problems) == (
        "Waiting for a valid memory budget and headroom: no verdict or sizing answer until "
        "the input marked in the question is fixed."
    )


def test_the_headroom_sentence_does_the_arithmetic_it_states() -> None:
    usable = usable_budget_bytes(256 * GIB, 0.2)

    sentence = sizing_text.usable_text(256.0, 20.0, usable)

    assert sentence == (
        "the 256 GiB host RAM budget leaves 213.33 GiB for training once 20% headroom is added "
        "on top of it (213.33 GiB + 20% = 256 GiB)"
    )
    assert usable * 1.2 == pytest.approx(256 * GIB, abs=2)  # what the words say
    assert "less" not in sentence


def test_without_headroom_the_whole_budget_is_for_training() -> None:
    assert sizing_text.usable_text(64.0, 0.0, 64 * GIB) == (
        "all of the 64 GiB host RAM budget, no headroom kept"
    )


def test_a_budget_below_the_need_reads_over_in_red_never_a_negative_spare():
    # Seen on the page: "-97.1 GiB spare" under the bound of a question over its budget.
    assert sizing_text.budget_delta(64 * 2**30, 161.1 * 2**30) == ("97.1 GiB over", "inverse")
    assert sizing_text.budget_delta(64 * 2**30, 51.7 * 2**30) == ("12.3 GiB spare", "normal")
    assert sizing_text.budget_delta(64 * 2**30, float("inf")) is None


def test_a_batch_search_stopped_at_its_limit_reads_as_at_least_that():
    # Seen for AlexNet: "largest batch 4096" beside a slider that stops at 128; 4096 is
    # where memplan stops looking, not where the budget is full.
    basis = Basis("symbolic", "90% split-conformal upper bound", 0.9, False, "")
    at_limit = BatchAnswer((224, 224), 64 * GIB, MAX_BATCH_SIZE, GIB, 2 * GIB, None, None, basis)
    assert sizing_text.batch_figure(at_limit) == f"{MAX_BATCH_SIZE:,} or more"
    assert f"up to {MAX_BATCH_SIZE:,}" in sizing_text.batch_caption(at_limit)
    full = BatchAnswer((224, 224), 64 * GIB, 96, GIB, 2 * GIB, 97, 64.5 * GIB, basis)
    assert sizing_text.batch_figure(full) == "96"


def test_a_typed_value_takes_the_nearest_offered_one_and_says_so() -> None:
    sides = tuple(range(16, 1025, 16))

    assert sizing_view.typed_value(128, sides, "image side") == (128, None)
    assert sizing_view.typed_value(100, sides, "image side") == (
        96,
        "A typed image side of 100 is not offered (the offered ones: multiples of 16 from 16 "
        "to 1024): showing the nearest, 96.",
    )
    assert sizing_view.typed_value(0, tuple(range(1, 129)), "batch size")[0] == 1
