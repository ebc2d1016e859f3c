"""The GPU child's measuring (`profiling.gpu`), with fake torch and NVML modules built from
the H200 runs the outside script measured (data/gpu/h200-torch-2026-11-28.jsonl): the facts
and figures the child records are the columns an import of the same line stores."""

from __future__ import annotations

import json
import stat
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from core import datafiles, device_records, device_runs, targets, workloads
from core.errors import ConfigError
from profiling import gpu, gpu_tensorflow, runner

H200_LINES = Path(__file__).resolve().parents[2] / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"


def h200_rows() -> list[dict]:
    return [json.loads(line) for line in H200_LINES.read_text().splitlines() if line.strip()]


class FakeOutOfMemoryError(RuntimeError):
    pass


def fake_torch(row: dict) -> SimpleNamespace:
    """torch as the H200 answered it for ``row`` (facts, allocator peaks)."""
    major, minor = row["compute_capability"].split(".")
    props = SimpleNamespace(
        name=row["gpu_name"],
        total_memory=row["gpu_total_bytes"],
        major=int(major),
        minor=int(minor),
    )
    cuda = SimpleNamespace(
        get_device_properties=lambda index: props,
        synchronize=lambda index=None: None,
        max_memory_allocated=lambda index=None: row["allocated_peak_bytes"],
        max_memory_reserved=lambda index=None: row["reserved_peak_bytes"],
        OutOfMemoryError=FakeOutOfMemoryError,
    )
    return SimpleNamespace(
        __version__=row["torch"],
        version=SimpleNamespace(cuda=row["cuda"]),
        backends=SimpleNamespace(cudnn=SimpleNamespace(version=lambda: row["cudnn"])),
        cuda=cuda,
    )


class FakeNvml:
    """pynvml with one device whose used memory the test sets (``used``)."""

    def __init__(self, used: int, driver: str | bytes) -> None:
        self.used, self.driver = used, driver

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return f"handle {index}"

    def nvmlSystemGetDriverVersion(self) -> str | bytes:
        return self.driver

    def nvmlDeviceGetMemoryInfo(self, handle: str) -> SimpleNamespace:
        return SimpleNamespace(used=self.used, total=150_000_000_000)


def imported_columns(row: dict) -> dict:
    """What `memplan import` of ``row`` as a line stores (`core.device_records`)."""
    run = device_runs.parse_line("h200", 1, json.dumps(row), default_alloc_conf="")
    return device_records.run_row(run, "gpu-test", "2026-11-28T00:00:00+00:00")


def test_the_facts_the_child_reads_are_what_an_import_of_each_h200_line_stores() -> None:
    for row in h200_rows():
        facts = gpu.gpu_facts(fake_torch(row), 0, row["driver"], environ={})
        stored = imported_columns(row)
        for column in (*targets.DEVICE_FACT_COLUMNS, "framework_version"):
            assert facts[column] == stored[column], column
    assert facts["cudnn_version"] == "9.19.0" and facts["gpu_compute_capability"] == "9.0"
    assert facts["alloc_conf"] == ""  # unset: the allocator's default


def test_the_allocator_setting_is_a_fact_of_the_run() -> None:
    row = h200_rows()[0]
    environ = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    facts = gpu.gpu_facts(fake_torch(row), 0, row["driver"], environ)
    assert facts["alloc_conf"] == "expandable_segments:True"


def test_the_allocator_peaks_are_the_h200_lines_figures() -> None:
    for row in h200_rows():
        peaks = gpu.allocator_peaks(fake_torch(row), 0)
        stored = imported_columns(row)
        assert peaks == {name: stored[name] for name in peaks}
        assert peaks["allocated_peak_bytes"] <= peaks["reserved_peak_bytes"]


def test_nvml_figures_are_relative_to_what_was_used_before_the_process_touched_cuda() -> None:
    row = h200_rows()[0]  # the first configuration of its process: context measured there
    before = row["nvml_used_before_bytes"]
    nvml = FakeNvml(before, driver=b"580.159.04")  # nvidia-ml-py before 12 answers bytes
    sampler = gpu.NvmlSampler(nvml, 0, interval_s=0.001)
    assert sampler.driver == row["driver"] and sampler.before_bytes == before
    nvml.used = before + row["context_bytes"]  # torch made its context
    assert sampler.since_before() == row["context_bytes"]
    sampler.start()
    nvml.used = before + row["nvml_used_peak_bytes"]  # the training's peak
    deadline = time.monotonic() + 30
    while sampler.peak_bytes < nvml.used and time.monotonic() < deadline:
        time.sleep(0.01)
    nvml.used = before + row["context_bytes"]  # freed again before the end
    assert sampler.stop() == row["nvml_used_peak_bytes"]
    assert imported_columns(row)["nvml_used_peak_bytes"] == row["nvml_used_peak_bytes"]


