"""The workload contract: a `typing.Protocol` every registered module is held to in full.

As scikit-learn's ``check_estimator``: one check that every registered workload passes,
and that refuses a module falling short in one line naming the member.
"""

from __future__ import annotations

import dataclasses
from types import ModuleType

import pytest

from core import workloads
from core.workloads import alexnet, unet3d
from core.workloads.contract import Workload, check_workload, members
from core.workloads.knobs import SizingOffer


def _copy(module: ModuleType, **changes: object) -> ModuleType:
    """A stand-in workload module: ``module``'s names, some changed (None: left out)."""
    copy = ModuleType(f"scratch_{module.NAME}")
    for name in members():
        setattr(copy, name, getattr(module, name))
    for name, value in changes.items():
        if value is None:
            delattr(copy, name)
        else:
            setattr(copy, name, value)
    return copy


def test_the_contract_is_every_name_the_registry_and_its_consumers_read():
    assert members(Workload) == (
        "NAME",
        "TITLE",
        "DIMS",
        "Config",
        "KNOBS",
        "LABELS",
        "NETWORK_KNOBS",
        "SHAPE_COLUMNS",
        "MAX_IMAGE_SIDE",
        "TORCH_BUILDER",
        "config_columns",
        "config_from_row",
        "parse_image_shape",
        "square_sides",
        "layer_outputs",
        "build_model",
        "synthetic_batch",
    )


@pytest.mark.parametrize("module", workloads.REGISTERED, ids=lambda module: module.NAME)
def test_every_registered_workload_keeps_the_contract(module):
    check_workload(module)
    check_workload(_copy(module))  # the stand-in is faithful


def test_a_workload_without_a_member_is_refused_naming_it():
    lacking = _copy(alexnet, square_sides=None)
    said = r"workload alexnet \(scratch_alexnet\) has no square_sides"
    with pytest.raises(TypeError, match=said):
        check_workload(lacking)


def test_a_member_of_the_wrong_kind_is_refused_naming_it():
    with pytest.raises(TypeError, match="DIMS is str, not int"):
        check_workload(_copy(unet3d, DIMS="3"))
    with pytest.raises(TypeError, match="KNOBS holds something other than Knob"):
        check_workload(_copy(unet3d, KNOBS=("base_filters",)))
    with pytest.raises(TypeError, match="synthetic_batch cannot be called as"):
        check_workload(_copy(unet3d, synthetic_batch=lambda config: None))
    with pytest.raises(TypeError, match="build_model is str, not a function"):
        check_workload(_copy(unet3d, build_model="keras"))


def test_declarations_that_disagree_are_refused():
    with pytest.raises(TypeError, match="NETWORK_KNOBS"):
        check_workload(_copy(unet3d, NETWORK_KNOBS=("levels",)))
    with pytest.raises(TypeError, match="2 dimensions"):
        check_workload(_copy(alexnet, SHAPE_COLUMNS=("depth", "height", "width")))
    labels = dataclasses.replace(alexnet.LABELS, sizing_knobs=(SizingOffer("base_filters"),))
    with pytest.raises(TypeError, match="LABELS names base_filters, not among its KNOBS"):
        check_workload(_copy(alexnet, LABELS=labels))
