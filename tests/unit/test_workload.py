"""The workload's validation: what the 3D U-Net can and cannot take, said plainly."""

import pytest

from core.errors import ConfigError
from core.workloads.base import format_image_shape
from core.workloads.unet3d import (
    UNetConfig,
    nearest_valid_sizes,
    parse_image_shape,
    valid_sides,
)


def test_one_number_is_a_cube_and_three_are_depth_height_width():
    assert parse_image_shape("144") == (144, 144, 144)
    assert parse_image_shape("240x240x144") == (240, 240, 144)
    assert parse_image_shape(" 32 X 48 x 64 ") == (32, 48, 64)


@pytest.mark.parametrize("text", ["", "abc", "32x32", "32x32x32x32", "-32", "3.5"])
def test_unreadable_image_sizes_are_refused_with_an_example(text):
    with pytest.raises(ConfigError, match="e.g. 240x240x144"):
        parse_image_shape(text)


def test_format_image_shape_round_trips():
    for text in ["144", "240x240x144"]:
        assert format_image_shape(parse_image_shape(text)) == text


@pytest.mark.parametrize(
    ("side", "below", "above"), [(200, 192, 208), (244, 240, 256), (8, 16, 16)]
)
def test_sizes_the_network_cannot_take_name_the_nearest_valid_ones(side, below, above):
    assert nearest_valid_sizes(side, levels=5) == (below, above)
    with pytest.raises(
        ConfigError, match=f"multiple of 16.*Nearest valid sizes: {below} or {above}"
    ):
        UNetConfig((side, side, side))


def test_the_multiple_follows_the_number_of_levels():
    UNetConfig((24, 24, 24), levels=4)  # a multiple of 8 is enough for 3 pools
    with pytest.raises(ConfigError, match="multiple of 8"):
        UNetConfig((20, 20, 20), levels=4)


def test_a_non_cube_is_checked_side_by_side():
    assert UNetConfig((240, 240, 144)).elements == 240 * 240 * 144
    with pytest.raises(ConfigError, match="image side 150"):
        UNetConfig((240, 150, 144))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"batch_size": 0}, "batch size must be between 1 and 4096, got 0"),
        ({"batch_size": -4}, "batch size must be between 1 and 4096, got -4"),
        ({"image_shape": (10**6,) * 3}, "image side must be between 1 and 4096, got 1000000"),
        ({"image_shape": (0, 16, 16)}, "image side must be between 1 and 4096, got 0"),
        ({"base_filters": 0}, "base filters must be between 1 and 1024"),
        ({"levels": 1}, "levels must be between 2 and 8, got 1"),
        ({"batch_size": 2.5}, "batch size must be a whole number, got 2.5"),
        ({"precision": "float64"}, "precision 'float64' is not one of float32, mixed_float16"),
        ({"upsampling": "bilinear"}, "upsampling 'bilinear' is not one of transpose, upsample"),
    ],
)
def test_absurd_values_get_clear_errors(overrides, message):
    values = {"image_shape": (32, 32, 32)} | overrides
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        UNetConfig(**values)


def test_valid_sides_lists_the_sizes_a_slider_may_offer():
    assert valid_sides(levels=5, low=20, high=80) == [32, 48, 64, 80]


def test_a_config_survives_a_trip_through_json_friendly_dicts():
    config = UNetConfig((32, 48, 64), batch_size=2, precision="mixed_float16")
    assert UNetConfig.from_dict(config.to_dict()) == config
