"""The calibration grid: its file (`profiling.calibration`) and how it is chosen (`benchmarks`).

The chooser tests run on synthetic runs that follow a known law exactly, so every
grid fits them and the choice is decided by the documented rule alone: the
fewest points, then the least measuring time, among grids measured on both
machines with enough points and sides for an evaluation.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from benchmarks import calibration as chooser
from core import profiles, store
from core.errors import ConfigError
from profiling.calibration import (
    Calibration,
    calibration_for,
    missing_points,
    profile_table,
    write_calibration,
)
from tests.conftest import build_record, build_runs

ENTRY = {
    "image_sizes": [32, 48, 64, 80, 96],
    "batch_sizes": [1, 2],
    "target_mape_pct": 5.0,
    "model": "least_squares",
    "chosen_on": "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21",
    "chosen_mape_pct": 2.44,
    "checked_on": "AMD EPYC, AVX-512 BF16, 2 cores, TensorFlow 2.21",
    "checked_mape_pct": 1.7,
    "minutes": 2.9,
    "command": "python -m benchmarks.calibration --other /tmp/amd_ref.duckdb --write",
}
# Two machines of different profiles; the runs are otherwise conftest's defaults.
INTEL = {"cpu_vendor": "Intel", "cpu_model": "Intel Xeon", "cpu_isa": "avx512"}
AMD = {"cpu_vendor": "AMD", "cpu_model": "AMD EPYC", "cpu_isa": "avx512_bf16"}


def _file(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "calibration.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _key(facts: dict) -> str:
    return profiles.profile_of(build_record(**facts).row()).key


# --- the file ----------------------------------------------------------------------------


def test_a_good_entry_reads_as_a_calibration_with_its_grid(tmp_path):
    path = _file(tmp_path, {"unet3d": ENTRY})

    found = calibration_for("unet3d", path)

    assert found is not None
    assert (found.image_sizes, found.batch_sizes, found.points) == (
        (32, 48, 64, 80, 96),
        (1, 2),
        10,
    )
    assert found.grid().image_sizes[0] == (32, 32, 32)
    assert found.sweep_command() == (
        "memplan sweep --workload unet3d --image-sizes 32 48 64 80 96 --batch-sizes 1 2"
    )
    assert found.to_entry() == ENTRY


def test_a_workload_without_an_entry_or_without_a_file_has_no_calibration(tmp_path):
    assert calibration_for("alexnet", _file(tmp_path, {"unet3d": ENTRY})) is None
    assert calibration_for("unet3d", tmp_path / "absent.json") is None


def test_an_entry_lacking_a_field_is_refused_naming_it_and_the_fix(tmp_path):
    path = _file(tmp_path, {"unet3d": {k: v for k, v in ENTRY.items() if k != "model"}})

    with pytest.raises(ConfigError) as raised:
        calibration_for("unet3d", path)

    assert str(raised.value) == (
        f"the unet3d calibration in {path} lacks 'model'; "
        "`python -m benchmarks.calibration --other RUNS_FILE_OR_DB --write` rewrites it"
    )


@pytest.mark.parametrize(
    ("image_sizes", "said"),
    [
        ("48", "image_sizes must be a non-empty list of whole numbers, got '48'"),
        ([], "image_sizes must be a non-empty list of whole numbers, got []"),
        ([32, 4.5], "image_sizes must hold whole numbers only, got [32, 4.5]"),
        ([0, 32], "image_sizes must be positive, got [0, 32]"),
    ],
)
def test_sizes_that_are_not_a_list_of_positive_whole_numbers_are_refused(
    tmp_path, image_sizes, said
):
    path = _file(tmp_path, {"unet3d": ENTRY | {"image_sizes": image_sizes}})

    with pytest.raises(ConfigError, match="malformed: " + said.replace("[", r"\[")):
        calibration_for("unet3d", path)


def test_a_file_that_is_not_json_or_not_an_object_is_refused_with_the_fix(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot read the calibration grids in .*rewrites it"):
        calibration_for("unet3d", _file(tmp_path, "{not json"))
    with pytest.raises(ConfigError, match="must hold one object per workload name, got a list"):
        calibration_for("unet3d", _file(tmp_path, [ENTRY]))


def test_writing_an_entry_keeps_the_other_workloads_and_reads_back_the_same(tmp_path):
    path = _file(tmp_path, {"alexnet": {"kept": True}})
    written = Calibration(
        workload="unet3d",
        **{
            **ENTRY,
            "image_sizes": tuple(ENTRY["image_sizes"]),
            "batch_sizes": tuple(ENTRY["batch_sizes"]),
        },
    )

    write_calibration(written, path)

    assert calibration_for("unet3d", path) == written
    assert json.loads(path.read_text())["alexnet"] == {"kept": True}
    assert [p.name for p in tmp_path.iterdir()] == ["calibration.json"]


# --- what a profile still lacks ----------------------------------------------------------


@pytest.fixture
def tiny_grid() -> Calibration:
    """A 2 x 2 grid: cubes of 32 and 48 at batch 1 and 2."""
    return Calibration(
        workload="unet3d",
        image_sizes=(32, 48),
        batch_sizes=(1, 2),
        **{k: ENTRY[k] for k in list(ENTRY)[2:]},
    )


def test_missing_points_are_those_without_an_ok_run_of_the_default_network_on_that_profile(
    tmp_path, tiny_grid
):
    db = tmp_path / "runs.duckdb"
    for row in [
        dict(depth=32, height=32, width=32, batch_size=1, **INTEL),  # counts for Intel
        dict(depth=48, height=48, width=48, batch_size=1, status="oom", **INTEL),  # not ok
        dict(depth=32, height=32, width=32, batch_size=2, base_filters=8, **INTEL),  # other net
        dict(depth=48, height=48, width=48, batch_size=2, **AMD),  # another machine
    ]:
        store.insert_run(db, build_record(**row))

    assert missing_points(db, tiny_grid, _key(INTEL)) == [("32", 2), ("48", 1), ("48", 2)]
    assert missing_points(db, tiny_grid, _key(AMD)) == [("32", 1), ("32", 2), ("48", 1)]


def test_the_profile_table_counts_each_machines_runs_and_marks_this_one(tmp_path):
    db = tmp_path / "runs.duckdb"
    store.insert_run(db, build_record(**INTEL))
    store.insert_run(db, build_record(repeat=1, **INTEL))
    store.insert_run(db, build_record(status="skipped", depth=96, height=96, width=96, **INTEL))
    # Measured since schema 7: the CPU generation, and a baseline of its own.
    zen = AMD | {"cpu_family": 25, "cpu_model_number": 1, "cpu_stepping": 1}
    store.insert_run(db, build_record(baseline_bytes=620 * 2**20, **zen))

    table = profile_table(db, here_key=_key(zen))

    assert table.to_dict("records") == [
        {
            "profile": _key(INTEL),
            "machine": "Intel Xeon, AVX-512, 8 cores, TensorFlow 2.16",
            "workload": "unet3d",
            "runs": 3,
            "ok": 2,
            "configurations": 1,
            "family/model/stepping": "unknown",
            "baseline (GiB)": 0.391,  # build_record's 400 MiB
            "fitted": "no",
            "this machine": "",
        },
        {
            "profile": _key(zen),
            "machine": "AMD EPYC (family 25, model 1), AVX-512 BF16, 8 cores, TensorFlow 2.16",
            "workload": "unet3d",
            "runs": 1,
            "ok": 1,
            "configurations": 1,
            "family/model/stepping": "25/1/1",
            "baseline (GiB)": 0.605,
            "fitted": "no",
            "this machine": "<- this machine",
        },
    ]
    assert profile_table(db, _key(zen), workload="alexnet").empty


# --- choosing the grid (benchmarks.calibration) ------------------------------------------

SIDES = (32, 48, 64, 80, 96, 112)
BATCHES = (1, 2, 4, 8)


def _profile(facts: dict, drop: tuple[tuple[int, int], ...] = (), noise: float = 0.0):
    """Synthetic runs of one machine: a second per 10^5 voxels of a batch, plus 10 s."""
    runs = build_runs(SIDES, BATCHES, noise=noise)
    for name, value in facts.items():
        runs[name] = value
    runs["wall_s"] = 10 + runs["depth"] ** 3 * runs["batch_size"] * 1e-5
    kept = [(d, b) not in drop for d, b in zip(runs["depth"], runs["batch_size"], strict=True)]
    return chooser.profile_runs(runs[kept], "unet3d", Path(facts["cpu_model"]))


def test_the_choice_is_the_fewest_points_then_the_quickest_to_measure():
    ranked = chooser.rank_on(_profile(INTEL), _profile(AMD))

    # 12 points: the extrapolation split tests on the two largest sides and validates on
    # the next, so symbolic regression's 5 runs need 3 sides below those at 2 batches.
    # The six sides at batch 1 and 2 are the quickest such grid.
    assert ranked[0].candidate == chooser.Candidate(SIDES, (1, 2))
    assert ranked[0].mape_pct < 0.01
    seconds = [10 + side**3 * batch * 1e-5 for side in SIDES for batch in (1, 2)]
    assert ranked[0].minutes == pytest.approx(sum(seconds) / 60)
    assert {len(item.candidate.points) for item in ranked[:6]} == {12}  # 6 batch pairs


@pytest.mark.parametrize(
    ("sides", "batches", "usable"),
    [
        ((32, 48, 64, 80, 96), (1, 2), False),  # validation leaves 4 runs to fit on
        ((32, 48, 64, 80, 96, 112), (1, 2), True),
        ((32, 48, 64, 80, 96), (1, 2, 4), True),
        ((32, 48, 64, 80), (1, 2, 4, 8, 16), True),  # validates on 48, fits on 32's 5
        ((32, 48, 64), (1, 2, 4, 8, 16), False),  # one side left: nothing to validate on
    ],
)
def test_a_grid_is_usable_only_if_every_split_leaves_enough_runs_to_fit(sides, batches, usable):
    assert chooser.evaluable(chooser.Candidate(sides, batches), "unet3d") is usable


def test_a_point_the_other_machine_did_not_measure_rules_out_every_grid_with_it():
    ranked = chooser.rank_on(_profile(INTEL), _profile(AMD, drop=((96, 2),)))

    # Every 12-point grid needs all six sides, so batch 2 gives way to the next quickest, 4.
    assert ranked[0].candidate == chooser.Candidate(SIDES, (1, 4))
    assert all((96, 2) not in item.candidate.points for item in ranked)


def test_the_other_machines_errors_play_no_part_in_the_choice():
    noisy_other = _profile(AMD, noise=0.3)

    assert (
        chooser.rank_on(_profile(INTEL), noisy_other)[0]
        == chooser.rank_on(_profile(INTEL), _profile(AMD))[0]
    )


def test_with_no_grid_reaching_the_target_the_lowest_error_comes_first_and_is_said_so():
    noisy = _profile(INTEL, noise=0.2)

    ranked = chooser.rank_on(noisy, _profile(AMD), target_pct=0.1)

    assert ranked[0].mape_pct == min(item.mape_pct for item in ranked)
    checked = chooser.score(_profile(AMD), ranked[0].candidate, chooser.least_squares_spec())
    text = chooser.verdict(ranked[0], checked, 0.1, "A", "B")
    assert "does NOT reach 0.1% on A" in text
    assert text.endswith("No grid reached 0.1% on both; the figures stored are the real ones.")


def test_too_few_points_measured_on_both_is_a_clear_error():
    only_small = _profile(AMD, drop=tuple((s, b) for s in SIDES for b in BATCHES if s > 48))

    with pytest.raises(ConfigError, match="no product grid of at least 10 points that an eval"):
        chooser.rank_on(_profile(INTEL), only_small)


def test_the_benchmark_writes_its_choice_with_the_real_figures(tmp_path, capsys):
    paths = []
    for facts in (INTEL, AMD):
        db = tmp_path / f"{facts['cpu_vendor']}.duckdb"
        rows = build_runs(SIDES, (1, 2)).drop(columns="run_id").to_dict("records")
        store.insert_runs(db, [build_record(**(row | facts)) for row in rows])
        paths.append(db)
    target = tmp_path / "calibration.json"

    code = chooser.main(
        ["--reference", str(paths[0]), "--other", str(paths[1]), "--write"]
        + ["--calibration-file", str(target)]
    )

    assert code == 0
    written = calibration_for("unet3d", target)
    assert written is not None
    assert (written.image_sizes, written.batch_sizes) == (SIDES, (1, 2))
    assert written.chosen_on.startswith("Intel Xeon") and written.checked_on.startswith("AMD")
    assert written.minutes == pytest.approx(12 * 12.5 / 60, abs=0.01)  # conftest's 12.5 s a run
    shown = capsys.readouterr().out
    assert "| 32 48 64 80 96 112 x 1 2 | 12 |" in shown
    assert "Stored as the unet3d entry" in shown


def test_a_runs_export_and_a_database_read_alike(tmp_path):
    runs = build_runs((32,), (1,))
    export = tmp_path / "runs.parquet"
    runs.to_parquet(export)
    db = tmp_path / "runs.duckdb"
    store.insert_run(db, build_record(**runs.iloc[0].to_dict()))

    from_file, from_db = chooser.read_runs(export), chooser.read_runs(db)

    pd.testing.assert_series_equal(from_file["peak_hwm_bytes"], from_db["peak_hwm_bytes"])
