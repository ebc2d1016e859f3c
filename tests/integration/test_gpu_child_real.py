"""memplan's GPU child on a real CUDA GPU (``pytest -m gpu``); skipped, saying why, elsewhere.

Each test trains in a fresh child on GPU 0, as `memplan run --device cuda` does: one
configuration that fits (its allocator peaks, NVML used memory, context and facts
recorded, the run stored as GPU memory), one that cannot (``oom``, with the allocator's
message), and one of the configurations the outside script measured on the H200
(data/gpu/h200-torch-2026-11-28.jsonl), whose peaks must agree within 2% on that GPU.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import record_files, store, targets
from core.errors import ConfigError
from profiling import folder_compare, gpu
from tests.integration.test_profiling_cli import memplan

pytestmark = [pytest.mark.gpu, pytest.mark.torch]

REPO = Path(__file__).resolve().parents[2]
H200_LINES = REPO / "data" / "gpu" / "h200-torch-2026-11-28.jsonl"


@pytest.fixture(scope="module", autouse=True)
def a_gpu() -> None:
    """Skip every test here, with the reason, on a machine without a CUDA GPU to train on."""
    if shutil.which("nvidia-smi") is None:
        pytest.skip("no NVIDIA GPU here (no nvidia-smi); `pytest -m gpu` needs one")
    try:
        gpu.check_available("cuda", sys.executable)
    except ConfigError as error:
        pytest.skip(str(error))


def test_a_run_on_the_gpu_records_the_devices_figures_and_facts(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    done = memplan(
        *("run", "--framework", "torch", "--device", "cuda", "--image-size", "64"),
        *("--db", str(db)),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    run = store.load_runs(db, store.RunFilter(target=targets.GPU_MEMORY)).iloc[0]
    assert (run["status"], run["memory_target"]) == ("ok", "gpu_memory")
    assert 0 < run["allocated_peak_bytes"] <= run["reserved_peak_bytes"]
    assert run["nvml_used_peak_bytes"] >= run["reserved_peak_bytes"]  # context and cache too
    assert run["context_bytes"] > 0 and run["peak_hwm_bytes"] > 0  # host memory, as today
    assert run["gpu_name"] and run["gpu_total_bytes"] > 2**30 and run["cudnn_version"]


def test_a_configuration_larger_than_the_gpu_is_oom_with_the_allocators_message(
    tmp_path: Path,
) -> None:
    out = tmp_path / "records"
    # 256^3 float32 reserves about 21.5 GB a sample on the H200: this batch cannot fit.
    done = subprocess.run(
        [sys.executable, "-m", "profiling.folder_sweep", "--out", str(out), "--device", "cuda"]
        + ["unet3d:256x256x256:64:float32"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (path,) = record_files.record_paths(out)
    run, _ = record_files.load(path)
    assert (run["status"], run["memory_target"]) == ("oom", "gpu_memory")
    assert "out of memory" in run["message"]


def test_an_h200_configuration_agrees_with_the_outside_scripts_figures(tmp_path: Path) -> None:
    out = tmp_path / "records"
    subprocess.run(
        [sys.executable, "-m", "profiling.folder_sweep", "--out", str(out), "--device", "cuda"]
        + ["unet3d:128x128x128:2:float32"],
        cwd=REPO,
        check=True,
        timeout=600,
    )
    runs = [record_files.load(path)[0] for path in record_files.record_paths(out)]
    (found,) = folder_compare.compare(runs, H200_LINES)
    if runs[0]["gpu_name"] != "NVIDIA H200":
        pytest.skip(f"the outside script measured an H200, this is an {runs[0]['gpu_name']}")
    assert abs(found.percent("allocated_peak_bytes")) <= 2.0, found.line()
    assert abs(found.percent("reserved_peak_bytes")) <= 2.0, found.line()
