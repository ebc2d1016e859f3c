"""The GPU sweep's script rehearsed on the CPU: `scripts/gpu_sweep.sh` with ``DEVICE=cpu``.

One real torch child (the least a U-Net trains, one step), run where DuckDB, pandas,
pyarrow and memory_profiler cannot be imported (a bare GPU image has none of them), its
record written to ``$OUT/records``; then `memplan import` of that folder, which refuses
it once it was changed by hand.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from core import record_files
from memplan import cli

pytestmark = pytest.mark.torch

REPO = Path(__file__).resolve().parents[2]
SMALLEST = "unet3d:16x16x16:1:float32:4:2"
# What a bare GPU image lacks: any import of them fails in every process of the script.
NOT_ON_A_GPU_IMAGE = ("duckdb", "pandas", "pyarrow", "streamlit", "memory_profiler")


def _bare_environment(tmp_path: Path, out: Path) -> dict[str, str]:
    poisoned = tmp_path / "bare"
    for name in NOT_ON_A_GPU_IMAGE:
        (poisoned / name).mkdir(parents=True)
        (poisoned / name / "__init__.py").write_text(f"raise ImportError('{name} imported')\n")
    return {
        **os.environ,
        "PYTHONPATH": str(poisoned),
        "OUT": str(out),
        "DEVICE": "cpu",
        "PYTHON": sys.executable,
        "CONFIGS": SMALLEST,
        "BUDGET_S": "600",
    }


def _script(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "scripts/gpu_sweep.sh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    tmp_path = tmp_path_factory.mktemp("gpu-sweep")
    out = tmp_path / "out"
    env = _bare_environment(tmp_path, out)
    done = _script(env)
    assert "1 run record(s) written" in done.stdout, done.stdout + done.stderr
    return out, env


def test_the_script_writes_a_record_and_says_there_is_nothing_to_compare_on_a_cpu(
    swept: tuple[Path, dict[str, str]],
) -> None:
    out, _ = swept
    (path,) = record_files.record_paths(out / "records")
    run, samples = record_files.load(path)
    assert (run["status"], run["framework"], run["memory_target"]) == ("ok", "torch", "host_ram")
    assert run["peak_hwm_bytes"] > 0 and samples  # sampled by psutil alone
    assert "no configuration measured ok on a GPU" in (out / "comparison.txt").read_text()
    assert (out / "env.txt").exists() and "sweep exit 0" in (out / "sweep.log").read_text()


def test_the_folder_imports_once_and_is_refused_when_changed(
    swept: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records"
    shutil.copytree(swept[0] / "records", records)
    db = tmp_path / "memplan.duckdb"
    assert cli.main(["import", str(records), "--db", str(db)]) == 0
    assert "imported 1 run(s)" in capsys.readouterr().out

    (path,) = record_files.record_paths(records)
    body = json.loads(path.read_text())
    body["run"]["peak_hwm_bytes"] //= 2
    path.write_text(json.dumps(body))
    assert cli.main(["import", str(records), "--db", str(tmp_path / "other.duckdb")]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {path}: its checksum does not match its run: the record was changed after it "
        "was written; nothing was imported (measure that point again)\n"
    )
