"""`memplan run --framework torch`: the profiled child trains the workload's native PyTorch model.

One real child on the least a U-Net trains (16^3, 4 filters, 2 levels, one step: about
15 s here), measured as a TensorFlow run is (memory_profiler samples, VmHWM), stored
with its framework, and a machine profile of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from core import frameworks, machine, profiles, store

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[2]
SMALLEST = ["--image-size", "16", "--base-filters", "4", "--levels", "2", "--steps", "1"]


def _without_tensorflow(tmp_path: Path) -> dict[str, str]:
    """An environment in which importing TensorFlow or Keras fails, in every process."""
    poisoned = tmp_path / "no_tensorflow"
    for name in ("tensorflow", "keras"):
        (poisoned / name).mkdir(parents=True)
        (poisoned / name / "__init__.py").write_text(
            f"raise ImportError('a torch run imported {name}')\n"
        )
    return {**os.environ, "PYTHONPATH": str(poisoned)}


def test_a_torch_run_is_measured_like_a_tensorflow_run_and_is_a_profile_of_its_own(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.duckdb"
    result = subprocess.run(
        [sys.executable, "-m", "memplan", "run", "--framework", "torch", *SMALLEST]
        + ["--db", str(db)],
        cwd=REPO,
        env=_without_tensorflow(tmp_path),
        capture_output=True,
        text=True,
        timeout=600,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    [run] = store.load_runs(db).to_dict("records")
    assert (run["status"], run["framework"]) == ("ok", "torch")
    assert run["framework_version"] == frameworks.version(frameworks.TORCH)
    # torch's own threads beside TensorFlow's, which a torch run has none of.
    assert run["torch_intra_op_threads"] >= 1 and pd.isna(run["intra_op_threads"])
    # Sampled and high-water mark, as for TensorFlow: the torch import is the baseline.
    assert run["peak_sampled_bytes"] >= run["baseline_bytes"] > 100 * 2**20
    assert run["peak_hwm_bytes"] >= 0.99 * run["peak_sampled_bytes"]
    assert len(json.loads(run["step_times_s"])) == len(json.loads(run["step_hwm_bytes"])) == 1
    assert len(store.load_samples(db, [run["run_id"]])) >= 3
    # Its own profile, the one a torch sweep here resumes by, never TensorFlow's.
    profile = profiles.profile_of(run)
    assert profile.key == machine.this_profile(framework=frameworks.TORCH).key
    assert profile.key != machine.this_profile().key
    minor = ".".join(run["framework_version"].split(".")[:2])
    assert profile.label.endswith(f"PyTorch {minor}")
