"""The GPU child's whole flow (`profiling.child --device cuda`) on the CPU, CUDA faked.

No GPU here: torch's CUDA calls answer as an H200 did for one configuration, NVML is a
fake module, and the "GPU" torch trains on is the CPU. What is real: the child's
arguments, its order (NVML before torch, the context, the facts, training the workload's
network on the device it is given, the peaks after the last step) and the result file
the runner reads. One tiny configuration, one step, in this process.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from profiling import child, gpu

pytestmark = pytest.mark.torch

H200_ROW = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "gpu" / "h200-torch-2026-11-28.jsonl")
    .read_text()
    .splitlines()[0]
)
BEFORE = H200_ROW["nvml_used_before_bytes"]


class FakeNvml:
    """One GPU whose used memory grows by 100 MB a look, from BEFORE up to the H200's peak."""

    def __init__(self) -> None:
        self.used = BEFORE

    def nvmlInit(self) -> None:
        pass

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlSystemGetDriverVersion(self) -> str:
        return H200_ROW["driver"]

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        used = self.used
        self.used = min(used + 10**8, BEFORE + H200_ROW["nvml_used_peak_bytes"])
        return SimpleNamespace(used=used)


@pytest.fixture
def cuda_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    import torch

    props = SimpleNamespace(
        name=H200_ROW["gpu_name"], total_memory=H200_ROW["gpu_total_bytes"], major=9, minor=0
    )
    monkeypatch.setitem(sys.modules, "pynvml", FakeNvml())
    monkeypatch.setattr(gpu, "torch_device", lambda index: "cpu")
    monkeypatch.setattr(gpu, "NVML_INTERVAL_S", 0.001)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(
        torch.cuda, "max_memory_allocated", lambda i: H200_ROW["allocated_peak_bytes"]
    )
    monkeypatch.setattr(
        torch.cuda, "max_memory_reserved", lambda i: H200_ROW["reserved_peak_bytes"]
    )
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: H200_ROW["cudnn"])


def _child(result: Path) -> dict:
    config = json.dumps(
        {"image_shape": [16, 16, 16], "batch_size": 1, "base_filters": 4, "levels": 2}
    )
    args = ["--workload", "unet3d", "--config", config, "--framework", "torch"]
    args += ["--device", "cuda", "--steps", "1", "--seed", "0", "--result", str(result)]
    assert child.main(args) == 0
    return json.loads(result.read_text())


def test_the_gpu_child_records_the_devices_facts_and_figures_after_training(
    cuda_faked: None, tmp_path: Path
) -> None:
    result = _child(tmp_path / "result.json")
    assert result["phase"] == "done" and len(result["step_times_s"]) == 1
    assert (result["gpu_name"], result["cudnn_version"], result["gpu_driver"]) == (
        "NVIDIA H200",
        "9.19.0",
        "580.159.04",
    )
    assert result["allocated_peak_bytes"] == H200_ROW["allocated_peak_bytes"]
    assert result["nvml_used_peak_bytes"] == H200_ROW["nvml_used_peak_bytes"]
    assert 0 < result["context_bytes"] < result["nvml_used_peak_bytes"]
    assert "device_status" not in result


def test_out_of_device_memory_in_training_is_a_result_not_a_crash(
    cuda_faked: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import torch

    from core.workloads import torch_training

    def out_of_memory(*args: object, **kwargs: object) -> None:
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB.\nmore")

    monkeypatch.setattr(torch_training, "train_steps", out_of_memory)
    result = _child(tmp_path / "result.json")
    assert result["device_status"] == "oom"
    assert result["device_message"] == "CUDA out of memory. Tried to allocate 9.00 GiB."
    assert result["reserved_peak_bytes"] == H200_ROW["reserved_peak_bytes"]
