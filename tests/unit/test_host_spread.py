"""The host-to-host factor (`modeling.host_spread`) on a hand-made example: a profile's runs in
a real DuckDB file, another host's runs kept in a real Parquet export, both written with the
project's own store and export functions, and a model whose bound is known exactly."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from application import widening
from core import database, profiles, store, workloads
from core.workloads.base import WorkloadConfig
from modeling import host_spread
from modeling.closed_form_floor import replace_below_floor
from modeling.stored.predictor import TrainingRange
from profiling import exchange
from tests.conftest import build_record

MIB = 2**20
BOUND_BYTES = 1000 * MIB  # the model's bound at every configuration
# The profile's runs, recorded before the CPU generation was: two runs per configuration.
PROFILE_PEAKS_MIB = {(32, 1): (900, 1000), (32, 2): (950, 1050), (48, 1): (980, 1020)}
# Another host of that profile, its CPU generation recorded: 32^3 at batch 2 lies 10% above
# the bound, 48^3 at batch 2 was never measured on the profile (no evidence).
HOST_PEAKS_MIB = {(32, 1): 800, (32, 2): 1100, (48, 2): 3000}
HOST = "amd_f25m1_test"


@dataclass(frozen=True)
class FixedBound:
    """A sizing model whose bound is BOUND_BYTES everywhere (half of it predicted) before the
    widenings its range holds (`replace_below_floor` applies them, as answers do)."""

    training_range: TrainingRange
    name: str = "fixed"

    def point_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        return np.full(len(configs), BOUND_BYTES / 2)

    def upper_bytes(self, configs: Sequence[WorkloadConfig]) -> np.ndarray:
        return np.full(len(configs), float(BOUND_BYTES))


def answered(model: FixedBound, configs: Sequence[WorkloadConfig]) -> np.ndarray:
    """The bounds an answer gives ``configs``: floored and widened."""
    return replace_below_floor(model, configs, model.upper_bytes(configs))[0]


# Framework 0: the closed-form floor (a few hundred MiB here) stays below the bound.
RANGE = TrainingRange(32.0, 48.0, 2, 0.3, 1100.0 * MIB, {}, framework_bytes=0)


def _record(side: int, batch: int, peak_mib: float, **facts: object) -> object:
    return build_record(
        depth=side, height=side, width=side, batch_size=batch, steps=6,
        peak_hwm_bytes=int(peak_mib * MIB), cpu_vendor="AMD", cpu_model="AMD EPYC",
        cpu_isa="avx2", onednn_enabled=False, **facts,
    )  # fmt: skip


@pytest.fixture
def profile_db(tmp_path: Path) -> Path:
    path = database.ensure_database(tmp_path / "profile.duckdb")
    records = [
        _record(side, batch, peak)
        for (side, batch), peaks in PROFILE_PEAKS_MIB.items()
        for peak in peaks
    ]
    store.insert_runs(path, records)
    return path


@pytest.fixture
def kept_folder(tmp_path: Path) -> Path:
    """The other host's runs, exported as its kept file; and an Intel host's (another
    profile) of a configuration the profile measured, kept too."""
    folder = tmp_path / "hosts"
    host_db = database.ensure_database(tmp_path / "host.duckdb")
    generation = {"cpu_family": 25, "cpu_model_number": 1}
    records = [_record(s, b, peak, **generation) for (s, b), peak in HOST_PEAKS_MIB.items()]
    store.insert_runs(host_db, records)
    exchange.export_runs(host_db, folder / f"{HOST}_runs.parquet")
    intel_db = database.ensure_database(tmp_path / "intel.duckdb")
    intel = build_record(depth=32, height=32, width=32, steps=6, peak_hwm_bytes=9000 * MIB)
    store.insert_run(intel_db, intel)
    exchange.export_runs(intel_db, folder / "intel_runs.parquet")
    return folder


def _spread(db: Path, folder: Path) -> host_spread.HostSpread | None:
    runs = profiles.with_keys(store.load_runs(db))
    [(key, profile)] = profiles.profiles_in(runs).items()
    return host_spread.spread_of(runs, key, profile, "unet3d", host_spread.kept_runs(folder))


def test_the_factor_covers_every_kept_run_of_a_configuration_the_profile_measured(
    profile_db: Path, kept_folder: Path
) -> None:
    spread = _spread(profile_db, kept_folder)
    model = FixedBound(RANGE)

    assert spread is not None
    # 48^3 batch 2 (never measured on the profile) and the Intel host's run are not evidence.
    assert spread.hosts == (HOST,) and spread.configurations == 2
    assert sorted(spread.measured_ratios.round(4)) == [round(800 / 950, 4), round(1100 / 1000, 4)]
    assert spread.factor(model) == pytest.approx(1.1)
    configs = [peak.config for peak in spread.peaks]
    widened = answered(model, configs) * spread.factor(model)
    assert all(peak.peak_bytes <= bound for peak, bound in zip(spread.peaks, widened, strict=True))
    assert spread.sentence(1.1) == (
        "includes host-to-host spread measured on 2 configurations of 1 other host (x1.100)"
    )


def test_a_bound_that_already_covers_the_kept_runs_is_never_narrowed(
    profile_db: Path, kept_folder: Path
) -> None:
    spread = _spread(profile_db, kept_folder)
    wide = FixedBound(TrainingRange(**{**RANGE.__dict__, "machine_widening": 2.0}))

    assert spread is not None
    assert spread.factor(wide) == 1.0
    assert spread.sentence(1.0).endswith("(x1.000: already covered)")


def test_a_profile_no_kept_run_repeats_says_its_spread_is_unmeasured(
    profile_db: Path, tmp_path: Path
) -> None:
    assert _spread(profile_db, tmp_path / "no-hosts") is None
    [said] = widening.with_host_spread([FixedBound(RANGE)], None)  # type: ignore[list-item]

    assert said.training_range.host_widening == 1.0
    assert said.training_range.host_spread == "host-to-host spread unmeasured for this profile"


def test_widening_by_host_spread_multiplies_the_bound_and_is_idempotent(
    profile_db: Path, kept_folder: Path
) -> None:
    spread = _spread(profile_db, kept_folder)
    config = workloads.get("unet3d").Config((32, 32, 32), 1)
    [once] = widening.with_host_spread([FixedBound(RANGE)], spread)  # type: ignore[list-item]
    [twice] = widening.with_host_spread([once], spread)

    for model in (once, twice):
        assert answered(model, [config])[0] == pytest.approx(BOUND_BYTES * 1.1)
        assert model.training_range.host_spread.endswith("of 1 other host (x1.100)")