def test_out_of_device_memory_is_the_allocators_first_line_and_nothing_else_is() -> None:
    torch = fake_torch(h200_rows()[0])
    error = FakeOutOfMemoryError(
        "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
        "139.80 GiB of which 3.10 GiB is free.\nOf the allocated memory ..."
    )
    assert gpu.out_of_memory(error, torch) == (
        "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of "
        "139.80 GiB of which 3.10 GiB is free."
    )
    assert gpu.out_of_memory(RuntimeError("CUDA error: an illegal memory access"), torch) is None


def test_a_device_is_cpu_cuda_or_cuda_n() -> None:
    assert gpu.parse_device("cpu") == ("cpu", 0)
    assert gpu.parse_device("cuda") == ("cuda", 0)
    assert gpu.parse_device("cuda:1") == ("cuda", 1)
    for bad in ("gpu", "cuda:x", "cpu:0", ""):
        with pytest.raises(ConfigError, match="give cpu, cuda or cuda:N"):
            gpu.parse_device(bad)


def _fake_python(tmp_path: Path, answer: str) -> str:
    """An interpreter that answers the device check as torch on some machine would."""
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\necho '{answer}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_a_cuda_device_this_machine_lacks_is_refused_in_one_line(tmp_path: Path) -> None:
    gpu.check_available("cpu", "/nonexistent/python")  # the CPU needs no check
    with pytest.raises(ConfigError, match="this machine has no CUDA GPU that torch can use"):
        gpu.check_available("cuda", _fake_python(tmp_path, "0 True True"))
    with pytest.raises(ConfigError, match=r"this machine has 2 CUDA GPU\(s\)"):
        gpu.check_available("cuda:2", _fake_python(tmp_path, "2 True True"))
    with pytest.raises(ConfigError, match="pip install nvidia-ml-py"):
        gpu.check_available("cuda", _fake_python(tmp_path, "1 True False"))
    gpu.check_available("cuda:1", _fake_python(tmp_path, "2 True True"))
    with pytest.raises(ConfigError, match="this tensorflow is not a GPU build"):
        gpu.check_available("cuda", _fake_python(tmp_path, "0 False True"), "tensorflow")


def test_a_gpu_childs_result_makes_a_gpu_memory_record_that_an_import_accepts() -> None:
    row = h200_rows()[3]
    torch = fake_torch(row)
    result = {
        **gpu.gpu_facts(torch, 0, row["driver"], environ={}),
        **gpu.allocator_peaks(torch, 0),
        "nvml_used_peak_bytes": row["nvml_used_peak_bytes"],
        "context_bytes": row["context_bytes"],
    }
    columns = gpu.device_columns(result)
    stored = imported_columns(row)
    assert columns.pop(targets.TARGET_COLUMN) == targets.GPU_MEMORY
    assert columns == {name: stored[name] for name in columns}
    # A run with these columns passes an import's checks as a GPU run.
    record = {**stored, "run_id": "r1", **gpu.device_columns(result)}
    typed, _ = datafiles.check_record(Path("record.json"), record, [])
    assert typed["memory_target"] == targets.GPU_MEMORY
    # A child that died before it read the GPU leaves a host-RAM record.
    assert gpu.device_columns({"baseline_bytes": 1}) == {}


def _gpu_child_result(row: dict, **more: object) -> dict:
    """What the GPU child leaves in its result file for ``row``'s configuration."""
    torch = fake_torch(row)
    return {
        "phase": "done",
        "baseline_bytes": 900 * 2**20,
        "peak_hwm_bytes": 1200 * 2**20,
        "step_times_s": row["step_s"],
        "step_hwm_bytes": [1200 * 2**20] * len(row["step_s"]),
        "context_bytes": row["context_bytes"],
        "nvml_used_peak_bytes": row["nvml_used_peak_bytes"],
        **gpu.gpu_facts(torch, 0, row["driver"], environ={}),
        **gpu.allocator_peaks(torch, 0),
        **more,
    }


def _run_with_fake_child(monkeypatch, tmp_path: Path, result: dict):
    """`profiling.runner.run_point` on cuda, its child a script that writes ``result``."""
    script = tmp_path / "child.py"
    # It lives a moment, so that the sampler sees the interpreter (an import's check
    # refuses a sampled peak under 1 MiB, all a process that just started may have).
    script.write_text(
        f"import sys, time\nopen(sys.argv[1], 'w').write({json.dumps(result)!r})\ntime.sleep(0.5)\n"
    )
    monkeypatch.setattr(
        runner,
        "child_command",
        lambda config, settings, path, parent_pid=None: [sys.executable, str(script), str(path)],
    )
    config = workloads.get("unet3d").Config(image_shape=(32, 32, 32), batch_size=1)
    settings = runner.RunSettings(
        memory_limit_bytes=8 * 2**30, framework="torch", device="cuda", sample_interval_s=0.02
    )
    return runner.run_point(config, settings)


