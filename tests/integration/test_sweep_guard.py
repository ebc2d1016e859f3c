"""The sweep's pre-check with a fitted model: the bundled Intel models let big points run.

The issue's case: on a 125 GiB Xeon the closed form with margins skipped
240x240x144 at batch 8 (96.34 GiB against a 94.40 GiB limit); it measured
77.5 GiB. The bundled reference models of that machine kind bound it lower.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from application import bundles, sweep_guard, sweep_job
from application.stored import stored_bounds as fitted_bounds
from core import database, store
from core.errors import StoreError
from core.records import PeakBound
from core.workloads.unet3d import UNetConfig
from profiling import exchange
from profiling.estimate import estimate_peak_bytes
from profiling.jobspec import SweepJob
from profiling.lifecycle import SweepPlan
from profiling.local_sweep import run_sweep
from profiling.runner import RunSettings
from profiling.slurm_points import SlurmOptions
from profiling.sweep import Grid, grid_from_mapping

GIB = 2**30
INTEL = "9b59349f74"  # the bundled reference runs' machine profile
# 75% of a 125 GiB machine's RAM: the limit of the sweep.
LIMIT_125_GIB_MACHINE = int(94.40 * GIB)
DELL_BATCH_8 = UNetConfig((240, 240, 144), 8)


@pytest.fixture(scope="module")
def reference_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("guard") / "reference.duckdb"
    database.ensure_database(path)
    exchange.import_runs(path, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    assert bundles.install_bundled_results(path)
    return path


def test_the_fitted_bound_lets_the_dell_point_run_where_the_closed_form_did_not(
    reference_db: Path,
) -> None:
    assert estimate_peak_bytes(DELL_BATCH_8) > LIMIT_125_GIB_MACHINE
    bound = fitted_bounds(reference_db, [DELL_BATCH_8], INTEL)[DELL_BATCH_8]
    # Above the 77.5 GiB it measured, below the limit.
    assert 77.5 * GIB < bound.bound_bytes < LIMIT_125_GIB_MACHINE
    assert bound.source.endswith(f"for machine {INTEL}")


def test_a_network_the_model_never_saw_keeps_the_closed_form(reference_db: Path) -> None:
    other = UNetConfig((240, 240, 144), 8, base_filters=8)
    assert fitted_bounds(reference_db, [other, DELL_BATCH_8], INTEL).keys() == {DELL_BATCH_8}


def test_a_machine_without_models_keeps_the_closed_form(reference_db: Path) -> None:
    assert fitted_bounds(reference_db, [DELL_BATCH_8], "0000000000") == {}


# The pre-check is the sweep's, whichever framework trains the point: torch's child costs
# about half a TensorFlow one's CPU (mostly TensorFlow's import).
@pytest.mark.torch  # the point runs in a real profiled child
def test_a_sweep_runs_a_point_whose_fitted_bound_fits_though_the_closed_form_does_not(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.duckdb"
    tiny = UNetConfig((16, 16, 16), 1, base_filters=4, levels=2)
    # A limit between what the point needs (~0.4 GiB) and its closed form with margins.
    limit = estimate_peak_bytes(tiny) - GIB // 4
    settings = RunSettings(memory_limit_bytes=limit, steps=1, framework="torch")
    grid = Grid(image_sizes=((16, 16, 16),), batch_sizes=(1,), base_filters=(4,), levels=(2,))

    skipped = run_sweep(SweepPlan(db, grid, settings, show_progress=False))
    assert skipped.counts == {"skipped": 1}

    fitted = PeakBound(limit - GIB // 8, "a fitted model's upper bound")

    def precheck(configs):  # the fitted bound, as `modeling.guard` gives it
        return {tiny: fitted}

    ran = run_sweep(SweepPlan(db, grid, settings, show_progress=False, precheck=precheck))
    assert ran.counts == {"ok": 1}
    run = store.load_runs(db, store.RunFilter(status="ok")).iloc[0]
    assert run["estimate_bytes"] == fitted.bound_bytes  # the bound the pre-check used


def _slurm_job(db: Path, machine: str) -> SweepJob:
    grid = grid_from_mapping({"workload": "unet3d", "image_sizes": [32], "batch_sizes": [1]})
    return SweepJob(db, grid, slurm=SlurmOptions("debug"), machine=machine)


def test_a_slurm_sweep_takes_the_nodes_fitted_bounds_from_their_profile_prefix(
    reference_db: Path,
) -> None:
    precheck = sweep_job.precheck_for(_slurm_job(reference_db, INTEL[:4]))
    assert precheck is not None
    assert precheck([DELL_BATCH_8]) == fitted_bounds(reference_db, [DELL_BATCH_8], INTEL)
    with pytest.raises(
        StoreError, match=f"no machine profile 'zz'; the known profiles are: {INTEL}"
    ):
        sweep_job.precheck_for(_slurm_job(reference_db, "zz"))


def test_this_machines_precheck_bounds_each_point_by_its_precisions_profile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With oneDNN on below AVX-512, bfloat16 trains as without it: another profile's models."""
    keys = {
        ("float32", "tensorflow"): "aaaaaaaaaa",
        ("mixed_bfloat16", "tensorflow"): "bbbbbbbbbb",
        ("float32", "torch"): "dddddddddd",
    }
    monkeypatch.setattr(
        sweep_guard,
        "this_profile",
        lambda precision="float32", framework="tensorflow": SimpleNamespace(
            key=keys[precision, framework]
        ),
    )
    asked: dict[str, list[UNetConfig]] = {}

    def bounds_of(db_path: Path, configs: list[UNetConfig], profile_key: str):
        asked[profile_key] = list(configs)
        return {config: PeakBound(GIB, f"models of {profile_key}") for config in configs}

    monkeypatch.setattr(sweep_guard, "stored_bounds", bounds_of)
    single = UNetConfig((64, 64, 64), 2)
    half = UNetConfig((64, 64, 64), 2, precision="mixed_bfloat16")

    bounds = sweep_guard.fitted_precheck(tmp_path / "runs.duckdb")([single, half])

    assert asked == {"aaaaaaaaaa": [single], "bbbbbbbbbb": [half]}
    assert bounds[half].source == "models of bbbbbbbbbb"
    # A node's profile, given, bounds every point alike (the Slurm sweep's case).
    sweep_guard.fitted_precheck(tmp_path / "runs.duckdb", "cccccccccc")([single, half])
    assert asked["cccccccccc"] == [single, half]
    # A torch sweep is bounded by this machine's torch profile, never TensorFlow's.
    sweep_guard.fitted_precheck(tmp_path / "runs.duckdb", framework="torch")([single])
    assert asked["dddddddddd"] == [single]
