"""The bundled reference sweep: present, valid, and what REFERENCE.md says it is."""

import pandas as pd
import pytest

from core import database, profiles, store
from core.units import GIB
from profiling import exchange

SIZES = list(range(32, 145, 16))
BATCHES = [1, 2, 4, 8, 16]


def test_the_bundled_export_imports_cleanly_and_covers_the_whole_grid(tmp_path):
    db = database.ensure_database(tmp_path / "fresh.duckdb")
    stored = exchange.import_runs(db, database.BUNDLED_RUNS, database.BUNDLED_SAMPLES)
    runs = store.load_runs(db)
    assert stored == len(runs)

    cubes = runs[(runs["depth"] == runs["height"]) & (runs["height"] == runs["width"])]
    grid = set(zip(cubes["depth"], cubes["batch_size"], strict=True))
    assert {(s, b) for s in SIZES for b in BATCHES} <= grid, "every grid point has a record"
    assert (runs["base_filters"] == 16).all() and (runs["levels"] == 5).all()
    # What did not fit is recorded too, with its reason.
    assert {"ok", "skipped"} <= set(runs["status"])
    not_run = runs[runs["status"] == "skipped"]
    assert not_run["message"].str.len().gt(0).all()

    ok = runs[runs["status"] == "ok"]
    repeats = ok.groupby(["depth", "batch_size"]).size()
    assert (repeats >= 3).sum() >= 3, "at least 3 points measured 3 times"

    samples = store.load_samples(db)
    assert set(samples["run_id"]) == set(ok["run_id"]) | set(
        runs.loc[runs["status"] == "oom", "run_id"]
    )
    # Each stored peak is the top of its own stored timeline.
    timeline_peaks = samples.groupby("run_id")["rss_bytes"].max()
    assert (ok.set_index("run_id")["peak_sampled_bytes"] == timeline_peaks[ok["run_id"]]).all()


def test_a_fresh_default_database_holds_every_bundled_export(tmp_path, monkeypatch):
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "memplan.duckdb")
    db = database.ensure_database(database.default_db_path())
    stored = store.load_runs(db)
    for runs_file, _samples in database.BUNDLED_EXPORTS:
        bundled = pd.read_parquet(runs_file)
        assert set(bundled["run_id"]) <= set(stored["run_id"])
    assert len(stored) == sum(len(pd.read_parquet(f)) for f, _ in database.BUNDLED_EXPORTS)


def test_seven_machine_profiles_of_the_u_net_ship_and_four_share_their_grid(
    tmp_path, monkeypatch
) -> None:
    """The reference grid measured on the Intel Xeon, again on an AVX-512 AMD EPYC, and on a
    newer AVX-512 AMD EPYC (family 26) in TensorFlow and in PyTorch, and part of it there
    with oneDNN off; the knob design on an AVX2-only AMD EPYC, with oneDNN off
    (TensorFlow's default there) and on."""
    monkeypatch.setattr(database, "REPOSITORY_DB", tmp_path / "memplan.duckdb")
    db = database.ensure_database(database.default_db_path())
    runs = store.load_runs(db, store.RunFilter(workload="unet3d", status="ok"))
    runs["machine"] = profiles.profile_keys(runs)

    found = profiles.profiles_in(runs)
    labels = sorted(profile.label for profile in found.values())
    assert labels == [
        "AMD EPYC (family 26, model 2), AVX-512 BF16, 2 cores, PyTorch 2.13",
        "AMD EPYC (family 26, model 2), AVX-512 BF16, 2 cores, TensorFlow 2.21",
        "AMD EPYC (family 26, model 2), AVX-512 BF16, 2 cores, TensorFlow 2.21, oneDNN off",
        "AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21",
        "AMD EPYC, AVX2, 2 cores, TensorFlow 2.21",
        "AMD EPYC, AVX2, 2 cores, TensorFlow 2.21, oneDNN off",
        "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21",
    ]
    by_label = {profile.label: key for key, profile in found.items()}
    amd = by_label["AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21"]
    intel = by_label["Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21"]
    newer = [key for label, key in by_label.items() if "family 26" in label and "off" not in label]
    points = {
        key: set(zip(group["depth"], group["batch_size"], strict=True))
        for key, group in runs.groupby("machine")
    }
    assert len(points[intel]) == 33 and points[intel] <= points[amd]
    # The family 26 EPYC measured the AVX-512 EPYC's grid point for point, in both frameworks,
    # and its sides 32-112 at batches 1-4 again with oneDNN off: pairs that differ in oneDNN
    # alone (docs/transfer.md).
    assert all(points[key] == points[amd] for key in newer) and len(newer) == 2
    off = by_label[
        "AMD EPYC (family 26, model 2), AVX-512 BF16, 2 cores, TensorFlow 2.21, oneDNN off"
    ]
    assert len(points[off]) == 18 and points[off] <= points[newer[0]]


KNOB_SETS = {"onednn_off": 3, "onednn_on": 4}  # their index in BUNDLED_EXPORTS


def _bundled_runs(tmp_path, index: int):
    db = database.ensure_database(tmp_path / f"fresh{index}.duckdb")
    runs_file, samples_file = database.BUNDLED_EXPORTS[index]
    exchange.import_runs(db, runs_file, samples_file)
    return store.load_runs(db, store.RunFilter(workload="unet3d"))


