"""Run records (`core.record_files`): what a folder sweep writes on a machine without
memplan's stack, read back by `memplan import FOLDER`; and the comparison of a folder's
GPU figures with the outside script's (`profiling.folder_compare`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core import datafiles, device_records, device_runs, record_files
from core.errors import DataFileError
from profiling import folder_compare, folder_sweep

REPO = Path(__file__).resolve().parents[2]
H200_LINES = REPO / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"


def h200_runs(count: int) -> list[dict]:
    """The first ``count`` H200 lines as runs rows (as an import of the file stores them)."""
    texts = H200_LINES.read_text().splitlines()[:count]
    return [
        device_records.run_row(
            device_runs.parse_line("h200", number, text, default_alloc_conf=""),
            f"gpu-{number}",
            "2026-11-28T00:00:00+00:00",
        )
        for number, text in enumerate(texts, start=1)
    ]


def test_a_folder_of_records_reads_back_as_the_runs_it_was_written_from(tmp_path: Path) -> None:
    runs = h200_runs(3)
    for number, run in enumerate(runs, start=1):
        record_files.write_record(tmp_path, number, run, [(0.1, 300 * 2**20)])
    table, samples = datafiles.read_record_folder(tmp_path)
    assert table.column("run_id").to_pylist() == ["gpu-1", "gpu-2", "gpu-3"]
    assert table.column("allocated_peak_bytes").to_pylist() == [
        run["allocated_peak_bytes"] for run in runs
    ]
    assert samples.num_rows == 3


def test_a_record_changed_after_it_was_written_is_refused_by_its_checksum(tmp_path: Path) -> None:
    path = record_files.write_record(tmp_path, 1, h200_runs(1)[0], [])
    body = json.loads(path.read_text())
    body["run"]["allocated_peak_bytes"] //= 2  # a nicer figure, by hand
    path.write_text(json.dumps(body))
    with pytest.raises(DataFileError, match="its checksum does not match its run"):
        datafiles.read_record_folder(tmp_path)


def test_a_record_with_a_matching_checksum_is_still_checked_in_full(tmp_path: Path) -> None:
    path = record_files.write_record(tmp_path, 1, h200_runs(1)[0], [])
    body = json.loads(path.read_text())
    body["run"]["reserved_peak_bytes"] = 10**15  # more than the device has
    body["sha256"] = record_files.checksum(body["run"], body["samples"])
    path.write_text(json.dumps(body))
    with pytest.raises(
        DataFileError,
        match=r"001-gpu-1\.json: row 1 .*reserved_peak_bytes: .* more than the device",
    ):
        datafiles.read_record_folder(tmp_path)


def test_a_record_without_its_targets_figures_is_not_written(tmp_path: Path) -> None:
    run = {**h200_runs(1)[0], "nvml_used_peak_bytes": None}
    with pytest.raises(DataFileError, match="lacks nvml_used_peak_bytes"):
        record_files.write_record(tmp_path, 1, run, [])
    assert list(tmp_path.iterdir()) == []


def test_an_empty_folder_or_a_stranger_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no run record"):
        datafiles.read_record_folder(tmp_path)
    (tmp_path / "notes.json").write_text("{}")
    with pytest.raises(DataFileError, match="notes.json: not a memplan run record"):
        datafiles.read_record_folder(tmp_path)


def test_the_comparison_gives_each_figures_difference_in_percent() -> None:
    runs = h200_runs(2)
    runs[0]["allocated_peak_bytes"] = round(runs[0]["allocated_peak_bytes"] * 1.01)
    found = folder_compare.compare(runs, H200_LINES)
    assert [c.label for c in found] == [
        "unet3d 32 batch 1 float32 base_filters 16 levels 5",
        "unet3d 64 batch 1 float32 base_filters 16 levels 5",
    ]
    assert found[0].percent("allocated_peak_bytes") == pytest.approx(1.0, abs=1e-6)
    assert found[1].percent("reserved_peak_bytes") == 0.0
    assert "(+1.00%)" in found[0].line()


def test_a_configuration_is_written_as_the_outside_script_takes_it() -> None:
    config = folder_sweep.parse_config("unet3d:160x160x160:2:float32:16:4")
    assert (config.image_shape, config.batch_size, config.levels) == ((160, 160, 160), 2, 4)
    assert folder_sweep.parse_config("alexnet:224x224:256:mixed_bfloat16").batch_size == 256
    with pytest.raises(Exception, match="WORKLOAD:SHAPE:BATCH:PRECISION"):
        folder_sweep.parse_config("unet3d:128")


def test_the_folder_sweep_needs_only_what_the_child_imports() -> None:
    """No DuckDB, pandas, pyarrow, Streamlit or memory_profiler: a bare GPU image lacks them."""
    blocked = ("duckdb", "pandas", "pyarrow", "streamlit", "memory_profiler", "scipy", "sklearn")
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {blocked!r}:\n"
        "            raise ImportError(f'the folder sweep imported {name}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import profiling.folder_sweep, profiling.folder_compare, profiling.child\n"
        "from profiling.sampler import memory_usage\n"
        "assert memory_usage().__name__ == 'psutil_memory_usage'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_a_folder_sweep_does_not_measure_again_what_its_folder_holds(tmp_path: Path) -> None:
    run = h200_runs(1)[0]  # unet3d 32^3 batch 1 float32, ok
    record_files.write_record(tmp_path, 1, run, [])
    sweep = folder_sweep.FolderSweep(
        out=tmp_path,
        configs=(folder_sweep.parse_config("unet3d:32x32x32:1:float32"),),
        settings=folder_sweep.RunSettings(memory_limit_bytes=2**30, framework="torch"),
        budget_s=60.0,
    )
    assert folder_sweep.run(sweep) == 0  # no child started


def test_a_configuration_given_twice_is_measured_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from core.records import RunRecord

    run = h200_runs(1)[0]  # unet3d 32^3 batch 1 float32, ok
    children = []

    def point(config, settings):
        children.append(config)
        fields = {f.name for f in dataclasses.fields(RunRecord)}
        return RunRecord(**{name: value for name, value in run.items() if name in fields})

    monkeypatch.setattr(folder_sweep, "run_point", point)
    twice = folder_sweep.parse_config("unet3d:32x32x32:1:float32")
    sweep = folder_sweep.FolderSweep(
        out=tmp_path,
        configs=(twice, twice),  # scripts/gpu_sweep.sh lists its spread again in the rest
        settings=folder_sweep.RunSettings(memory_limit_bytes=2**30, framework="torch"),
        budget_s=60.0,
    )
    assert folder_sweep.run(sweep) == 1
    assert len(children) == 1


def test_a_folder_sweep_stops_before_a_point_its_budget_leaves_no_room_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = folder_sweep.FolderSweep(
        out=tmp_path,
        configs=(folder_sweep.parse_config("unet3d:32x32x32:1:float32"),),
        settings=folder_sweep.RunSettings(memory_limit_bytes=2**30, framework="torch"),
        budget_s=1.0,
    )
    assert folder_sweep.run(sweep) == 0
    assert "time budget reached: 1 configuration(s) not run" in capsys.readouterr().out


def test_a_run_whose_record_would_be_refused_is_said_and_the_sweep_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    from core.records import RunRecord

    good = h200_runs(2)[1]
    runs = iter([{**good, "nvml_used_peak_bytes": None}, good])  # NVML missed the first

    def point(config, settings):
        run = next(runs)
        fields = {f.name for f in dataclasses.fields(RunRecord)}
        return RunRecord(**{name: value for name, value in run.items() if name in fields})

    monkeypatch.setattr(folder_sweep, "run_point", point)
    sweep = folder_sweep.FolderSweep(
        out=tmp_path,
        configs=tuple(
            folder_sweep.parse_config(spec)
            for spec in ("unet3d:96x96x96:1:float32", "unet3d:64x64x64:1:float32")
        ),
        settings=folder_sweep.RunSettings(memory_limit_bytes=2**30, framework="torch"),
        budget_s=60.0,
    )
    assert folder_sweep.run(sweep) == 1
    assert "lacks nvml_used_peak_bytes" in capsys.readouterr().out
    assert [p.name[:4] for p in record_files.record_paths(tmp_path)] == ["001-"]
