"""The Sizing page's state <-> URL query parameters, validated on the way in."""

import pytest

from dashboard.query_state import (
    SizingChoices,
    SizingState,
    from_params,
    image_label,
    machine_from,
    plain,
    to_params,
    workload_from,
)

CHOICES = SizingChoices(
    workload="unet3d",
    sides=tuple(range(16, 1025, 16)),
    batch_sizes=tuple(range(1, 129)),
    knobs={
        "base_filters": (4, 8, 16, 32, 64),
        "precision": ("float32", "mixed_float16", "mixed_bfloat16"),
    },
    models=("paper", "refined", "symbolic"),
    min_budget_gib=0.5,
    max_budget_gib=65536.0,
    max_headroom_pct=1000.0,
)
DEFAULT = SizingState(
    workload="unet3d",
    image_shape=(128, 128, 128),
    one_side=True,
    batch_size=4,
    knobs=(("base_filters", 16), ("precision", "float32")),
    budget_gib=256.0,
    headroom_pct=20.0,
    model="symbolic",
)
ALEXNET_CHOICES = SizingChoices(
    workload="alexnet",
    sides=tuple(range(67, 1025)),
    batch_sizes=tuple(range(1, 129)),
    knobs={
        "classes": (10, 100, 1000, 10000),
        "precision": ("float32", "mixed_float16", "mixed_bfloat16"),
    },
    models=("paper", "refined"),
)
ALEXNET_DEFAULT = SizingState(
    workload="alexnet",
    image_shape=(224, 224),
    one_side=True,
    batch_size=32,
    knobs=(("classes", 1000), ("precision", "float32")),
    budget_gib=256.0,
    headroom_pct=20.0,
    model="refined",
)


def test_a_state_survives_the_round_trip_through_the_url() -> None:
    state = SizingState(
        workload="unet3d",
        image_shape=(240, 240, 144),
        one_side=False,
        batch_size=16,
        knobs=(("base_filters", 32), ("precision", "mixed_float16")),
        budget_gib=1024.0,
        headroom_pct=12.5,
        model="refined",
        machine="9b59349f74",
    )
    params = to_params(state)

    assert params == {
        "workload": "unet3d",
        "machine": "9b59349f74",
        "image": "240x240x144",
        "batch": "16",
        "filters": "32",
        "precision": "mixed_float16",
        "budget": "1024",
        "headroom": "12.5",
        "model": "refined",
    }
    assert workload_from(params) == ("unet3d", [])
    assert machine_from(params, MACHINES, "b42ae893fe") == ("9b59349f74", [])
    # The machine is machine_from's: from_params keeps the default's.
    linked = SizingState(**{**DEFAULT.__dict__, "machine": "9b59349f74"})
    assert from_params(params, CHOICES, linked) == (state, [])


def test_an_alexnet_state_has_a_square_image_and_its_own_knobs() -> None:
    knobs = (("classes", 100), ("precision", "float32"))
    state = SizingState(
        **{**ALEXNET_DEFAULT.__dict__, "image_shape": (227, 200), "one_side": False, "knobs": knobs}
    )
    params = to_params(state)

    assert params == {
        "workload": "alexnet",
        "image": "227x200",
        "batch": "32",
        "classes": "100",
        "precision": "float32",
        "budget": "256",
        "headroom": "20",
        "model": "refined",
    }
    assert workload_from(params) == ("alexnet", [])
    assert from_params(params, ALEXNET_CHOICES, ALEXNET_DEFAULT) == (state, [])
    assert image_label(ALEXNET_DEFAULT) == "224^2"
    assert state.config.image_shape == (227, 200) and state.config.classes == 100


MACHINES = ["9b59349f74", "b42ae893fe", "b4f0000000"]


def test_a_link_names_its_machine_by_its_key_or_a_unique_prefix() -> None:
    assert machine_from({}, MACHINES, "9b59349f74") == ("9b59349f74", [])
    assert machine_from({"machine": "B42A"}, MACHINES, "9b59349f74") == ("b42ae893fe", [])


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (
            "ffff",
            "the machine profiles of this workload are 9b59349f74, b42ae893fe, b4f0000000",
        ),
        ("b4", "it starts 2 profiles' keys; give more of it"),
        ("", "the machine profiles of this workload are"),
    ],
)
def test_a_machine_the_page_does_not_offer_falls_back_to_the_default(
    value: str, reason: str
) -> None:
    machine, problems = machine_from({"machine": value}, MACHINES, "9b59349f74")

    assert machine == "9b59349f74"
    (problem,) = problems
    assert problem.startswith(f"The link's machine={value!r} was ignored: {reason}")
    assert problem.endswith("Showing machine=9b59349f74 instead.")


