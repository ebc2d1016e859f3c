"""Sweep planning without running anything: grids, order, config files, skip rules."""

import json

import pytest

from core.errors import ConfigError
from core.records import PeakBound
from core.workloads.unet3d import UNetConfig
from profiling.lifecycle import Sweep, SweepPlan, SweepSummary
from profiling.local_sweep import skip_reason
from profiling.runner import RunSettings
from profiling.sweep import (
    Grid,
    expand_grid,
    grid_from_mapping,
    load_grid_file,
)

GIB = 2**30
SMALL = PeakBound(1 * GIB, "the closed form with margins")


def test_points_run_smallest_first():
    grid = grid_from_mapping({"image_sizes": ["64", "32"], "batch_sizes": [4, 1]})
    order = [(c.image_shape[0], c.batch_size) for c in expand_grid(grid)]
    assert order[0] == (32, 1) and order[-1] == (64, 4)
    assert len(order) == 4


def test_every_invalid_point_is_named_before_anything_runs():
    grid = grid_from_mapping({"image_sizes": ["32", "200", "244"], "batch_sizes": [1]})
    with pytest.raises(ConfigError) as error:
        expand_grid(grid)
    assert "Nearest valid sizes: 192 or 208" in str(error.value)
    assert "Nearest valid sizes: 240 or 256" in str(error.value)


def test_unknown_precision_lists_the_known_ones():
    grid = grid_from_mapping({"image_sizes": [32], "batch_sizes": [1], "precisions": ["fp8"]})
    with pytest.raises(ConfigError, match="unknown value.*fp8.*float32, mixed_float16"):
        expand_grid(grid)


def test_a_grid_file_in_toml_or_json_gives_the_same_grid(tmp_path):
    toml = tmp_path / "grid.toml"
    toml.write_text('image_sizes = ["32", "96x96x64"]\nbatch_sizes = [1, 2]\n')
    as_json = tmp_path / "grid.json"
    as_json.write_text(json.dumps({"image_sizes": ["32", "96x96x64"], "batch_sizes": [1, 2]}))
    assert load_grid_file(toml) == load_grid_file(as_json)
    assert load_grid_file(toml).image_sizes == ((32, 32, 32), (96, 96, 64))


def test_a_grid_file_with_an_unknown_key_names_the_known_ones(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text("image_sizes = [32]\nbatch_sizes = [1]\nbatch = [2]\n")
    known = "unknown sweep setting.*batch; known: workload, image_sizes"
    with pytest.raises(ConfigError, match=known):
        load_grid_file(path)


def test_a_broken_grid_file_says_which_format_it_expected(tmp_path):
    path = tmp_path / "grid.toml"
    path.write_text("image_sizes = [32")
    with pytest.raises(ConfigError, match="is not valid toml"):
        load_grid_file(path)


def test_a_grid_without_batch_sizes_is_refused():
    with pytest.raises(ConfigError, match="needs image_sizes and batch_sizes"):
        grid_from_mapping({"image_sizes": [32]})


def test_a_point_larger_than_one_that_ran_out_of_memory_is_skipped(tmp_path):
    settings = RunSettings(memory_limit_bytes=1000 * GIB)
    plan = SweepPlan(tmp_path / "runs.duckdb", Grid(((64, 64, 64),), (2, 4)), settings)
    sweep = Sweep(plan, {}, SweepSummary(sweep_id="s1"), lock=None)
    sweep.failed.append((UNetConfig((64, 64, 64), batch_size=2), "oom"))
    reason = sweep.blocked_by(UNetConfig((64, 64, 64), batch_size=4), "under the same limit")
    assert reason == "a point no larger (64 at batch 2) already ended as oom under the same limit"
    # A smaller batch, or another network, is still worth trying.
    assert sweep.blocked_by(UNetConfig((64, 64, 64), batch_size=1), "here") is None
    other = UNetConfig((64, 64, 64), batch_size=4, base_filters=8)
    assert sweep.blocked_by(other, "here") is None


def test_a_point_estimated_over_the_limit_is_skipped_with_both_figures():
    settings = RunSettings(memory_limit_bytes=4 * GIB)
    bound = PeakBound(5 * GIB, "the closed form with margins")
    reason = skip_reason(UNetConfig((32, 32, 32)), bound, settings)
    assert reason == (
        "estimated peak 5.00 GiB (the closed form with margins) exceeds the memory limit 4.00 GiB"
    )


def test_a_point_whose_bound_fits_the_limit_is_never_skipped():
    settings = RunSettings(memory_limit_bytes=4 * GIB)
    fitted = PeakBound(int(3.9 * GIB), "the symbolic model's upper bound (x1.06)")
    assert skip_reason(UNetConfig((32, 32, 32)), fitted, settings) is None


def test_grid_round_trips_through_its_dict():
    grid = Grid(image_sizes=((32, 32, 32), (96, 96, 64)), batch_sizes=(1, 2))
    assert grid_from_mapping(grid.to_dict()) == grid


def test_a_point_over_the_limit_runs_when_asked_and_the_limit_stops_it():
    settings = RunSettings(memory_limit_bytes=4 * GIB)
    over = PeakBound(5 * GIB, "the closed form with margins")
    assert skip_reason(UNetConfig((32, 32, 32)), over, settings, run_over_bound=True) is None
