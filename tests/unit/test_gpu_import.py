"""GPU runs through memplan's own import: the H200 lines stored as one GPU profile's runs.

`memplan import FILE.jsonl` reads GPU runs measured by an outside script
(`core.device_runs`), stores each as a run whose target is GPU memory
(`core.targets`), checked as any import is: all or nothing, every bad line one
message naming the line and the field. Host-RAM readers never see them.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from core import database, datafiles, device_records, device_runs, profiles, store
from core.errors import DataFileError
from memplan import cli
from profiling import exchange

H200_RUNS = Path(__file__).resolve().parents[2] / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"
LINES = H200_RUNS.read_text().splitlines()
SCHEMA8_DB = Path(__file__).resolve().parents[1] / "fixtures" / "schema8" / "memplan.duckdb"


def _tampered(tmp_path: Path, number: int, **changes: object) -> Path:
    """The H200 file with line ``number`` changed (a value of ``...``: the field removed)."""
    lines = list(LINES)
    fields = {**json.loads(lines[number - 1]), **changes}
    lines[number - 1] = json.dumps({k: v for k, v in fields.items() if v is not ...})
    path = tmp_path / H200_RUNS.name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_the_h200_lines_import_as_fifty_runs_of_one_gpu_profile(tmp_path: Path, capsys) -> None:
    db = tmp_path / "memplan.duckdb"

    code = cli.main(["import", str(H200_RUNS), "--alloc-conf", "", "--db", str(db)])

    assert code == 0
    assert capsys.readouterr().out == f"imported 50 run(s) into {db}\n"
    runs = store.load_runs(db, store.RunFilter(target="gpu_memory"))
    assert len(runs) == 50 and set(runs["memory_target"]) == {"gpu_memory"}
    [profile] = profiles.profiles_in(runs).values()
    assert profile.gpu is not None and profile.gpu.name == "NVIDIA H200"
    assert profile.gpu.total_bytes == 150_109_880_320 and profile.gpu.cudnn == "9.19.0"
    assert profile.label == (
        "NVIDIA H200 (139.80 GiB usable), compute 9.0, CUDA 13.0, PyTorch 2.11, allocator default"
    )
    first = runs.set_index("allocated_peak_bytes").loc[114_103_808]  # 32^3 at batch 1
    assert (first["workload"], first["depth"], first["batch_size"]) == ("unet3d", 32, 1)
    assert first["nvml_used_peak_bytes"] == 804_061_184 and first["context_bytes"] == 650_969_088
    # When: the date the file's name carries. What the script did not measure: NULL.
    assert set(runs["created_at"]) == {"2026-11-28T00:00:00+00:00"}
    assert runs[["peak_hwm_bytes", "hostname", "total_ram_bytes", "cpu_model"]].isna().all().all()


def test_host_ram_readers_never_see_gpu_runs(tmp_path: Path, make_record) -> None:
    db = tmp_path / "memplan.duckdb"
    host = make_record()
    store.insert_run(db, host)
    exchange.import_runs(db, H200_RUNS, alloc_conf="")

    assert list(store.load_runs(db)["run_id"]) == [host.run_id]  # host RAM unless asked
    assert len(store.load_runs(db, store.RunFilter(target=None))) == 51
    assert len(profiles.profiles_in(store.load_runs(db, store.RunFilter(target=None)))) == 2


def test_a_migrated_schema_8_database_takes_gpu_runs_and_answers_as_before(tmp_path: Path) -> None:
    db = Path(shutil.copy(SCHEMA8_DB, tmp_path / "memplan.duckdb"))
    database.ensure_database(db)  # migrated to schema 9
    before = store.load_runs(db)

    exchange.import_runs(db, H200_RUNS, alloc_conf="")

    # What host-RAM answers read is what it was; the GPU runs are one profile beside it.
    pd.testing.assert_frame_equal(store.load_runs(db), before)
    every = profiles.profiles_in(store.load_runs(db, store.RunFilter(target=None)))
    assert len(every) == len(profiles.profiles_in(before)) + 1
    assert [p.target.label for p in every.values()].count("GPU memory") == 1


def test_importing_the_same_lines_again_stores_nothing_twice(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    exchange.import_runs(db, H200_RUNS, alloc_conf="")

    with pytest.raises(DataFileError, match=r"50 run\(s\) already stored in .*imported"):
        exchange.import_runs(db, H200_RUNS, alloc_conf="")

    assert len(store.load_runs(db, store.RunFilter(target=None))) == 50


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"allocated_peak_bytes": -5},
            "line 7, field 'allocated_peak_bytes': -5 is not a positive whole number of bytes",
        ),
        (
            {"reserved_peak_bytes": 2 * 150_109_880_320},
            "line 7, field 'reserved_peak_bytes': 279.60 GiB is more than the device has "
            "(139.80 GiB, gpu_total_bytes)",
        ),
        ({"gpu_name": ...}, "line 7, field 'gpu_name': missing; every GPU line names it"),
        ({"workload": "resnet"}, "line 7, field 'workload': unknown workload 'resnet'"),
        (
            {"nvml_used_peak_bytes": float("nan")},
            "line 7, field 'nvml_used_peak_bytes': nan is not a positive whole number of bytes",
        ),
    ],
    ids=["negative_peak", "peak_over_the_device", "no_gpu_name", "unknown_workload", "nan_peak"],
)
def test_a_tampered_line_is_refused_naming_line_and_field_and_nothing_is_stored(
    tmp_path: Path, changes: dict[str, object], expected: str
) -> None:
    db = tmp_path / "memplan.duckdb"
    path = _tampered(tmp_path, 7, **changes)

    with pytest.raises(DataFileError) as refused:
        exchange.import_runs(db, path, alloc_conf="")

    assert str(refused.value).startswith(f"{path}, {expected}")
    assert "\n" not in str(refused.value)
    assert store.load_runs(db, store.RunFilter(target=None)).empty


def test_a_file_without_a_date_needs_the_time_it_was_measured(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(LINES[0] + "\n")
    db = tmp_path / "memplan.duckdb"

    with pytest.raises(DataFileError, match="the name carries no date .* --created-at"):
        exchange.import_runs(db, path, alloc_conf="")
    exchange.import_runs(db, path, created_at="2026-11-27T18:00:00+00:00", alloc_conf="")

    assert list(store.load_runs(db, store.RunFilter(target=None))["created_at"]) == [
        "2026-11-27T18:00:00+00:00"
    ]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_gpu_runs_round_trip_through_an_export(tmp_path: Path, suffix: str) -> None:
    db, copy = tmp_path / "memplan.duckdb", tmp_path / "copy.duckdb"
    exchange.import_runs(db, H200_RUNS, alloc_conf="")
    exported = tmp_path / f"runs{suffix}"

    assert exchange.export_runs(db, exported) == 50
    assert exchange.import_runs(copy, exported) == 50

    pd.testing.assert_frame_equal(
        store.load_runs(copy, store.RunFilter(target=None)),
        store.load_runs(db, store.RunFilter(target=None)),
    )


# --- the checks every import runs, on a GPU run's row -------------------------------------


def _gpu_row(**changes: object) -> dict[str, object]:
    """Line 1 of the H200 file as the ``runs`` row an import stores, with ``changes``."""
    [run] = device_runs.read_lines(H200_RUNS, LINES[:1], default_alloc_conf="")
    row = device_records.run_row(run, "gpu-1", "2026-11-28T00:00:00+00:00")
    return {**row, **changes}


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"allocated_peak_bytes": 200_000_000},
            "row 1 (run gpu-1), field allocated_peak_bytes: 200000000 is larger than "
            "reserved_peak_bytes (134217728); the caching allocator holds every byte it hands out",
        ),
        (
            {"nvml_used_peak_bytes": 150_109_880_321},
            "row 1 (run gpu-1), field nvml_used_peak_bytes: 139.80 GiB is more than the device "
            "has (139.80 GiB, gpu_total_bytes)",
        ),
        (
            {"context_bytes": 0},
            "row 1 (run gpu-1), field context_bytes: 0 is not a positive number of bytes",
        ),
        (
            {"gpu_driver": None},
            "row 1: gpu_driver is empty; it needs text (run gpu-1: a GPU memory run records "
            "gpu_name, gpu_total_bytes,",
        ),
        (
            {"reserved_peak_bytes": None},
            "row 1 (run gpu-1): status is ok but reserved_peak_bytes is empty; an ok GPU memory "
            "run has allocated_peak_bytes, reserved_peak_bytes, nvml_used_peak_bytes, "
            "context_bytes",
        ),
        (
            {"memory_target": "tpu_memory"},
            "row 1 (run gpu-1), field memory_target: 'tpu_memory' is not one of host_ram, "
            "gpu_memory",
        ),
    ],
    ids=[
        "allocated_over_reserved",
        "peak_over_the_device",
        "no_context",
        "no_device_fact",
        "ok_without_its_figures",
        "unknown_target",
    ],
)
def test_a_gpu_run_that_could_not_have_been_measured_is_refused(
    changes: dict[str, object], expected: str
) -> None:
    with pytest.raises(DataFileError) as refused:
        datafiles.check_record(Path("runs.csv"), _gpu_row(**changes), [])

    assert str(refused.value).startswith(f"runs.csv: {expected}")


def test_a_host_ram_run_with_a_gpu_figure_is_refused(make_record) -> None:
    row = {**make_record().row(), "reserved_peak_bytes": 2**30}

    with pytest.raises(DataFileError, match="field reserved_peak_bytes: must be empty for a host"):
        datafiles.check_record(Path("runs.csv"), row, [])


def test_a_gpu_run_needs_no_host_facts_but_a_host_ram_run_does(make_record) -> None:
    datafiles.check_record(Path("runs.csv"), _gpu_row(), [])  # host facts NULL: accepted
    row = {**make_record().row(), "total_ram_bytes": None}

    with pytest.raises(DataFileError, match="row 1: total_ram_bytes is empty; it needs a whole"):
        datafiles.check_record(Path("runs.csv"), row, [])


def test_list_shows_gpu_runs_with_their_figures_only_when_asked(tmp_path: Path, capsys) -> None:
    db = tmp_path / "memplan.duckdb"
    exchange.import_runs(db, H200_RUNS, alloc_conf="")

    assert cli.main(["list", "--db", str(db)]) == 0
    assert capsys.readouterr().out == "no runs match\n"  # host RAM unless asked
    assert cli.main(["list", "--target", "gpu_memory", "--csv", "--db", str(db)]) == 0

    listed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    assert len(listed) == 50
    assert {"allocated_peak_bytes", "reserved_peak_bytes", "gpu_name"} <= set(listed.columns)
    assert "peak_hwm_bytes" not in listed.columns