def test_a_state_without_a_machine_writes_none() -> None:
    assert "machine" not in to_params(DEFAULT)


def test_a_link_without_a_workload_is_the_default_one_and_an_unknown_one_falls_back() -> None:
    assert workload_from({"image": "128"}) == ("unet3d", [])
    workload, problems = workload_from({"workload": ["alexnet", "<b>x</b>"]})
    assert workload == "unet3d"
    assert problems == [
        "The link's workload='<b>x</b>' was ignored: the workloads are unet3d, alexnet. "
        "Showing workload=unet3d instead."
    ]


def test_a_knob_of_another_workload_is_ignored_with_a_reason() -> None:
    state, problems = from_params(
        {"filters": "16", "classes": "10"}, ALEXNET_CHOICES, ALEXNET_DEFAULT
    )

    assert state.knob("classes") == 10
    (problem,) = problems
    assert problem.startswith("The link's filters='16' was ignored: the AlexNet-style 2D CNN")
    assert "has no base filters to set" in problem


def test_an_alexnet_image_takes_two_sides_and_any_side_from_the_smallest() -> None:
    state, problems = from_params({"image": "100"}, ALEXNET_CHOICES, ALEXNET_DEFAULT)
    assert (state.image_shape, problems) == ((100, 100), [])

    _, problems = from_params({"image": "50"}, ALEXNET_CHOICES, ALEXNET_DEFAULT)
    assert "sides are whole numbers from 67 to 1024 (nearest: 67)" in problems[0]
    _, problems = from_params({"image": "64x64x64"}, ALEXNET_CHOICES, ALEXNET_DEFAULT)
    assert "it has 3 sides; this network takes 2" in problems[0]


def test_a_cube_is_written_as_one_side_and_three_equal_sides_stay_three() -> None:
    assert to_params(DEFAULT)["image"] == "128"
    state, problems = from_params({"image": "64x64x64"}, CHOICES, DEFAULT)
    assert (state.image_shape, state.one_side, problems) == ((64, 64, 64), False, [])
    assert image_label(state) == "64x64x64"
    assert image_label(DEFAULT) == "128^3"


def test_missing_parameters_take_the_defaults_and_unknown_ones_are_left_alone() -> None:
    assert from_params({}, CHOICES, DEFAULT) == (DEFAULT, [])
    assert from_params({"utm_source": "mail"}, CHOICES, DEFAULT) == (DEFAULT, [])


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        (
            "image",
            "200",
            "side 200 is not offered: sides are multiples of 16 from 16 to 1024 "
            "(nearest: 192 or 208)",
        ),
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
)
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
    assert [problem.split("=")[0] for problem in problems] == [
        "The link's image",
        "The link's budget",
    ]
    assert (state.image_shape, state.batch_size, state.budget_gib, state.model) == (
        (128, 128, 128),
        2,
        256.0,
        "paper",
    )


def test_a_repeated_parameter_counts_by_its_last_value() -> None:
    state, problems = from_params({"batch": ["2", "16"]}, CHOICES, DEFAULT)
    assert (state.batch_size, problems) == (16, [])


def test_without_stored_models_a_model_in_the_link_is_ignored_with_the_hint() -> None:
    choices = SizingChoices(**{**CHOICES.__dict__, "models": ()})
    default = SizingState(**{**DEFAULT.__dict__, "model": None})
    state, problems = from_params({"model": "symbolic"}, choices, default)

    assert state.model is None
    hint = "no model is stored yet (run `memplan evaluate --workload unet3d`)"
    assert hint in problems[0]
    assert "model" not in to_params(default)


MARKDOWN_SPECIALS = set("\\`*_{}[]()#+-.!|<>~$:&\"'=")


def unescaped(escaped: str) -> str:
    """``escaped`` as Markdown shows it; fails on a special character left unescaped."""
    shown, index = [], 0
    while index < len(escaped):
        if escaped[index] == "\\":
            assert escaped[index + 1] in MARKDOWN_SPECIALS, escaped
            shown.append(escaped[index + 1])
            index += 2
        else:
            assert escaped[index] not in MARKDOWN_SPECIALS, escaped
            shown.append(escaped[index])
            index += 1
    return "".join(shown)


@pytest.mark.parametrize(
    "text",
    [
        "<b>x</b>",
        "**bold** _it_ `code`",
        "[link](javascript:alert(1))",
        "$x^2$",
        ":red[alarm] :material/home:",
        "# heading",
        "a\\*b",
        "&lt;script&gt;",
    ],
)
def test_link_text_is_escaped_so_markdown_shows_it_verbatim(text: str) -> None:
    sentence = f"The link's workload={text!r} was ignored."
    assert unescaped(plain(sentence)) == sentence
