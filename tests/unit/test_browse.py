"""Browsing stored runs: filters, the runs table and its CSV, timelines, peaks by machine, sweeps.

The machines table and machines compared are `tests/unit/test_machines_view.py`'s.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from core import profiles, store
from core.errors import DataFileError
from presentation import browse, charts_sweeps
from profiling import exchange
from profiling.uploads import Upload, import_uploads
from tests.conftest import build_record

GIB = 2**30


def runs_frame(*records) -> pd.DataFrame:
    return browse.with_image(pd.DataFrame([r.row() for r in records]))


@pytest.fixture
def runs() -> pd.DataFrame:
    return runs_frame(
        build_record(
            run_id="a" * 32,
            sweep_id="s1",
            hostname="small",
            depth=32,
            height=32,
            width=32,
            batch_size=1,
            peak_hwm_bytes=2 * GIB,
            peak_sampled_bytes=GIB,
            created_at="2025-01-01T00:00:00+00:00",
        ),
        build_record(
            run_id="b" * 32,
            sweep_id="s1",
            hostname="small",
            depth=64,
            height=64,
            width=64,
            batch_size=1,
            peak_hwm_bytes=3 * GIB,
            created_at="2025-01-02T00:00:00+00:00",
        ),
        build_record(
            run_id="c" * 32,
            sweep_id="s2",
            hostname="big",
            depth=96,
            height=96,
            width=64,
            batch_size=2,
            status="oom",
            total_ram_bytes=512 * GIB,
            cpu_cores=64,
            tensorflow_version="2.21.0",
            created_at="2025-01-03T00:00:00+00:00",
        ),
        build_record(
            run_id="d" * 32,
            sweep_id="s2",
            hostname="big",
            depth=32,
            height=32,
            width=32,
            batch_size=1,
            peak_hwm_bytes=GIB + GIB // 2,
            total_ram_bytes=512 * GIB,
            cpu_cores=64,
            tensorflow_version="2.21.0",
            created_at="2025-01-04T00:00:00+00:00",
        ),
    )


def test_images_are_labelled_with_every_side_and_offered_smallest_first(runs):
    assert runs["image"].tolist() == ["32×32×32", "64×64×64", "96×96×64", "32×32×32"]
    assert browse.filter_options(runs, "image") == ["32×32×32", "64×64×64", "96×96×64"]
    assert browse.filter_options(runs, "hostname") == ["big", "small"]
    assert browse.filter_options(runs.iloc[0:0], "status") == []


def test_filters_combine_and_an_empty_choice_keeps_everything(runs):
    assert len(browse.filter_runs(runs, {"hostname": [], "status": []})) == 4
    small_ok = browse.filter_runs(runs, {"hostname": ["small"], "status": ["ok"]})
    assert small_ok["run_id"].str[0].tolist() == ["a", "b"]
    assert browse.filter_runs(runs, {"sweep_id": ["s2"], "batch_size": [2]})["status"].tolist() == [
        "oom"
    ]


def test_the_runs_table_shows_memory_in_gib_with_units_newest_first(runs):
    table = browse.runs_table(runs)
    assert table["run"].tolist() == ["d" * 12, "c" * 12, "b" * 12, "a" * 12]
    assert table["high-water mark (GiB)"].tolist()[::3] == [1.5, 2.0]
    assert table["image (D×H×W or H×W)"][1] == "96×96×64"
    assert table["workload"].tolist() == ["unet3d"] * 4
    assert all("bytes" not in column for column in table.columns)


def test_the_csv_download_is_the_export_format_and_imports_back(runs, tmp_path: Path):
    original = runs.iloc[:2]
    original.loc[original.index[0], "message"] = ""  # an empty string, not a missing value
    csv_path = tmp_path / "download.csv"
    csv_path.write_bytes(browse.runs_csv(original))
    db = tmp_path / "elsewhere.duckdb"
    assert exchange.import_runs(db, csv_path) == 2
    back = store.load_runs(db)
    assert back["run_id"].tolist() == original["run_id"].tolist()
    assert back["message"].tolist() == original["message"].tolist()
    assert back["peak_hwm_bytes"].tolist() == original["peak_hwm_bytes"].tolist()


def test_a_run_label_says_what_how_where_and_when(runs):
    label = browse.run_label(runs.iloc[2].to_dict())
    assert (
        label
        == "96×96×64 batch 2, 16 filters, float32 · oom · big · 2025-01-03T00:00:00 · cccccccc"
    )


def test_a_timeline_is_in_gib_with_its_peaks_as_marks():
    record = build_record(
        timeline=5, peak_sampled_bytes=5 * 2**20, peak_hwm_bytes=6 * 2**20, baseline_bytes=None
    )
    samples = store.samples_table(record.run_id, record.samples).to_pandas()
    curve = browse.timeline(samples)
    assert curve["rss_gib"].max() == pytest.approx(5 * 2**20 / GIB)
    marks = browse.peak_marks(record.row())
    assert marks["mark"].tolist() == ["sampled peak", "kernel high-water mark"]
    assert marks["gib"].tolist() == pytest.approx([5 * 2**20 / GIB, 6 * 2**20 / GIB])


def test_steps_are_placed_back_from_the_end_of_the_timeline_by_their_durations():
    record = build_record(
        timeline=50,
        steps=3,
        step_times_s="[1.5, 0.25, 0.5]",
        step_hwm_bytes=json.dumps([GIB, 2 * GIB, 2 * GIB]),
    )
    samples = store.samples_table(record.run_id, record.samples).to_pandas()  # ends at 4.9 s
    steps = browse.step_ends(record.row(), samples)
    assert steps["step"].tolist() == [1, 2, 3]
    assert steps["end_s"].tolist() == pytest.approx([4.15, 4.4, 4.9])
    assert steps["start_s"].tolist() == pytest.approx([2.65, 4.15, 4.4])
    assert steps["hwm_gib"].tolist() == [1.0, 2.0, 2.0]


@pytest.mark.parametrize(
    "overrides",
    [{"status": "oom"}, {"steps": 4}, {"step_times_s": "[]"}],
    ids=["killed run", "fewer steps than asked", "no step times"],
)
def test_a_run_that_did_not_finish_its_steps_gets_no_step_marks(overrides):
    record = build_record(timeline=50, **overrides)
    samples = store.samples_table(record.run_id, record.samples).to_pandas()
    assert browse.step_ends(record.row(), samples).empty


def test_runs_can_be_filtered_by_machine_profile_most_runs_first(runs):
    profiled = profiles.with_keys(runs)
    big, small = profiled["machine_profile"].iloc[[2, 0]]
    extra = profiles.with_keys(
        runs_frame(
            build_record(
                hostname="big2",
                total_ram_bytes=512 * GIB,
                cpu_cores=64,
                tensorflow_version="2.21.0",
            )
        )
    )
    both = pd.concat([profiled, extra], ignore_index=True)

    assert big != small
    assert browse.filter_options(both, browse.MACHINE) == [big, small]  # 3 runs, then 2
    assert browse.filter_runs(both, {browse.MACHINE: [big]})["hostname"].tolist() == [
        "big",
        "big",
        "big2",
    ]
    table = browse.runs_table(profiled)
    assert table["machine profile"].tolist() == [big, big, small, small]
    assert "machine profile" not in browse.runs_table(runs).columns


def test_peaks_at_one_batch_name_their_machine_and_host(runs):
    profiled = profiles.with_keys(runs)
    names = {key: f"machine {key[:3]}" for key in profiled["machine_profile"]}
    points = browse.batch_peaks(profiled, batch_size=1, machine_names=names)
    big, small = (names[key] for key in profiled["machine_profile"].iloc[[2, 0]])
    assert points.set_index("run")[["machine", "host", "image", "side", "peak_gib"]].loc[
        ["dddddddd", "aaaaaaaa", "bbbbbbbb"]
    ].values.tolist() == [
        [big, "big", "32×32×32", 32.0, 1.5],
        [small, "small", "32×32×32", 32.0, 2.0],
        [small, "small", "64×64×64", 64.0, 3.0],
    ]
    assert browse.batch_peaks(runs, batch_size=2).empty  # its only run ran out of memory
    assert set(browse.batch_peaks(runs, batch_size=1)["machine"]) == {"unknown"}


def test_the_sweeps_table_shows_progress_and_a_short_grid(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    store.create_sweep(db, "older", "cmd", {"image_sizes": ["32"], "batch_sizes": [1]}, 4)
    store.create_sweep(
        db,
        "newer",
        "cmd",
        {
            "image_sizes": ["32", "64"],
            "batch_sizes": [1, 2],
            "base_filters": [16],
            "precisions": ["float32", "mixed_float16"],
        },
        8,
    )
    store.update_sweep(db, "newer", points_done=3)
    table = browse.sweeps_table(store.load_sweeps(db).sort_values("sweep_id"))
    rows = table.set_index("sweep").to_dict("index")
    assert rows["newer"]["points done / total"] == "3 / 8"
    assert rows["older"]["points done / total"] == "0 / 4"
    assert (
        rows["newer"]["grid"] == "sizes 32 64; batch 1 2; filters 16; precisions float32 "
        "mixed_float16"
    )
    assert browse.sweeps_table(store.load_sweeps(tmp_path / "empty.duckdb")).empty


# --- AlexNet runs beside U-Net runs ----------------------------------------------------

ALEXNET = {
    "workload": "alexnet",
    "depth": None,
    "base_filters": None,
    "levels": None,
    "upsampling": None,
    "in_channels": 3,
    "classes": 1000,
}


@pytest.fixture
def mixed() -> pd.DataFrame:
    return runs_frame(
        build_record(
            run_id="u" * 32,
            depth=32,
            height=32,
            width=32,
            peak_hwm_bytes=2 * GIB,
            created_at="2025-01-01T00:00:00+00:00",
        ),
        build_record(
            run_id="s" * 32,
            height=224,
            width=224,
            peak_hwm_bytes=GIB,
            created_at="2025-01-02T00:00:00+00:00",
            **ALEXNET,
        ),
        build_record(
            run_id="o" * 32,
            height=227,
            width=200,
            hostname="big",
            created_at="2025-01-03T00:00:00+00:00",
            **(ALEXNET | {"classes": 10}),
        ),
    )


def test_2d_images_read_as_their_workload_writes_them_and_sort_by_pixels(mixed):
    assert mixed["image"].tolist() == ["32×32×32", "224", "227x200"]
    assert mixed["voxels"].tolist() == [32**3, 224 * 224, 227 * 200]
    assert browse.filter_options(mixed, "image") == ["32×32×32", "227x200", "224"]
    assert browse.filter_options(mixed, "workload") == ["unet3d", "alexnet"]
    alexnet = browse.filter_runs(mixed, {"workload": ["alexnet"]})
    assert alexnet["run_id"].str[0].tolist() == ["s", "o"]


def test_an_alexnet_run_is_named_by_its_classes_not_by_filters(mixed):
    label = browse.run_label(mixed.iloc[2].to_dict())
    assert label.startswith("227x200 batch 1, 10 classes, float32 · ok · big · 2025-01-03")
    assert browse.run_label(mixed.iloc[0].to_dict()).startswith("32×32×32 batch 1, 16 filters")
    table = browse.runs_table(mixed)
    assert table["image (D×H×W or H×W)"].tolist() == ["227x200", "224", "32×32×32"]
    assert table["base filters"].isna().tolist() == [True, True, False]


def test_peaks_of_several_workloads_name_the_workload_and_use_the_square_side(mixed):
    points = browse.batch_peaks(mixed, batch_size=1).set_index("run")
    assert points.loc["ssssssss", "side"] == 224.0
    assert points.loc["oooooooo", "side"] == pytest.approx((227 * 200) ** 0.5, abs=0.05)
    assert points.loc["uuuuuuuu", "side"] == 32.0
    assert points.loc["ssssssss", "network"] == "alexnet: 1000 classes, float32"
    only_alexnet = browse.batch_peaks(browse.filter_runs(mixed, {"workload": ["alexnet"]}), 1)
    assert set(only_alexnet["network"]) == {"1000 classes, float32", "10 classes, float32"}


def test_a_sweeps_grid_names_its_workload(tmp_path: Path):
    db = tmp_path / "s.duckdb"
    grid = {"workload": "alexnet", "image_sizes": ["224"], "batch_sizes": [1, 32]}
    store.create_sweep(db, "alex", "cmd", grid, 2)
    [row] = browse.sweeps_table(store.load_sweeps(db)).to_dict("records")
    assert row["grid"] == "alexnet; sizes 224; batch 1 32"


def test_a_frame_without_a_workload_column_is_all_the_default_workloads(runs):
    old = runs.drop(columns=["workload"])
    assert browse.with_image(old)["workload"].tolist() == ["unet3d"] * 4


# --- charts ----------------------------------------------------------------------------


def layers(chart) -> dict[str, dict]:
    return {layer["name"]: layer for layer in chart.to_dict()["layer"]}


def test_the_timeline_chart_draws_the_curve_the_peaks_and_the_steps():
    record = build_record(timeline=50, steps=3, step_times_s="[1.5, 0.25, 0.5]")
    samples = store.samples_table(record.run_id, record.samples).to_pandas()
    chart = charts_sweeps.memory_timeline(
        browse.timeline(samples),
        browse.peak_marks(record.row()),
        browse.step_ends(record.row(), samples),
    )
    spec = chart.to_dict()
    drawn = layers(chart)
    assert list(drawn) == ["steps", "timeline", "peaks"]
    assert drawn["timeline"]["encoding"]["y"]["field"] == "rss_gib"
    assert drawn["peaks"]["mark"]["type"] == "rule"
    marks = spec["datasets"][drawn["peaks"]["data"]["name"]]
    assert [m["mark"] for m in marks] == [
        "sampled peak",
        "kernel high-water mark",
        "after framework import",
    ]
    assert len(spec["datasets"][drawn["steps"]["data"]["name"]]) == 3


def test_a_timeline_without_steps_has_no_step_layer():
    record = build_record(timeline=5, status="oom")
    samples = store.samples_table(record.run_id, record.samples).to_pandas()
    chart = charts_sweeps.memory_timeline(
        browse.timeline(samples),
        browse.peak_marks(record.row()),
        browse.step_ends(record.row(), samples),
    )
    assert list(layers(chart)) == ["timeline", "peaks"]


def test_the_peaks_chart_colours_the_peaks_by_machine(runs):
    peaks = browse.batch_peaks(profiles.with_keys(runs), batch_size=1)
    chart = charts_sweeps.peaks_by_machine(peaks)
    drawn = layers(chart)
    assert drawn["measured"]["encoding"]["color"]["field"] == "machine"
    assert drawn["measured"]["encoding"]["x"]["field"] == "side"
    spec = chart.to_dict()
    # Both layers share the chart's one data set.
    points = spec["datasets"][spec["data"]["name"]]
    assert {p["host"] for p in points} == {"big", "small"}
    assert len({p["machine"] for p in points}) == 2


# --- uploads ---------------------------------------------------------------------------


def exported(tmp_path: Path, suffix: str, *records) -> tuple[bytes, bytes]:
    source = tmp_path / "source.duckdb"
    store.insert_runs(source, records)
    runs_file, samples_file = tmp_path / f"runs{suffix}", tmp_path / f"samples{suffix}"
    exchange.export_runs(source, runs_file, samples_file)
    return runs_file.read_bytes(), samples_file.read_bytes()


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_uploaded_exports_are_imported_with_their_timelines(tmp_path: Path, suffix: str):
    runs_bytes, samples_bytes = exported(
        tmp_path, suffix, build_record(timeline=4), build_record(timeline=3)
    )
    db = tmp_path / "target.duckdb"
    count = import_uploads(
        db, Upload(f"r{suffix}", runs_bytes), Upload(f"t{suffix}", samples_bytes)
    )
    assert count == 2 and len(store.load_runs(db)) == 2 and len(store.load_samples(db)) == 7


def test_a_bad_upload_names_the_uploaded_file_and_stores_nothing(tmp_path: Path):
    runs_bytes, _ = exported(tmp_path, ".csv", build_record())
    broken = runs_bytes.replace(b",16,16,16,", b",16,sixteen,16,", 1)
    db = tmp_path / "target.duckdb"
    with pytest.raises(DataFileError) as caught:
        import_uploads(db, Upload("from-the-lab.csv", broken))
    message = str(caught.value)
    assert message.startswith("from-the-lab.csv: ") and "memplan-upload-" not in message
    assert "sixteen" in message
    assert store.load_runs(db).empty


def test_an_upload_of_another_type_is_refused_by_its_suffix(tmp_path: Path):
    with pytest.raises(DataFileError, match="notes.txt: unsupported file type '.txt'"):
        import_uploads(tmp_path / "t.duckdb", Upload("notes.txt", b"hello"))


def test_an_uploaded_name_cannot_point_outside_the_temporary_folder(tmp_path: Path):
    runs_bytes, _ = exported(tmp_path, ".csv", build_record())
    assert import_uploads(tmp_path / "t.duckdb", Upload("../../etc/runs.csv", runs_bytes)) == 1
