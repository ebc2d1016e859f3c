"""The Sizing page's state <-> URL query parameters, validated on the way in."""

import pytest

from dashboard.query_state import SizingChoices, SizingState, from_params, image_label, to_params

CHOICES = SizingChoices(
    sides=tuple(range(16, 1025, 16)),
    levels=5,
    batch_sizes=tuple(range(1, 129)),
    base_filters=(4, 8, 16, 32, 64),
    precisions=("float32", "mixed_float16", "mixed_bfloat16"),
    models=("paper", "refined", "symbolic"),
    min_budget_gib=0.5,
    max_budget_gib=65536.0,
    max_headroom_pct=1000.0,
)
DEFAULT = SizingState(
    image_shape=(128, 128, 128), cube=True, batch_size=4, base_filters=16,
    precision="float32", budget_gib=256.0, headroom_pct=20.0, model="symbolic",
)  # fmt: skip


def test_a_state_survives_the_round_trip_through_the_url() -> None:
    state = SizingState(
        image_shape=(240, 240, 144), cube=False, batch_size=16, base_filters=32,
        precision="mixed_float16", budget_gib=1024.0, headroom_pct=12.5, model="refined",
    )  # fmt: skip
    params = to_params(state)

    assert params == {"image": "240x240x144", "batch": "16", "filters": "32",
                      "precision": "mixed_float16", "budget": "1024", "headroom": "12.5",
                      "model": "refined"}  # fmt: skip
    assert from_params(params, CHOICES, DEFAULT) == (state, [])


def test_a_cube_is_written_as_one_side_and_three_equal_sides_stay_three() -> None:
    assert to_params(DEFAULT)["image"] == "128"
    state, problems = from_params({"image": "64x64x64"}, CHOICES, DEFAULT)
    assert (state.image_shape, state.cube, problems) == ((64, 64, 64), False, [])
    assert image_label(state) == "64x64x64"
    assert image_label(DEFAULT) == "128^3"


def test_missing_parameters_take_the_defaults_and_unknown_ones_are_left_alone() -> None:
    assert from_params({}, CHOICES, DEFAULT) == (DEFAULT, [])
    assert from_params({"utm_source": "mail"}, CHOICES, DEFAULT) == (DEFAULT, [])


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("image", "200", "side 200 is not offered: sides are multiples of 16 from 16 to 1024 "
                         "(nearest: 192 or 208)"),
        ("image", "big", "image size 'big' is not understood"),
        ("image", "2048", "side 2048 is not offered"),
        ("batch", "0", "batch size must be one of 1, 2, 3 ... 128"),
        ("batch", "four", "batch size must be a whole number"),
        ("filters", "12", "base filters must be one of 4, 8, 16, 32, 64"),
        ("precision", "float64", "precision must be one of float32, mixed_float16"),
        ("budget", "-5", "the budget (GiB) must be between 0.5 and 65536"),
        ("budget", "nan", "the budget (GiB) must be between 0.5 and 65536"),
        ("headroom", "5000", "headroom (%) must be between 0 and 1000"),
        ("model", "oracle", "the stored models are paper, refined, symbolic"),
    ],
)  # fmt: skip
def test_an_invalid_value_falls_back_to_the_default_and_says_which(
    name: str, value: str, reason: str
) -> None:
    # A valid batch beside the bad value: it must still apply (unless batch is the bad one).
    state, problems = from_params({"batch": "8", name: value}, CHOICES, DEFAULT)

    assert len(problems) == 1
    (problem,) = problems
    assert problem.startswith(f"The link's {name}={value!r} was ignored: ")
    assert reason in problem
    assert problem.endswith(f"Showing {name}={to_params(DEFAULT)[name]} instead.")
    expected_batch = 8 if name != "batch" else DEFAULT.batch_size
    assert state == SizingState(**{**DEFAULT.__dict__, "batch_size": expected_batch})


def test_every_bad_value_is_reported_and_the_good_ones_still_apply() -> None:
    state, problems = from_params(
        {"image": "100", "batch": "2", "budget": "0", "model": "paper"}, CHOICES, DEFAULT
    )
    assert [problem.split("=")[0] for problem in problems] == ["The link's image",
                                                               "The link's budget"]  # fmt: skip
    assert (state.image_shape, state.batch_size, state.budget_gib, state.model) == (
        (128, 128, 128), 2, 256.0, "paper"
    )  # fmt: skip


def test_a_repeated_parameter_counts_by_its_last_value() -> None:
    state, problems = from_params({"batch": ["2", "16"]}, CHOICES, DEFAULT)
    assert (state.batch_size, problems) == (16, [])


def test_without_stored_models_a_model_in_the_link_is_ignored_with_the_hint() -> None:
    choices = SizingChoices(**{**CHOICES.__dict__, "models": ()})
    default = SizingState(**{**DEFAULT.__dict__, "model": None})
    state, problems = from_params({"model": "symbolic"}, choices, default)

    assert state.model is None
    assert "no model is stored yet (run `python -m modeling evaluate`)" in problems[0]
    assert "model" not in to_params(default)