def test_a_gpu_run_is_recorded_with_its_device_figures_and_passes_an_imports_checks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    row = h200_rows()[0]
    record = _run_with_fake_child(monkeypatch, tmp_path, _gpu_child_result(row))
    assert (record.status, record.memory_target) == ("ok", targets.GPU_MEMORY)
    assert (record.allocated_peak_bytes, record.reserved_peak_bytes) == (114103808, 134217728)
    assert (record.gpu_name, record.cudnn_version, record.alloc_conf) == (
        "NVIDIA H200",
        "9.19.0",
        "",
    )
    assert record.peak_hwm_bytes == 1200 * 2**20  # host memory too, as on the CPU
    # The torch that trained, as it names itself (this process's metadata may not say +cu130).
    assert record.framework_version == row["torch"] == "2.11.0+cu130"
    datafiles.check_record(Path("record.json"), record.row(), [])


def test_out_of_device_memory_is_an_oom_run_with_the_allocators_message(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    message = "CUDA out of memory. Tried to allocate 64.00 GiB."
    result = _gpu_child_result(h200_rows()[0], device_status="oom", device_message=message)
    record = _run_with_fake_child(monkeypatch, tmp_path, result)
    assert (record.status, record.message, record.memory_target) == ("oom", message, "gpu_memory")
    datafiles.check_record(Path("record.json"), record.row(), [])


def test_the_child_is_told_its_device_only_off_the_cpu() -> None:
    config = workloads.get("unet3d").Config(image_shape=(32, 32, 32), batch_size=1)
    on_cpu = runner.RunSettings(memory_limit_bytes=2**30, framework="torch")
    on_gpu = runner.RunSettings(memory_limit_bytes=2**30, framework="torch", device="cuda:1")
    assert "--device" not in runner.child_command(config, on_cpu, Path("r.json"))
    command = runner.child_command(config, on_gpu, Path("r.json"))
    assert command[command.index("--device") + 1] == "cuda:1"


class FakeResourceExhaustedError(RuntimeError):
    pass


def fake_tensorflow(row: dict, peak_bytes: int) -> SimpleNamespace:
    """A GPU build of TensorFlow on ``row``'s H200, its allocator's peak ``peak_bytes``."""
    details = {"device_name": row["gpu_name"], "compute_capability": (9, 0)}
    experimental = SimpleNamespace(
        get_device_details=lambda device: details,
        get_memory_info=lambda name: {"current": 0, "peak": peak_bytes},
    )
    return SimpleNamespace(
        __version__="2.21.0",
        config=SimpleNamespace(experimental=experimental),
        sysconfig=SimpleNamespace(get_build_info=lambda: {"cuda_version": "12.5.1"}),
        errors=SimpleNamespace(ResourceExhaustedError=FakeResourceExhaustedError),
    )


def test_a_tensorflow_gpu_run_records_the_same_columns_and_passes_an_imports_checks() -> None:
    row = h200_rows()[3]
    tf = fake_tensorflow(row, peak_bytes=row["allocated_peak_bytes"])
    facts = gpu_tensorflow.tensorflow_facts(tf, "GPU 0", row["gpu_total_bytes"], "580.159.04", {})
    peaks = gpu_tensorflow.tensorflow_peaks(
        tf, "GPU:0", row["nvml_used_peak_bytes"], row["context_bytes"]
    )
    assert facts["gpu_compute_capability"] == "9.0" and facts["cudnn_version"] == "unknown"
    # TensorFlow publishes no reserved figure: NVML's used peak less the context stands in.
    assert peaks["reserved_peak_bytes"] == row["nvml_used_peak_bytes"] - row["context_bytes"]
    record = {
        **imported_columns(row),
        **facts,
        **peaks,
        "run_id": "tf1",
        "framework": "tensorflow",
    }
    typed, _ = datafiles.check_record(Path("record.json"), record, [])
    assert typed["framework_version"] == "2.21.0"
    error = FakeResourceExhaustedError("OOM when allocating tensor with shape[8,16,256,256,256]")
    assert gpu_tensorflow.out_of_memory(error, tf) == str(error)
    assert gpu_tensorflow.out_of_memory(ValueError("bad shape"), tf) is None
