"""Splits by configuration: repeats stay together, test points never appear in training."""

import pandas as pd
import pytest

from modeling.evaluation.splits import (
    extrapolation_split,
    held_out_knob_values,
    kinds_for,
    knob_split,
    knob_split_label,
    make_split,
    point_ids,
    random_split,
    validation_split,
)
from modeling.features import measured_frame


@pytest.fixture
def frame(make_runs):
    return measured_frame(make_runs(sides=(32, 48, 64, 80, 96), batches=(1, 2, 4), repeats=2))


def test_random_split_holds_out_30_percent_of_configurations(frame) -> None:
    split = random_split(frame, 0.3, seed=0)

    test_points = point_ids(frame.loc[list(split.test)]).nunique()
    assert test_points == round(0.3 * 15)
    assert set(split.train) | set(split.test) == set(frame.index)
    assert set(split.train).isdisjoint(split.test)


def test_repeats_of_a_configuration_land_on_the_same_side(frame) -> None:
    for seed in range(5):
        split = random_split(frame, 0.3, seed)
        train_points = set(point_ids(frame).loc[list(split.train)])
        test_points = set(point_ids(frame).loc[list(split.test)])

        assert train_points.isdisjoint(test_points)


def test_different_seeds_give_different_splits_and_the_same_seed_the_same(frame) -> None:
    assert random_split(frame, seed=1) == random_split(frame, seed=1)
    assert random_split(frame, seed=1).test != random_split(frame, seed=2).test


def test_extrapolation_split_tests_on_the_largest_image_sizes(frame) -> None:
    split = extrapolation_split(frame, test_sides=2)

    assert set(frame.loc[list(split.test), "depth"]) == {80, 96}
    assert set(frame.loc[list(split.train), "depth"]) == {32, 48, 64}


def test_validation_is_carved_from_training_rows_only(frame) -> None:
    for kind in ("random", "extrapolation"):
        split = make_split(frame, kind, seed=0)
        train = frame.loc[list(split.train)]

        validation = validation_split(train, kind, seed=0)

        assert set(validation.train) | set(validation.test) == set(split.train)


def test_extrapolation_validation_is_the_largest_training_size(frame) -> None:
    train = frame.loc[list(extrapolation_split(frame).train)]

    validation = validation_split(train, "extrapolation", seed=0)

    assert set(frame.loc[list(validation.test), "depth"]) == {64}


def test_an_extrapolation_split_needs_more_sizes_than_it_tests_on(make_runs) -> None:
    frame = measured_frame(make_runs(sides=(32, 48)))

    with pytest.raises(ValueError, match="asked to test on 2 of 2 size\\(s\\) \\(32, 48\\)"):
        extrapolation_split(frame, test_sides=2)


def test_bad_split_arguments_are_refused(frame) -> None:
    with pytest.raises(ValueError, match="test_fraction must be between 0 and 1 .*got 1.5"):
        random_split(frame, 1.5)
    with pytest.raises(ValueError, match="split kind 'kfold' is not one of random, extrapol"):
        make_split(frame, "kfold", 0)


@pytest.fixture
def knob_frame(make_runs):
    """The reference network on a grid, and one variant per knob value around it."""
    sizes = {"sides": (32, 48, 64), "batches": (1, 2)}
    runs = [make_runs(sides=(32, 48, 64, 80), batches=(1, 2, 4))]
    for network in ({"base_filters": 8}, {"base_filters": 32}, {"precision": "mixed_float16"}):
        runs.append(make_runs(**sizes, network=network))
    frame = pd.concat(runs, ignore_index=True)
    return measured_frame(frame)


def test_a_knob_split_leaves_each_non_reference_value_out_in_turn(knob_frame) -> None:
    assert held_out_knob_values(knob_frame) == [
        ("base_filters", 8),
        ("base_filters", 32),
        ("precision", "mixed_float16"),
    ]

    split = knob_split(knob_frame, 0)

    assert set(knob_frame.loc[list(split.test), "base_filters"]) == {8}
    assert set(knob_frame.loc[list(split.train), "base_filters"]) == {16, 32}
    assert set(split.train) | set(split.test) == set(knob_frame.index)
    assert knob_split_label(knob_frame, 2) == "precision = mixed_float16"
    assert make_split(knob_frame, "knob", 1) == knob_split(knob_frame, 1)


def test_the_knob_split_exists_only_where_a_knob_varies(frame, knob_frame) -> None:
    assert kinds_for(frame) == ("random", "extrapolation")
    assert kinds_for(knob_frame) == ("random", "extrapolation", "knob")
    with pytest.raises(ValueError, match="knob split 0 does not exist: the data has 0 knob"):
        knob_split(frame, 0)


def test_knob_validation_is_a_random_share_of_the_training_rows(knob_frame) -> None:
    train = knob_frame.loc[list(knob_split(knob_frame, 0).train)]

    validation = validation_split(train, "knob", seed=0)

    assert set(validation.train) | set(validation.test) == set(train.index)
    assert validation.kind == "random"
