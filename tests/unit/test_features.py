"""Runs and configurations become the feature frame every model reads."""

import dataclasses

import pandas as pd
import pytest

from core.analytical import (
    backprop_workspace_bytes,
    paper_estimate,
    refined_breakdown,
)
from core.errors import ConfigError
from core.records import RUN_COLUMNS
from core.workloads.base import parameter_counts
from core.workloads.unet3d import UNetConfig
from modeling.features import (
    config_frame,
    config_of,
    measured_frame,
    model_inputs,
    varying_knobs,
)


def test_measured_frame_keeps_only_ok_runs_with_a_high_water_mark(make_record) -> None:
    runs = pd.DataFrame(
        [
            make_record(run_id="ok-1").row(),
            make_record(run_id="oom-1", status="oom").row(),
            make_record(run_id="ok-without-peak", peak_hwm_bytes=None).row(),
        ]
    )

    frame = measured_frame(runs)

    assert frame.index.tolist() == ["ok-1"]
    assert frame.index.name == "run_id"


def test_measured_frame_targets_the_high_water_mark_and_keeps_the_baseline(make_record) -> None:
    record = make_record(
        peak_hwm_bytes=1234 * 2**20, peak_sampled_bytes=1000 * 2**20, baseline_bytes=650 * 2**20
    )

    frame = measured_frame(pd.DataFrame([record.row()]))

    assert frame["peak_bytes"].iloc[0] == 1234 * 2**20
    assert frame["baseline_bytes"].iloc[0] == 650 * 2**20


def test_config_frame_holds_shape_terms_and_both_analytical_models() -> None:
    config = UNetConfig((32, 48, 64), batch_size=3)

    row = config_frame([config]).iloc[0]

    assert row["side"] == pytest.approx((32 * 48 * 64) ** (1 / 3))
    assert row["megavoxels"] == pytest.approx(32 * 48 * 64 / 1e6)
    assert row["sample_megavoxels"] == pytest.approx(3 * 32 * 48 * 64 / 1e6)
    assert row["paper_activation_bytes"] == paper_estimate(config).activation_bytes
    assert row["activation_bytes"] == refined_breakdown(config).activation_bytes
    assert pd.isna(row["baseline_bytes"])


def test_a_runs_row_turns_back_into_its_configuration(make_record) -> None:
    row = make_record(depth=32, height=48, width=64, batch_size=2, precision="mixed_float16").row()

    assert config_of(row) == UNetConfig((32, 48, 64), 2, precision="mixed_float16")


def test_only_knobs_that_vary_become_model_inputs() -> None:
    same = config_frame([UNetConfig((32, 32, 32), 1), UNetConfig((64, 64, 64), 2)])
    half = UNetConfig((32, 32, 32), precision="mixed_float16", base_filters=8)
    mixed = config_frame([UNetConfig((32, 32, 32)), half])

    assert varying_knobs(same) == []
    assert model_inputs(same) == [
        "side",
        "megavoxels",
        "batch_size",
        "activation_gib",
        "state_gib",
        "workspace_gib",
    ]
    assert varying_knobs(mixed) == ["base_filters", "element_bytes"]


@pytest.mark.parametrize(
    "knob",
    [
        {"base_filters": 8},
        {"base_filters": 32},
        {"levels": 4},
        {"precision": "mixed_bfloat16"},
        {"precision": "mixed_float16"},
        {"upsampling": "upsample"},
    ],
)
def test_every_knob_moves_an_architecture_term(knob) -> None:
    reference = UNetConfig((64, 64, 64), batch_size=2)
    changed = dataclasses.replace(reference, **knob)

    terms = config_frame([reference, changed])[["activation_gib", "state_gib"]]

    assert not terms.iloc[0].equals(terms.iloc[1])


def test_architecture_terms_are_the_closed_form_in_gib() -> None:
    config = UNetConfig((64, 64, 64), batch_size=2, precision="mixed_float16")
    refined = refined_breakdown(config)

    row = config_frame([config]).iloc[0]

    kept = refined.activation_bytes + refined.backward_bytes + refined.input_bytes
    assert row["activation_gib"] == pytest.approx(kept / 2**30)
    # float32 weights, gradients, Adam's two slots, and the float16 copy of every weight
    # a layer casts (part of the refined weights).
    state = refined.weight_bytes + refined.gradient_bytes + refined.optimizer_bytes
    assert row["state_gib"] == pytest.approx(state / 2**30)
    assert refined.weight_bytes > 4 * parameter_counts(config)[0]


def test_a_runs_frame_without_the_needed_columns_is_refused() -> None:
    runs = pd.DataFrame({name: [] for name in RUN_COLUMNS if name != "baseline_bytes"})

    with pytest.raises(ConfigError, match="lacks column\\(s\\) baseline_bytes"):
        measured_frame(runs)


# The L3 cache an AVX2 AMD EPYC VM reports, by which its kernels were measured to shard.
EPYC_VM_L3 = 256 * 2**20


def test_the_workspace_follows_the_l3_cache_each_run_recorded(make_record) -> None:
    point = dict(depth=32, height=32, width=32, batch_size=4)
    runs = pd.DataFrame(
        [
            make_record(run_id="recorded", l3_cache_bytes=EPYC_VM_L3, **point).row(),
            make_record(run_id="older", l3_cache_bytes=None, **point).row(),
        ]
    )

    frame = measured_frame(runs)

    config = UNetConfig((32, 32, 32), batch_size=4)
    assert frame.loc["recorded", "l3_cache_bytes"] == EPYC_VM_L3
    assert frame.loc["recorded", "workspace_bytes"] == backprop_workspace_bytes(config, EPYC_VM_L3)
    # A run that did not record it keeps the one-image rule it was fitted with.
    assert pd.isna(frame.loc["older", "l3_cache_bytes"])
    assert frame.loc["older", "workspace_bytes"] == backprop_workspace_bytes(config)
    # On this cache 3 images share a buffer: the two decode0 buffers of 3 images, not one.
    assert frame.loc["recorded", "workspace_bytes"] == 2 * 3 * 32**3 * 27 * 32 * 4


def test_configurations_to_predict_take_the_l3_cache_of_the_machine_asked_about() -> None:
    configs = [UNetConfig((32, 32, 32), batch_size=2), UNetConfig((32, 32, 32), batch_size=4)]

    one_machine = config_frame(configs, EPYC_VM_L3)
    per_config = config_frame(configs, [EPYC_VM_L3, None])

    assert one_machine["l3_cache_bytes"].tolist() == [EPYC_VM_L3, EPYC_VM_L3]
    # Batch 2 falls back on Eigen's kernels at the widest layer; batch 4 does not.
    assert one_machine["workspace_bytes"].tolist() == [
        backprop_workspace_bytes(config, EPYC_VM_L3) for config in configs
    ]
    assert per_config["workspace_bytes"].iloc[1] == backprop_workspace_bytes(configs[1])
    with pytest.raises(ValueError):
        config_frame(configs, [EPYC_VM_L3])


def test_a_frame_asked_for_again_is_the_same_and_each_caller_gets_its_own() -> None:
    configs = [UNetConfig((32, 32, 32), batch_size=batch) for batch in (1, 2)]

    first = config_frame(configs, EPYC_VM_L3)
    sides = first["side"].tolist()
    first["side"] = 0.0  # changed by its caller
    again = config_frame(configs, EPYC_VM_L3)

    assert again["side"].tolist() == sides and sides == pytest.approx([32.0, 32.0])
    assert again.equals(config_frame(list(configs), EPYC_VM_L3))
    assert config_frame(configs[:1], EPYC_VM_L3).shape[0] == 1
