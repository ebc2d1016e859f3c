"""The GPU memory model: a line of allocated bytes per network, a floor and a bound on fitting.

Fitted to the bundled H200 runs (`core.bundled_gpu`), read as an import reads them.
"""

from __future__ import annotations

import pandas as pd
import pytest

from core import bundled_gpu, datafiles
from core.workloads import alexnet, unet3d
from modeling import gpu_evaluation
from modeling.errors import ModelingError
from modeling.gpu_memory import GpuMemoryModel, points_of

H200_RUNS, ALLOC_CONF = bundled_gpu.BUNDLED_GPU_RUNS[0]


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return datafiles.read_gpu_runs(H200_RUNS, default_alloc_conf=ALLOC_CONF).to_pandas()


@pytest.fixture(scope="module")
def model(runs: pd.DataFrame) -> GpuMemoryModel:
    return GpuMemoryModel().fit(runs)


def test_the_u_net_allocates_by_voxels_times_batch(model: GpuMemoryModel) -> None:
    cube = model.need(unet3d.Config((256, 256, 256), 1))
    batch = model.need(unet3d.Config((128, 128, 128), 8))

    assert cube is not None and batch is not None
    assert cube.allocated_bytes == batch.allocated_bytes  # 16.8 M voxels either way


def test_every_measured_run_lies_between_its_floor_and_its_bound(
    runs: pd.DataFrame, model: GpuMemoryModel
) -> None:
    for point in points_of(runs):
        need = model.need(point.config)
        assert need is not None and need.inside
        assert need.floor_bytes <= point.allocated + point.context
        assert need.bound_bytes >= point.used  # what the device had in use when it trained
        assert abs(need.allocated_bytes - point.allocated) <= 0.10 * point.allocated


def test_bfloat16_needs_about_two_thirds_of_float32(model: GpuMemoryModel) -> None:
    full = model.need(unet3d.Config((192, 192, 192), 2))
    half = model.need(unet3d.Config((192, 192, 192), 2, precision="mixed_bfloat16"))

    assert full is not None and half is not None
    assert 0.6 < half.allocated_bytes / full.allocated_bytes < 0.7


def test_a_shape_or_a_network_the_runs_did_not_measure_has_no_answer(
    model: GpuMemoryModel,
) -> None:
    assert model.need(alexnet.Config((224, 224), 128)) is not None
    assert model.need(alexnet.Config((227, 227), 128)) is None  # one shape measured: no rule
    assert model.need(unet3d.Config((128, 128, 128), 2, base_filters=32)) is None


def test_beyond_the_measured_elements_is_said_with_its_factor(model: GpuMemoryModel) -> None:
    need = model.need(unet3d.Config((256, 256, 256), 8))  # twice the largest measured

    assert need is not None and not need.inside and need.beyond_factor == pytest.approx(2.0)


def test_the_model_refuses_host_ram_runs_and_answers_only_when_fitted(make_runs) -> None:
    with pytest.raises(ModelingError, match="GPU-memory runs only"):
        GpuMemoryModel().fit(make_runs())
    with pytest.raises(ModelingError, match="not fitted"):
        GpuMemoryModel().need(unet3d.Config((64, 64, 64), 1))


def test_the_bound_covers_every_held_out_run_inside_the_measured_range(
    runs: pd.DataFrame,
) -> None:
    split = gpu_evaluation.random_split(runs, splits=5)

    assert split.inside_predictions > 0
    assert split.inside_bound_coverage == 1.0 and split.inside_floor_soundness == 1.0
    assert split.median_error_pct < 2.0


def test_beyond_the_measured_sides_the_bound_is_scored_not_assumed(runs: pd.DataFrame) -> None:
    beyond = gpu_evaluation.beyond_sides(runs)

    assert beyond.max_beyond_factor > 1.0
    assert 0.5 < beyond.bound_coverage < 1.0  # why "beyond" is at most "verify first"
