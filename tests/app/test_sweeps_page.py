"""The Sweeps page on the 46 bundled runs: filters, the runs table, timelines, machines, sweeps;
machines compared, on AlexNet runs measured on two machine profiles; and frameworks
compared, on AlexNet runs measured in TensorFlow and in PyTorch on one machine."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from core import database, profiles, store
from presentation.text import MISSING_CELL
from profiling import sweeplock
from tests.app.helpers import (
    ALEXNET_HOST,
    ALEXNET_SAMPLES,
    OTHER_MACHINE,
    OTHER_MACHINE_SCALE,
    open_page,
    profile_key,
    profile_label,
    shown,
)
from tests.app.torch_runs import ALEXNET_TORCH_SCALE

GIB = 2**30


def sweeps_page() -> AppTest:
    return open_page("dashboard/sweeps_page.py")


def charts(at: AppTest) -> list:
    return list(at.main.get("vega_lite_chart"))


def layers(chart) -> dict[str, dict]:
    return {layer["name"]: layer for layer in json.loads(chart.proto.spec)["layer"]}


def rows_of(chart, layer_name: str) -> list[dict]:
    """The rows a layer draws: Streamlit sends each data set beside the spec, as Arrow."""
    spec = json.loads(chart.proto.spec)
    layer = layers(chart)[layer_name]
    name = layer.get("data", spec.get("data"))["name"]
    [dataset] = [d for d in chart.proto.datasets if d.name == name]
    return pa.ipc.open_stream(dataset.data.data).read_all().to_pylist()


def table_with(at: AppTest, column: str):
    """The first table on the page with this column (a wide table's others are in an expander)."""
    return next(t.value for t in at.main.dataframe if column in t.value.columns)


@pytest.fixture
def runs(shared_reference_db: Path):
    return store.load_runs(shared_reference_db)


def test_the_page_offers_filters_a_table_a_download_and_a_run_picker(shared_reference_db, runs):
    at = sweeps_page()
    assert not at.exception
    assert [m.label for m in at.main.multiselect] == [
        "Workload",
        "Machine",
        "Sweep",
        "Host",
        "Status",
        "Image size",
        "Batch size",
        "Base filters",
        "Precision",
    ]
    assert at.main.multiselect(key="sweeps_workload").options == ["unet3d"]
    assert at.main.multiselect(key="sweeps_status").options == ["ok", "skipped"]
    table = at.main.dataframe[0].value
    assert len(table) == len(runs) == 46
    assert "high-water mark (GiB)" in table.columns and "image (D×H×W or H×W)" in table.columns
    assert set(table_with(at, "workload")["workload"]) == {"unet3d"}
    # The rest of the runs' columns are one click away, each named on the expander.
    [more] = [e for e in at.main.expander if e.label.startswith("More columns: sweep")]
    assert "message" in shown(more.label) and "machine profile" in shown(more.label)
    assert at.main.get("download_button")[0].proto.label == "Download CSV"
    assert at.main.selectbox(key="sweeps_run").label == "Run"


def test_the_runs_table_shows_both_peaks_of_a_run_among_its_first_columns(
    shared_reference_db, runs
):
    at = sweeps_page()

    first = at.main.dataframe[0]
    assert list(first.value.columns) == [
        "run",
        "status",
        "image (D×H×W or H×W)",
        "batch",
        "steps",
        "high-water mark (GiB)",
        "sampled peak (GiB)",
    ]
    headers = json.loads(first.proto.columns)
    assert headers["sampled peak (GiB)"]["label"] == "sampled (GiB)"
    assert "the models fit" in headers["high-water mark (GiB)"]["help"]
    # The newest run first, each peak to the MiB.
    newest = runs.sort_values(["created_at", "run_id"]).iloc[-1]
    for heading, column in [
        ("high-water mark (GiB)", "peak_hwm_bytes"),
        ("sampled peak (GiB)", "peak_sampled_bytes"),
    ]:
        assert first.value[heading][0] == pytest.approx(newest[column] / GIB, abs=1e-3)


def test_filtering_by_status_narrows_the_table(shared_reference_db, runs):
    at = sweeps_page()
    at.main.multiselect(key="sweeps_status").set_value(["skipped"]).run()
    table = at.main.dataframe[0].value
    assert len(table) == (runs["status"] == "skipped").sum() > 0
    assert set(table["status"]) == {"skipped"}
    assert "of 46 runs" in at.main.caption[1].value
    # Skipped points never ran, so there is no timeline to pick.
    assert "None of the runs shown has a timeline" in at.main.info[0].value


def test_knob_filters_combine_with_the_others(shared_reference_db, runs):
    at = sweeps_page()
    at.main.multiselect(key="sweeps_image").set_value(["64×64×64"])
    at.main.multiselect(key="sweeps_batch_size").set_value([2]).run()
    table = at.main.dataframe[0].value
    expected = runs[(runs["depth"] == 64) & (runs["batch_size"] == 2)]
    assert len(table) == len(expected) > 0
    assert set(table["image (D×H×W or H×W)"]) == {"64×64×64"} and set(table["batch"]) == {2}


def test_a_runs_timeline_is_drawn_with_its_peaks_and_steps_marked(shared_reference_db, runs):
    at = sweeps_page()
    # Not the newest run (the default): picking another redraws the chart.
    [run] = runs[(runs["depth"] == 64) & (runs["batch_size"] == 4)].head(1).to_dict("records")
    at = at.main.selectbox(key="sweeps_run").set_value(run["run_id"]).run()
    timeline = charts(at)[0]
    assert set(layers(timeline)) == {"steps", "timeline", "peaks"}
    samples = store.load_samples(shared_reference_db, [run["run_id"]])
    curve = rows_of(timeline, "timeline")
    assert len(curve) == len(samples)
    peak_gib = max(point["rss_gib"] for point in curve)
    assert peak_gib == pytest.approx(run["peak_sampled_bytes"] / GIB)
    peaks = {row["mark"]: row["gib"] for row in rows_of(timeline, "peaks")}
    assert peaks["sampled peak"] == pytest.approx(run["peak_sampled_bytes"] / GIB)
    assert peaks["kernel high-water mark"] == pytest.approx(run["peak_hwm_bytes"] / GIB)
    assert peaks["after framework import"] == pytest.approx(run["baseline_bytes"] / GIB)
    assert len(rows_of(timeline, "steps")) == run["steps"]


def test_machines_are_listed_by_profile_and_compared_at_a_chosen_batch(shared_reference_db, runs):
    at = sweeps_page()
    machines = table_with(at, "this machine")
    [key] = profiles.profiles_in(runs)
    # A machine by name first (issue 42, point 7); its profile key one click away.
    assert list(machines.columns) == ["machine", "this machine"]
    assert list(machines["machine"]) == [
        "Intel Xeon, instruction set unknown, 2 cores, TensorFlow 2.21"
    ]
    # The other columns, named in the expander's label, beside the machine.
    more = table_with(at, "instruction set")
    assert list(more["profile"]) == [key]
    [row] = machines.merge(more, on="machine").to_dict("records")
    # The bundled runs are older than the instruction set, usable cores and threads columns.
    assert (row["instruction set"], row["usable cores"], row["intra-op threads"]) == (
        "unknown",
        "unknown",
        "unknown",
    )
    assert (row["CPUs"], row["RAM (GiB)"], row["TensorFlow"]) == ("2", "24", "2.21.0")
    assert (row["runs"], row["ok runs"], row["this machine"]) == (46, 39, False)
    assert at.main.multiselect(key="sweeps_machine_profile").options == [row["machine"]]
    at = at.main.selectbox(key="sweeps_compare_batch").set_value(2).run()
    comparison = charts(at)[1]
    assert layers(comparison)["measured"]["encoding"]["color"]["field"] == "machine"
    points = rows_of(comparison, "measured")
    ok_at_2 = runs[(runs["status"] == "ok") & (runs["batch_size"] == 2)]
    assert len(points) == len(ok_at_2)
    assert sorted(p["peak_gib"] for p in points) == pytest.approx(
        sorted(ok_at_2["peak_hwm_bytes"] / GIB)
    )


def test_the_sweeps_table_shows_status_and_points_done(reference_db):
    grid = {"image_sizes": ["32", "64"], "batch_sizes": [1, 2]}
    store.create_sweep(reference_db, "sweep0000001", "memplan sweep", grid, 4)
    store.update_sweep(reference_db, "sweep0000001", points_done=3)
    # A running sweep holds the database's sweep lock for as long as it lives.
    with sweeplock.hold(reference_db, "sweep0000001", "memplan sweep", 4):
        at = sweeps_page()
    sweeps = table_with(at, "points done / total")
    [row] = sweeps.to_dict("records")
    assert (row["sweep"], row["status"], row["points done / total"]) == (
        "sweep0000001",
        "running",
        "3 / 4",
    )
    assert row["grid"] == "sizes 32 64; batch 1 2"


def test_a_sweep_left_running_by_a_dead_process_shows_as_interrupted(reference_db):
    grid = {"image_sizes": ["32"], "batch_sizes": [1]}
    store.create_sweep(reference_db, "sweep0000002", "memplan sweep", grid, 1)
    at = sweeps_page()
    [row] = table_with(at, "points done / total").to_dict("records")
    assert (row["sweep"], row["status"]) == ("sweep0000002", "interrupted")


def test_an_empty_database_says_how_to_get_runs(tmp_path, monkeypatch):
    # Created empty by memplan elsewhere (e.g. `memplan list --db`): the page says how to fill it,
    # the first line (`dashboard.first_start`) offering the bundled runs.
    empty = database.ensure_database(tmp_path / "empty.duckdb")
    monkeypatch.setenv(database.DB_ENV_VAR, str(empty))
    at = sweeps_page()
    assert not at.exception
    assert "load the bundled measurements" in at.main.info[0].value
    assert at.main.info[1].value.startswith("No runs stored yet")


# --- AlexNet runs beside the U-Net's ------------------------------------------------------


def test_the_workload_filter_shows_alexnet_runs_with_their_2d_images(shared_alexnet_runs_db):
    runs = store.load_runs(shared_alexnet_runs_db)
    alexnet = runs[runs["workload"] == "alexnet"]
    at = sweeps_page()
    workload = at.main.multiselect(key="sweeps_workload")
    assert workload.options == ["unet3d", "alexnet"]
    assert len(at.main.dataframe[0].value) == len(runs)

    at = workload.set_value(["alexnet"]).run()
    assert not at.exception
    table = at.main.dataframe[0].value
    assert len(table) == len(alexnet) > 0
    assert set(table_with(at, "workload")["workload"]) == {"alexnet"}
    assert {"224", "96", "227x200"} <= set(table["image (D×H×W or H×W)"])
    assert table_with(at, "base filters")["base filters"].isna().all()
    images = at.main.multiselect(key="sweeps_image").options
    assert images[0] == "96" and "227x200" in images and "64×64×64" not in images
    assert f"{len(alexnet)} of {len(runs)} runs" in at.main.caption[1].value


def test_an_alexnet_runs_timeline_is_picked_and_drawn(shared_alexnet_runs_db):
    at = sweeps_page()
    at = at.main.multiselect(key="sweeps_workload").set_value(["alexnet"]).run()
    picker = at.main.selectbox(key="sweeps_run")
    runs = store.load_runs(shared_alexnet_runs_db, store.RunFilter(hostname=ALEXNET_HOST))
    [run] = runs[(runs["height"] == 227) & (runs["width"] == 200)].to_dict("records")
    assert any(
        option.startswith("227x200 batch 4, 1000 classes, float32 · ok · alexnet-host")
        for option in picker.options
    )
    at = picker.set_value(run["run_id"]).run()

    assert not at.exception
    assert at.main.selectbox(key="sweeps_run").value == run["run_id"]
    timeline = charts(at)[0]
    assert len(rows_of(timeline, "timeline")) == ALEXNET_SAMPLES
    peaks = {row["mark"]: row["gib"] for row in rows_of(timeline, "peaks")}
    assert peaks["kernel high-water mark"] == pytest.approx(run["peak_hwm_bytes"] / GIB)


def test_machines_compare_alexnet_peaks_at_the_side_of_their_square(shared_alexnet_runs_db):
    at = sweeps_page()
    at = at.main.multiselect(key="sweeps_workload").set_value(["alexnet"]).run()
    at = at.main.selectbox(key="sweeps_compare_batch").set_value(4).run()
    comparison = charts(at)[1]
    measured = layers(comparison)["measured"]
    assert measured["encoding"]["x"]["title"] == "image side (pixels; square root of H x W)"
    points = rows_of(comparison, "measured")
    assert {p["host"] for p in points} == {ALEXNET_HOST}
    assert {p["network"] for p in points} == {"1000 classes, float32"}
    assert max(p["side"] for p in points) == 224.0


def test_machines_compare_each_workload_on_its_own_side_axis(shared_alexnet_runs_db):
    # Issue 26: U-Net cubes and AlexNet squares shared one "image side" axis.
    runs = store.load_runs(shared_alexnet_runs_db)
    ok = runs[runs["status"] == "ok"]
    shared = sorted(
        set(ok.loc[ok["workload"] == "alexnet", "batch_size"])
        & set(ok.loc[ok["workload"] != "alexnet", "batch_size"])
    )
    assert shared, "the fixture measures both workloads at one batch size"
    at = sweeps_page().main.selectbox(key="sweeps_compare_batch").set_value(shared[0]).run()

    assert not at.exception
    titles = [layers(chart)["measured"]["encoding"]["x"]["title"] for chart in charts(at)[1:3]]
    assert titles == [
        "image side (voxels; cube root of D x H x W)",
        "image side (pixels; square root of H x W)",
    ]


# --- machines compared --------------------------------------------------------------------


def test_one_machine_has_nothing_to_compare_and_the_page_says_how_to_get_another(
    shared_reference_db,
):
    at = sweeps_page()
    [info] = [shown(i.value) for i in at.main.info if "two machine profiles" in i.value]
    assert info.startswith(
        "No configuration among the runs shown was measured on two machine profiles yet."
    )
    assert "memplan calibrate --workload unet3d" in info


def test_the_same_configurations_on_two_machines_are_compared_side_by_side(shared_two_machines_db):
    first, other = profile_label(), profile_label(**OTHER_MACHINE)
    other_key = profile_key(**OTHER_MACHINE)
    at = sweeps_page()
    at = at.main.multiselect(key="sweeps_workload").set_value(["alexnet"]).run()

    machines = table_with(at, "hosts")
    assert set(machines["profile"]) == {profile_key(), other_key}
    assert set(machines["hosts"]) == {ALEXNET_HOST, "vm"}
    reference = at.main.selectbox(key="sweeps_reference_machine")
    assert len(reference.options) == 2
    at = reference.set_value(profile_key()).run()
    table = table_with(at, "x reference")
    # One row per configuration and machine, each machine by name (issue 42: by hash before).
    assert list(table.columns) == ["configuration", "machine", "runs", "peak (GiB)", "x reference"]
    # Every square x batch and the oblong image, measured ok on both: not the oom point.
    assert len(table) == 42
    assert set(table["machine"]) == {first, other}
    ratios = table.groupby("machine")["x reference"]
    assert ratios.get_group(other).tolist() == pytest.approx([2.5] * 21, abs=0.01)
    assert ratios.get_group(first).tolist() == pytest.approx([1.0] * 21)
    chart = charts(at)[2]
    assert set(layers(chart)) == {"spread", "peaks"}
    drawn = rows_of(chart, "peaks")
    assert {row["machine"] for row in drawn} == {first, other}
    assert len(drawn) == 42

    at = at.main.selectbox(key="sweeps_reference_machine").set_value(other_key).run()
    table = table_with(at, "x reference")
    assert table[table["machine"] == first]["x reference"].tolist() == pytest.approx(
        [1 / OTHER_MACHINE_SCALE] * 21, abs=0.01
    )


def test_a_value_never_measured_reads_as_a_dash_not_none(shared_reference_db, runs):
    # Seen on the page before: a skipped run's peaks and an older run's usable cores
    # read "None". Every table on the page shows missing values as MISSING_CELL.
    at = sweeps_page()
    tables = list(at.main.dataframe)
    assert tables, "the page shows its runs and sweeps as tables"
    assert {table.proto.placeholder for table in tables} == {MISSING_CELL}


# --- frameworks compared ------------------------------------------------------------------

FRAMEWORKS_CAPTION = "measured ok in TensorFlow and in PyTorch"


def test_without_both_frameworks_the_page_says_to_run_the_grid_with_torch(shared_reference_db):
    at = sweeps_page()
    [info] = [shown(i.value) for i in at.main.info if "TensorFlow and PyTorch" in i.value]
    assert info.startswith(
        "No configuration among the runs shown was measured in both TensorFlow and PyTorch"
    )
    assert "memplan sweep --workload unet3d --framework torch ..." in info


def test_the_same_configurations_in_two_frameworks_are_compared_with_their_ratio(
    shared_frameworks_db,
):
    at = sweeps_page()
    assert not at.exception
    table = table_with(at, "PyTorch / TensorFlow")
    # Every square x batch and the oblong image, measured ok in both: not the oom point.
    assert len(table) == 21
    assert list(table.columns) == [
        "configuration",
        "TensorFlow peak (GiB)",
        "PyTorch peak (GiB)",
        "PyTorch / TensorFlow",
    ]
    assert table["PyTorch / TensorFlow"].tolist() == pytest.approx(
        [ALEXNET_TORCH_SCALE] * 21, abs=0.01
    )
    [caption] = [shown(c.value) for c in at.main.caption if FRAMEWORKS_CAPTION in c.value]
    assert caption.startswith(
        f"21 configuration(s) {FRAMEWORKS_CAPTION} on one machine "
        "(Intel Test, AVX-512, 8 cores: TensorFlow 2.16 and PyTorch 2.13)"
    )

    # Seed 004's figure: AlexNet's peak against the batch, one line per framework.
    assert at.main.selectbox(key="sweeps_frameworks_image").value == "224"
    [figure] = [chart for chart in charts(at) if set(layers(chart)) == {"lines", "peaks"}]
    drawn = rows_of(figure, "peaks")
    assert layers(figure)["peaks"]["encoding"]["x"]["title"] == "batch size"
    peaks = {(row["framework"], row["batch_size"]): row["peak_gib"] for row in drawn}
    assert sorted(peaks) == [
        (framework, batch)
        for framework in ("PyTorch 2.13", "TensorFlow 2.16")
        for batch in (1, 2, 4, 8)
    ]
    for batch in (1, 2, 4, 8):
        ratio = peaks["PyTorch 2.13", batch] / peaks["TensorFlow 2.16", batch]
        assert ratio == pytest.approx(ALEXNET_TORCH_SCALE, abs=0.01)


def test_frameworks_are_compared_whichever_framework_the_page_shows(shared_frameworks_db):
    at = sweeps_page()
    at = at.main.selectbox(key="sweeps_framework").set_value("torch").run()
    assert not at.exception
    assert len(table_with(at, "PyTorch / TensorFlow")) == 21
    # The configuration filters narrow it, as they narrow every section.
    at = at.main.multiselect(key="sweeps_batch_size").set_value([2]).run()
    assert len(table_with(at, "PyTorch / TensorFlow")) == 5
    # Batch 64 ran out of memory in both: nothing to pair, and the page says what to run.
    at = at.main.multiselect(key="sweeps_batch_size").set_value([64]).run()
    assert any("TensorFlow and PyTorch" in i.value for i in at.main.info)


def test_a_fresh_checkout_compares_the_bundled_frameworks_side_by_side(shared_every_bundle_db):
    """Issue 29: the bundled U-Net and AlexNet grids of the family 26 EPYC, in TensorFlow and
    in PyTorch, side by side with their ratio, on the page a new user opens (data/REFERENCE.md):
    34 U-Net and 35 AlexNet configurations measured ok in both; and the 18 U-Net ones that
    machine measured again in TensorFlow with oneDNN off, beside PyTorch too."""
    at = sweeps_page()
    assert not at.exception
    table = table_with(at, "PyTorch / TensorFlow")
    workloads = table["configuration"].str.split().str[0].value_counts().to_dict()
    assert workloads == {"unet3d": 34 + 18, "alexnet": 35}
    default = table[~table["machine"].str.contains("oneDNN off")]
    assert default["PyTorch / TensorFlow"].between(0.55, 0.86).all()
    [caption] = [shown(c.value) for c in at.main.caption if FRAMEWORKS_CAPTION in c.value]
    assert caption.startswith(
        f"87 configuration(s) {FRAMEWORKS_CAPTION} on the same machine (2 pairs of profiles"
    )
