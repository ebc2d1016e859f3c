"""``memplan machines`` and ``calibrate``, called in-process, without TensorFlow.

The machine running the tests is pretended to be AMD (whatever CPU CI has), so
the output is exact; measuring for real is tests/integration/test_calibrate_cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import profiles, store
from memplan import calibrate, cli, machines
from tests.conftest import build_record

INTEL = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon", "cpu_isa": "avx512"}
AMD = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx512_bf16"}
AMD_LABEL = "AMD EPYC, AVX-512 BF16, 8 cores, TensorFlow 2.16"
GRID = {
    "image_sizes": [16],
    "batch_sizes": [1, 2],
    "target_mape_pct": 5.0,
    "model": "least_squares",
    "chosen_on": "Intel Xeon",
    "chosen_mape_pct": 2.0,
    "checked_on": "AMD EPYC",
    "checked_mape_pct": 1.5,
    "minutes": 0.5,
    "command": "python -m benchmarks.calibration --other amd.duckdb --write",
}


def _key(facts: dict) -> str:
    return profiles.profile_of(build_record(**facts).row()).key


@pytest.fixture(autouse=True)
def on_amd(monkeypatch: pytest.MonkeyPatch) -> str:
    profile = profiles.profile_of(build_record(**AMD).row())
    for module in (calibrate, machines):
        monkeypatch.setattr(
            module, "this_profile", lambda precision="float32", framework="tensorflow": profile
        )
    return profile.key


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "runs.duckdb"
    store.insert_run(path, build_record(**INTEL))
    return path


def test_machines_lists_each_profile_and_says_this_one_has_no_runs(db, capsys, on_amd):
    assert cli.main(["machines", "--db", str(db)]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        *("profile", "machine", "workload", "runs", "ok", "configurations"),
        *("family/model/stepping", "baseline", "(GiB)", "fitted", "this", "machine"),
    ]
    label = "Intel Xeon, AVX-512, 8 cores, TensorFlow 2.16"
    # The test run recorded no CPU generation; its baseline is build_record's 400 MiB.
    assert lines[1].split() == [
        *(_key(INTEL), *label.split(), "unet3d", "1", "1", "1", "unknown", "0.391", "no")
    ]
    assert lines[3] == (
        f"This machine ({AMD_LABEL}, profile {on_amd}) has no runs here; "
        "`memplan calibrate --workload unet3d` measures the few it needs."
    )


def test_machines_marks_this_machines_row(db, capsys, on_amd):
    store.insert_run(db, build_record(**AMD))

    assert cli.main(["machines", "--db", str(db), "--workload", "unet3d"]) == 0

    out = capsys.readouterr().out
    [mine] = [line for line in out.splitlines() if line.startswith(on_amd)]
    assert mine.endswith("no <- this machine")
    assert "has no runs here" not in out


def test_calibrate_without_a_grid_for_the_workload_says_how_to_make_one(db, tmp_path, capsys):
    grids = tmp_path / "calibration.json"
    grids.write_text(json.dumps({"unet3d": GRID}))

    code = cli.main(
        ["calibrate", "--grid", "--workload", "alexnet", "--calibration-file", str(grids)]
        + ["--db", str(db)]
    )

    assert code == 2
    assert capsys.readouterr().err == (
        f"error: no calibration grid for workload 'alexnet' in {grids}. Choose one from runs "
        "of two machine profiles with `python -m benchmarks.calibration --workload alexnet "
        "--other RUNS_FILE_OR_DB --write`, or measure a grid of your own with "
        "`memplan sweep --workload alexnet ...` and fit it with "
        "`memplan evaluate --workload alexnet --machine KEY`\n"
    )


def test_calibrate_measures_nothing_this_profile_already_has(db, tmp_path, capsys, on_amd):
    for batch in (1, 2):
        store.insert_run(db, build_record(batch_size=batch, **AMD))
    grids = tmp_path / "calibration.json"
    grids.write_text(json.dumps({"unet3d": GRID}))

    code = cli.main(
        ["calibrate", "--grid", "--calibration-file", str(grids), "--db", str(db), "--no-fit"]
    )

    assert code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"This machine: {AMD_LABEL} (profile {on_amd})"
    assert lines[1] == (
        "Calibration grid of unet3d: 2 points (sides 16 x batches 1 2); chosen on Intel Xeon "
        "(least_squares 2% MAPE), checked on AMD EPYC (1.5%, 0.5 min there)"
    )
    assert lines[2] == "0 of 2 point(s) to measure here"
    assert lines[-2] == f"Machine profile: {AMD_LABEL}, key {on_amd}"
    assert lines[-1].startswith(
        f"Fit its models with `memplan evaluate --workload unet3d --machine {on_amd} "
        f"--db {db} --seeds 3 --extrapolation-seeds 1`, then size with: memplan size "
        f"image --workload unet3d --budget 64GiB --batch-size 2 --machine {on_amd} --db {db}"
    )
    assert len(store.load_runs(db)) == 3


@pytest.fixture
def two_machines(tmp_path: Path) -> Path:
    """32^3 at batch 1 and 2 on both machines; the AMD one peaks 10% higher at batch 2."""
    path = tmp_path / "two.duckdb"
    gib = 2**30
    for facts, scale in ((INTEL, 1.0), (AMD, 1.1)):
        for batch, peak in ((1, 1.0), (2, 1.5)):
            peak_bytes = int(peak * gib * (scale if batch == 2 else 1.0))
            store.insert_run(
                path,
                build_record(
                    **facts,
                    depth=32,
                    height=32,
                    width=32,
                    batch_size=batch,
                    peak_hwm_bytes=peak_bytes,
                ),
            )
    return path


def test_summary_prints_one_table_per_machine_never_a_median_across_them(
    two_machines, capsys
) -> None:
    assert cli.main(["summary", "--markdown", "--db", str(two_machines)]) == 0

    out = capsys.readouterr().out
    assert f"## {AMD_LABEL} (profile {_key(AMD)})" in out
    assert f"## Intel Xeon, AVX-512, 8 cores, TensorFlow 2.16 (profile {_key(INTEL)})" in out
    assert "| 32 | 1.00 | 1.65 |" in out  # AMD
    assert "| 32 | 1.00 | 1.50 |" in out  # Intel


def test_summary_of_one_machine_by_key_prefix(two_machines, capsys) -> None:
    assert cli.main(["summary", "--db", str(two_machines), "--machine", _key(INTEL)[:5]]) == 0

    out = capsys.readouterr().out
    assert "1.50" in out and "1.65" not in out and "profile" not in out


def test_machines_compare_puts_each_configuration_side_by_side(two_machines, capsys) -> None:
    argv = ["machines", "--compare", "--markdown", "--reference", _key(INTEL)]

    assert cli.main([*argv, "--db", str(two_machines)]) == 0

    out = capsys.readouterr().out
    intel = "Intel Xeon, AVX-512, 8 cores, TensorFlow 2.16"
    assert f"| {intel}: peak (GiB) | {AMD_LABEL}: peak (GiB) | {AMD_LABEL}: x reference |" in out
    assert "| 1.000 | 1.000 | 1.000 |" in out and "| 1.500 | 1.650 | 1.100 |" in out
    assert f"{AMD_LABEL} over {intel}: 2 configuration(s), ratio median 1.050" in out


def test_an_unknown_machine_is_refused_with_the_known_ones(two_machines, capsys) -> None:
    assert cli.main(["summary", "--db", str(two_machines), "--machine", "zzz"]) == 2

    error = capsys.readouterr().err
    assert error.startswith("error: no machine profile 'zzz'; the known profiles are: ")
    assert f"{_key(AMD)} ({AMD_LABEL})" in error
