"""GPU runs as JSON lines (`core.device_runs`): the H200 measurements read back, bad lines refused.

The rows are those of the shared GPU measurements (data/gpu/h200-torch-2026-11-28.jsonl,
a copy of shared gpu/: memplan's own PyTorch networks on one NVIDIA H200).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.device_runs import GpuDevice, parse_line, read_lines
from core.errors import DataFileError

H200_RUNS = Path(__file__).resolve().parents[2] / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"
FIRST = json.loads(H200_RUNS.read_text().splitlines()[0])


def _line(**changes: object) -> str:
    fields = {**FIRST, **changes}
    return json.dumps({k: v for k, v in fields.items() if v is not ...})


def test_every_h200_line_reads_as_a_run_of_one_device():
    runs = read_lines(H200_RUNS, default_alloc_conf="")

    assert len(runs) == 50
    assert {run.device for run in runs} == {
        GpuDevice(
            name="NVIDIA H200",
            total_bytes=150_109_880_320,
            compute_capability="9.0",
            driver="580.159.04",
            cuda="13.0",
            cudnn="9.19.0",
            framework="torch",
            framework_version="2.11.0+cu130",
            alloc_conf="",
        )
    }
    assert {run.status for run in runs} == {"ok"}
    assert {run.config.workload for run in runs} == {"unet3d", "alexnet"}


def test_the_figures_are_the_allocators_and_nvmls_as_measured():
    run = read_lines(H200_RUNS, default_alloc_conf="")[0]  # the U-Net, 32^3 at batch 1

    assert run.config.image_shape == (32, 32, 32) and run.config.batch_size == 1
    assert run.config.base_filters == 16 and run.config.levels == 5  # null: the defaults
    assert run.allocated_peak_bytes == 114_103_808
    assert run.reserved_peak_bytes == 134_217_728
    assert run.nvml_used_peak_bytes == 804_061_184
    assert run.context_bytes == 650_969_088
    assert run.steps == 6 and len(run.step_times_s) == 6


def test_mixed_precision_lines_keep_their_precision():
    runs = read_lines(H200_RUNS, default_alloc_conf="")

    bf16 = [run for run in runs if run.config.precision == "mixed_bfloat16"]
    assert len(bf16) == 14


def test_a_line_without_the_allocator_setting_needs_it_said():
    with pytest.raises(DataFileError, match="line 1, field 'alloc_conf': missing"):
        parse_line("runs.jsonl", 1, _line(), default_alloc_conf=None)

    run = parse_line("runs.jsonl", 1, _line(alloc_conf="expandable_segments:True"), None)
    assert run.device.alloc_conf == "expandable_segments:True"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"allocated_peak_bytes": -5}, "field 'allocated_peak_bytes': -5 is not a positive"),
        (
            {"reserved_peak_bytes": 2**50},
            "field 'reserved_peak_bytes': .* more than the device has",
        ),
        ({"nvml_used_peak_bytes": ...}, "field 'nvml_used_peak_bytes': missing"),
        ({"gpu_name": ...}, "field 'gpu_name': missing"),
        ({"cudnn": "nine"}, "field 'cudnn': 'nine' is not a cuDNN version"),
        ({"workload": "resnet"}, "field 'workload': unknown workload 'resnet'"),
        ({"shape": "32x32"}, "field 'shape': not a unet3d configuration"),
        ({"status": "fine"}, "field 'status': 'fine' is not one of ok, oom, error"),
        ({"allocated_peak_bytes": 200_000_000}, "larger than reserved_peak_bytes"),
        ({"step_s": [0.1, -1]}, "field 'step_s'"),
        ({"gpu_name": "H200\x1b[2J"}, "field 'gpu_name': not a plain text"),
    ],
)
def test_a_bad_line_is_refused_naming_the_line_and_the_field(changes, message):
    with pytest.raises(DataFileError, match=message):
        parse_line("runs.jsonl", 7, _line(**changes), default_alloc_conf="")


def test_nan_and_infinity_are_not_measurements():
    text = _line().replace('"allocated_peak_bytes": 114103808', '"allocated_peak_bytes": NaN')

    with pytest.raises(
        DataFileError, match="line 3, field 'allocated_peak_bytes': nan is not a positive whole"
    ):
        parse_line("runs.jsonl", 3, text, default_alloc_conf="")


def test_one_bad_line_and_nothing_is_read(tmp_path):
    lines = H200_RUNS.read_text().splitlines()
    lines[30] = _line(gpu_total_bytes=10)

    with pytest.raises(DataFileError, match="line 31, field 'gpu_total_bytes'"):
        read_lines(tmp_path / "runs.jsonl", lines, default_alloc_conf="")


def test_an_oom_line_needs_no_peaks():
    run = parse_line(
        "runs.jsonl",
        1,
        _line(
            status="oom",
            error="CUDA out of memory. Tried to allocate 2.00 GiB",
            allocated_peak_bytes=None,
            reserved_peak_bytes=None,
            nvml_used_peak_bytes=None,
        ),
        default_alloc_conf="",
    )

    assert run.status == "oom" and run.allocated_peak_bytes is None
    assert run.message.startswith("CUDA out of memory")
