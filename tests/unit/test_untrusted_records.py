"""Issue 27, finding 3: pending records and a Slurm job's node.json pass an import's checks.

Before, `profiling.pending` stored whatever a file said (a 9e18-byte peak, a
33^3 image, batch 0, -3 steps, NaN wall time), a string in an integer column
crashed every later sweep until the file was deleted, and a node.json that is a
list crashed the submitter while one that is an object filled peak and batch
into an unmeasured row. These tests parse files only: no child is run.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core import database, profiles, store
from core.records import PeakBound
from profiling import pending, slurm, slurm_job, slurm_points
from profiling.runner import RunSettings
from tests.conftest import build_record


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "runs.duckdb")


def _pending_file(db: Path, name: str, **changes) -> Path:
    record = build_record(timeline=2)
    values = json.loads(pending.to_json(record))
    values["run"].update(changes)
    path = pending.pending_dir(db) / f"{name}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(values))
    return path


BAD_RECORDS = {
    "huge_peak": ({"peak_hwm_bytes": 9 * 10**18}, "row 1: 9000000000000000000 is too"),
    "odd_image": ({"depth": 33, "height": 33, "width": 33}, "is not a valid workload"),
    "batch_zero": ({"batch_size": 0}, "is not a valid workload"),
    "negative_steps": ({"steps": -3}, "column steps, row 1: -3 is negative"),
    "nan_wall": ({"wall_s": math.nan}, "column wall_s, row 1: nan is not a finite number"),
    "text_int": ({"batch_size": "lots"}, "column batch_size, row 1: 'lots' is not a whole number"),
    "ok_no_peak": ({"peak_hwm_bytes": None}, "status is ok but peak_hwm_bytes is empty"),
    "bad_status": ({"status": "great"}, "'great' is not one of"),
    "foreign_column": ({"evil": 1}, "evil is not a column of runs"),
    "host_run_no_ram": ({"total_ram_bytes": None}, "row 1: total_ram_bytes is empty; it needs"),
    "gpu_run_no_device": ({"memory_target": "gpu_memory"}, "row 1: gpu_name is empty; it needs"),
}  # fmt: skip


def test_implausible_pending_records_are_quarantined_and_never_stored(db: Path, capsys) -> None:
    files = {name: _pending_file(db, name, **change) for name, (change, _) in BAD_RECORDS.items()}
    good = build_record(timeline=2)
    pending.save(db, good)

    assert pending.ingest(db) == 1

    assert store.load_runs(db)["run_id"].tolist() == [good.run_id]
    err = capsys.readouterr().err
    for name, (_, message) in BAD_RECORDS.items():
        bad = files[name].with_name(files[name].name + ".bad")
        assert bad.exists(), name
        assert f"{files[name]} was refused and moved to {bad}: {files[name]}: " in err
        assert message in err, (name, message)
    # The next sweep starts cleanly: nothing left to crash on.
    assert pending.ingest(db) == 0
    assert len(store.load_runs(db)) == 1


def test_a_pending_record_from_before_schema_9_is_stored_as_a_host_ram_run(db: Path) -> None:
    path = _pending_file(db, "before-9")
    values = json.loads(path.read_text())
    for name in ("memory_target", "gpu_name", "allocated_peak_bytes", "context_bytes"):
        del values["run"][name]  # the columns a schema-8 memplan did not write
    path.write_text(json.dumps(values))

    assert pending.ingest(db) == 1

    assert store.load_runs(db)["memory_target"].tolist() == ["host_ram"]


NOT_RECORDS = ["[1, 2]", '{"run": [1]}', '{"run": {}}', '{"samples": []}', "nul"]


@pytest.mark.parametrize("text", [*NOT_RECORDS, '{"run": {"run_id": "x"}, "samples": 5}'])
def test_a_pending_file_that_is_not_a_record_is_quarantined(db: Path, text: str, capsys) -> None:
    path = pending.pending_dir(db) / "junk.json"
    path.parent.mkdir()
    path.write_text(text)
    assert pending.ingest(db) == 0
    assert path.with_name("junk.json.bad").exists()
    assert "junk.json was refused and moved to" in capsys.readouterr().err


def test_a_bad_sample_in_a_pending_record_is_refused(db: Path, capsys) -> None:
    record = build_record(timeline=2)
    values = json.loads(pending.to_json(record))
    values["samples"].append([0.1, -5])
    path = pending.pending_dir(db) / "samples.json"
    path.parent.mkdir()
    path.write_text(json.dumps(values))
    assert pending.ingest(db) == 0
    assert "column rss_bytes, row 3: -5 is negative" in capsys.readouterr().err


def test_a_second_bad_file_of_the_same_name_keeps_the_first(db: Path) -> None:
    for _ in range(2):
        _pending_file(db, "same", steps=-1)
        pending.ingest(db)
    names = sorted(p.name for p in pending.pending_dir(db).iterdir())
    assert names == ["same.json.2.bad", "same.json.bad"]


# --- node.json of a job that left no record --------------------------------------------------


def _point(tmp_path: Path) -> tuple[slurm_points.ClusterPoint, Path]:
    record = build_record()
    from core import workloads

    config = workloads.get("unet3d").config_from_row(record.row())
    point = slurm_points.ClusterPoint(
        point_id="p1",
        config=config,
        repeat=0,
        bound=PeakBound(bound_bytes=2**30, source="estimate"),
        mem_bytes=2 * 2**30,
        run_id="r1",
        jobs=["7_0"],
    )
    points = tmp_path / "points"
    points.mkdir()
    return point, points


PARTITION = slurm.Partition(name="debug", max_memory_bytes=16 * 2**30, max_cpus=4)


SETTINGS = RunSettings(memory_limit_bytes=2**30)


def _unmeasured(point, points: Path):
    ended = slurm_points.Unmeasured("interrupted", "cancelled", "s1", points, PARTITION)
    return slurm_points.unmeasured_record(point, ended, SETTINGS)


@pytest.mark.parametrize(
    "text", ["[1, 2, 3]", "{broken", '{"cpu_cores": "many"}', '{"total_ram_bytes": 5}', "7"]
)
def test_a_bad_node_json_is_quarantined_and_the_partition_used(tmp_path, text, capsys) -> None:
    point, points = _point(tmp_path)
    node = slurm_job.node_path(points, point.point_id)
    node.write_text(text)

    record = _unmeasured(point, points)

    assert record.hostname == "slurm:debug" and record.cpu_model == profiles.UNKNOWN
    assert record.run_id == "r1" and record.status == "interrupted"
    assert not node.exists() and node.with_name(node.name + ".bad").exists()
    assert f"{node} was refused and moved to" in capsys.readouterr().err


def test_a_node_json_cannot_fill_measurements_or_the_configuration(tmp_path) -> None:
    point, points = _point(tmp_path)
    node = slurm_job.node_path(points, point.point_id)
    facts = {"hostname": "node7", "cpu_cores": 64, "slurm_job_id": "7_0"}
    forged = {"peak_hwm_bytes": 10**12, "batch_size": 512, "status": "ok", "run_id": "other"}
    node.write_text(json.dumps(facts | forged))

    record = _unmeasured(point, points)

    assert (record.hostname, record.cpu_cores) == ("node7", 64)
    assert record.peak_hwm_bytes is None and record.batch_size == point.config.batch_size
    assert (record.status, record.run_id) == ("interrupted", "r1")
