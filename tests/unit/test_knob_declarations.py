"""Knobs and workloads declared once: every flag, grid list, file key and column comes from them.

A workload module's ``KNOBS`` and ``LABELS`` (`core.workloads.knobs`) are the one
place a knob is spelled out; these tests read the derived tables back and check a
made-up knob and workload flow through them (docs/workloads.md).
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pytest

from core import records, schema, settings, workloads
from core.errors import ConfigError
from core.workloads import alexnet, unet3d
from core.workloads.base import ImageConfig, from_stored_columns
from core.workloads.knobs import PRECISION, Knob, KnobCode, check_declared, with_default
from memplan import commands
from memplan import sweep as sweep_command
from profiling.sweep import GRID_KNOBS, KNOB_LISTS, Grid, expand_grid

KERNEL = Knob("kernel_size", int, 3, "Kernel size", "convolution kernel side", low=1, high=7)


def test_every_declared_knob_is_a_flag_a_grid_list_a_file_key_and_a_column():
    for name, knob in workloads.KNOBS.items():
        assert commands.KNOB_FLAGS[name] is knob.kind
        assert KNOB_LISTS[knob.sweep_key] == name
        assert knob.sweep_key in GRID_KNOBS
        assert settings.SWEEP_FILE_SETTINGS[knob.sweep_key].types == (knob.kind,)
        assert name in records.RUN_COLUMNS
        assert schema.RUN_TYPES[name] is knob.kind
    # Every knob column a later declaration adds may be NULL: older runs have none.
    assert set(records.ADDED_KNOB_COLUMNS) <= schema.NULLABLE_RUN_COLUMNS


def test_the_sweep_command_has_one_list_flag_per_knob():
    parser = argparse.ArgumentParser()
    sweep_command.prepare(parser)
    args = parser.parse_args(["--precisions", "float32", "--upsamplings", "upsample"])
    assert (args.precisions, args.upsamplings) == (["float32"], ["upsample"])
    flags = {action.option_strings[0] for action in parser._actions if action.option_strings}
    assert {knob.sweep_flag for knob in workloads.KNOBS.values()} <= flags


def test_the_config_fields_are_the_declared_knobs_with_their_defaults():
    assert unet3d.NETWORK_KNOBS == (
        "base_filters",
        "levels",
        "in_channels",
        "classes",
        "precision",
        "upsampling",
    )
    assert unet3d.UNetConfig((32, 32, 32)).levels == 5
    assert alexnet.AlexNetConfig((224, 224)).classes == 1000  # its own default of a shared knob


def test_a_config_whose_fields_drift_from_its_knobs_is_refused():
    @dataclass(frozen=True)
    class Drifted(ImageConfig):
        image_shape: tuple[int, int]
        batch_size: int = 1
        precision: str = "mixed_float16"

    with pytest.raises(TypeError, match="differ from its KNOBS"):
        check_declared(Drifted, (PRECISION,))


def test_a_knob_refuses_what_it_does_not_allow_in_the_words_of_its_declaration():
    with pytest.raises(ConfigError, match="kernel size must be between 1 and 7, got 9"):
        KERNEL.check(9)
    with pytest.raises(ConfigError, match="upsampling 'bilinear' is not one of transpose"):
        unet3d.UNetConfig((32, 32, 32), upsampling="bilinear")
    with pytest.raises(ConfigError, match="output classes must be between 1 and 100000"):
        alexnet.AlexNetConfig((224, 224), classes=100_001)
    with pytest.raises(TypeError, match="needs low and high"):
        Knob("width", int, 1, "Width", "a knob without a range")


def test_a_knob_declared_later_is_a_nullable_column_after_the_others():
    @dataclass(frozen=True)
    class Base:
        run_id: str
        l3_cache_bytes: int | None = None

    added = dict.fromkeys(("levels",))  # stands in for a knob declared after schema 5
    extended = records.with_knob_columns(Base, tuple(added))
    assert [f.name for f in dataclasses.fields(extended)] == ["run_id", "l3_cache_bytes", "levels"]
    assert extended(run_id="r").levels is None


def test_a_stored_run_without_a_later_knob_reads_as_its_default():
    @dataclass(frozen=True)
    class WithKernel(ImageConfig):
        workload: ClassVar[str] = "scratch"
        image_shape: tuple[int, int]
        batch_size: int = 1
        kernel_size: int = 3

    row = {"height": 8, "width": 8, "batch_size": 2, "kernel_size": None}
    assert from_stored_columns(WithKernel, row, ("height", "width")).kernel_size == 3
    row["kernel_size"] = float("nan")  # what pandas holds for NULL
    assert from_stored_columns(WithKernel, row, ("height", "width")).kernel_size == 3


def test_a_grid_has_one_list_per_knob_and_refuses_unknown_text_values():
    grid = Grid(image_sizes=((32, 32, 32),), batch_sizes=(1,), upsamplings=("nearest",))
    with pytest.raises(ConfigError, match="unknown value.s. nearest: upsamplings are transpose"):
        expand_grid(grid)
    assert {f.name for f in dataclasses.fields(Grid)} >= set(KNOB_LISTS)


def test_labels_are_the_workloads_own():
    assert workloads.labels("unet3d").optimizer == "Adam"
    assert workloads.labels("alexnet").short_knob == ("classes", "classes")
    assert with_default(KERNEL, 5).default == 5
    with pytest.raises(ConfigError, match="kernel size must be between 1 and 7, got 8"):
        with_default(KERNEL, 8)


def test_the_stored_knob_columns_are_nullable_where_some_workload_lacks_the_knob():
    for name in workloads.KNOBS:
        everywhere = all(name in module.NETWORK_KNOBS for module in workloads.REGISTERED)
        assert (name in schema.NULLABLE_RUN_COLUMNS) is not everywhere, name


def test_a_text_knob_codes_exactly_its_choices_for_the_models():
    assert workloads.KNOBS["upsampling"].code.number("upsample") == 0
    with pytest.raises(TypeError, match="code numbers values other than its choices"):
        Knob(
            "padding",
            str,
            "same",
            "Padding",
            "how convolutions pad",
            choices=("same", "valid"),
            code=KnobCode("valid_padding", (("valid", 1),), "valid padding", "1 for valid"),
        )


def test_the_run_lists_show_the_knobs_declared_listed_in_declaration_order():
    assert workloads.LISTED_KNOBS == ("base_filters", "precision")
    assert [offer.param for offer in workloads.SIZING_OFFERS.values()] == [
        "filters",
        "",
        "",
    ]