@pytest.mark.parametrize("index", KNOB_SETS.values(), ids=KNOB_SETS.keys())
def test_the_bundled_knob_design_varies_every_knob_of_the_u_net_on_one_machine(tmp_path, index):
    runs = _bundled_runs(tmp_path, index)
    ok = runs[runs["status"] == "ok"]

    # One machine, one software stack (oneDNN: see the test below).
    stack = ["cpu_model", "cpu_isa", "tensorflow_version"]
    assert runs[stack].drop_duplicates().shape[0] == 1
    # Every knob away from the reference network (16 filters, 5 levels, float32, transpose)
    # was measured at 32, 48 and 64 (bfloat16 in the first set: 32 and 48) at batch 1 and 2.
    reference = (ok["base_filters"] == 16) & (ok["levels"] == 5) & (ok["precision"] == "float32")
    reference &= ok["upsampling"] == "transpose"
    assert set(ok.loc[reference, "depth"]) == {32, 48, 64, 80, 96}
    bfloat16_sides = {32, 48, 64} if runs["onednn_enabled"].any() else {32, 48}
    for knob, value, sides in (
        ("base_filters", 8, {32, 48, 64}),
        ("base_filters", 32, {32, 48, 64}),
        ("levels", 4, {32, 48, 64}),
        ("upsampling", "upsample", {32, 48, 64}),
        ("precision", "mixed_bfloat16", bfloat16_sides),
    ):
        varied = ok[ok[knob] == value]
        assert set(varied["depth"]) == sides, (knob, value)
        assert set(varied["batch_size"]) == {1, 2}
    # TensorFlow's CPU build has no float16 MaxPool3D kernel, oneDNN or not: recorded, with
    # the reason.
    half = runs[runs["precision"] == "mixed_float16"]
    assert len(half) == 4 and set(half["status"]) == {"error"}
    assert (
        half["message"].str.contains("No OpKernel was registered to support Op 'MaxPool3D'").all()
    )


def test_with_onednn_on_every_configuration_of_the_knob_design_peaked_lower(tmp_path) -> None:
    """The same design on the same machine: only TF_ENABLE_ONEDNN_OPTS=1 differs."""
    off, on = (_bundled_runs(tmp_path, index) for index in KNOB_SETS.values())
    # With TF_ENABLE_ONEDNN_OPTS=1 oneDNN ran float32 only: this CPU lacks AVX-512.
    assert not off["onednn_enabled"].any()
    assert (on["onednn_enabled"] == (on["precision"] == "float32")).all()
    peaks = _peaks(off, on)
    ratio = (peaks["off"] / peaks["on"])[peaks.index.get_level_values("precision") == "float32"]
    assert len(ratio) == 36 and (ratio > 1).all()
    # The figures `core.profiles.ONEDNN_OFF_NOTE` quotes.
    assert f"{ratio.median():.2f}x" in profiles.ONEDNN_OFF_NOTE
    assert f"{ratio.max():.2f}x" in profiles.ONEDNN_OFF_NOTE


def _peaks(off: pd.DataFrame, on: pd.DataFrame) -> pd.DataFrame:
    """The median peak of each configuration both sets measured, without and with the variable."""
    point = ["depth", "batch_size", "base_filters", "levels", "precision", "upsampling"]
    return pd.merge(
        off[off["status"] == "ok"].groupby(point)["peak_hwm_bytes"].median().rename("off"),
        on[on["status"] == "ok"].groupby(point)["peak_hwm_bytes"].median().rename("on"),
        on=point,
    )


def test_mixed_bfloat16_peaked_alike_with_the_variable_set_or_not(tmp_path) -> None:
    """Without AVX-512 oneDNN does not take bfloat16, so setting it on changed nothing."""
    off, on = (_bundled_runs(tmp_path, index) for index in KNOB_SETS.values())
    peaks = _peaks(off, on).xs("mixed_bfloat16", level="precision") / GIB
    ratio = peaks["on"] / peaks["off"]
    assert len(ratio) == 4
    assert f"peaked {ratio.min():.2f}-{ratio.max():.2f}x the same runs" in (
        profiles.HALF_WITHOUT_ONEDNN
    )
    # The figures `core.profiles.HALF_WITHOUT_ONEDNN` quotes, 48^3 at batch 1 and 2.
    at48 = peaks.xs(48, level="depth").round(2)
    assert list(at48["on"]) == [1.25, 1.86] and list(at48["off"]) == [1.26, 1.89]
    assert "(48^3: 1.25 and 1.86 GiB at batch 1 and 2, against 1.26 and 1.89)" in (
        profiles.HALF_WITHOUT_ONEDNN
    )
    float32 = on[(on["precision"] == "float32") & (on["depth"] == 48) & (on["base_filters"] == 16)]
    float32 = float32[(float32["levels"] == 5) & (float32["upsampling"] == "transpose")]
    assert list((float32.sort_values("batch_size")["peak_hwm_bytes"] / GIB).round(2)) == [
        1.05,
        1.23,
    ]
    assert "above float32 with oneDNN (1.05 and 1.23 GiB)" in profiles.HALF_WITHOUT_ONEDNN


def test_the_bundled_alexnet_sweep_covers_its_grid_on_one_machine(tmp_path):
    db = database.ensure_database(tmp_path / "fresh.duckdb")
    runs_file, samples_file = database.BUNDLED_EXPORTS[1]
    exchange.import_runs(db, runs_file, samples_file)
    runs = store.load_runs(db, store.RunFilter(workload="alexnet"))

    grid = set(zip(runs["height"], runs["batch_size"], strict=True))
    assert {(s, b) for s in range(96, 289, 32) for b in (1, 2, 8, 32, 128)} <= grid
    assert (runs["status"] == "ok").all() and runs["depth"].isna().all()
    # One machine, one software stack: never mixed with another in a fit.
    assert runs[["cpu_model", "tensorflow_version", "cpu_cores"]].drop_duplicates().shape[0] == 1
    assert (runs.groupby(["height", "batch_size"]).size() >= 3).sum() == 3
