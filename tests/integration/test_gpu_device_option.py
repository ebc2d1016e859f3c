"""``--device cuda`` where it cannot train: one line saying why, exit 2, nothing stored.

On a machine without an NVIDIA GPU (skipped where there is one: `pytest -m gpu` covers
it there). The check asks torch in a fresh interpreter, so it costs a torch import.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.integration.test_profiling_cli import SMALLEST, memplan

pytestmark = pytest.mark.torch


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_a_run_on_a_gpu_this_machine_lacks_is_one_line_and_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "memplan.duckdb"
    done = memplan("run", "--framework", "torch", "--device", "cuda", *SMALLEST, "--db", str(db))
    assert done.returncode == 2
    assert done.stderr == (
        "error: --device cuda: this machine has no CUDA GPU that torch can use; "
        "give --device cpu, or run on a GPU machine\n"
    )
    assert not db.exists()
