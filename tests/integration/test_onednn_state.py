"""Whether a run used oneDNN is what TensorFlow itself says, not what memplan assumes.

TensorFlow leaves oneDNN off by default on CPUs without AVX-512 VNNI/BF16,
AVX-VNNI or AMX, and those runs peak about twice as high (data/REFERENCE.md),
so a profile that said "oneDNN on" there would file them beside runs they do
not resemble. The same holds for a precision whose compute dtype oneDNN does not
take on the CPU: mixed_bfloat16 below AVX-512 runs on TensorFlow's own kernels.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import machine, store
from tests.integration.test_profiling_cli import SMALLEST, TINY_GRID, memplan

pytestmark = pytest.mark.tensorflow

REPO = Path(__file__).resolve().parents[2]
ASK_BOTH = (
    "from core.machine import onednn_enabled\n"
    "rules = [onednn_enabled(p) for p in ('float32', 'mixed_bfloat16', 'mixed_float16')]\n"
    "import tensorflow as tf\n"
    "from tensorflow.python.util import _pywrap_util_port, _pywrap_utils\n"
    "on = _pywrap_util_port.IsMklEnabled()\n"
    "takes = _pywrap_utils.IsDataTypeSupportedByOneDNNOnThisCPU\n"
    "answers = [on and takes(d.as_datatype_enum) for d in (tf.float32, tf.bfloat16, tf.float16)]\n"
    "print(rules == answers, rules, answers)\n"
)


def _environment(setting: str | None) -> dict[str, str]:
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    env.pop("TF_ENABLE_ONEDNN_OPTS", None)
    if setting is not None:
        env["TF_ENABLE_ONEDNN_OPTS"] = setting
    return env


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_the_rule_read_without_tensorflow_agrees_with_tensorflow_on_this_machine(
    setting: str | None,
) -> None:
    answer = subprocess.run(
        [sys.executable, "-c", ASK_BOTH],
        cwd=REPO,
        env=_environment(setting),
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    assert answer.stdout.startswith("True"), answer.stdout


@pytest.mark.parametrize(
    ("setting", "precision"),
    # Unset, at float32: `test_profiling_cli`'s end-to-end run checks it.
    [("0", "float32"), ("1", "float32"), ("1", "mixed_bfloat16")],
)
def test_a_profiled_run_records_the_state_tensorflow_ran_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, precision: str
) -> None:
    db = tmp_path / "runs.duckdb"
    env = _environment(setting)
    memplan("run", *SMALLEST, "--precision", precision, "--db", str(db), env=env, check=True)
    [run] = store.load_runs(db).to_dict("records")
    # The rule is TensorFlow's answer (the test above); it depends on this CPU: with
    # oneDNN on, an AVX2-only CPU still trains mixed_bfloat16 on TensorFlow's own kernels.
    monkeypatch.setattr(os, "environ", env)
    assert run["status"] == "ok" and run["onednn_enabled"] is machine.onednn_enabled(precision)


def test_a_resumed_sweep_counts_a_point_done_on_the_profile_its_precision_trains_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point is done per machine profile; with oneDNN asked for, a precision oneDNN does not
    take here (bfloat16 below AVX-512) still trains as without it, so it is not measured again."""
    db = tmp_path / "runs.duckdb"
    grid = [*TINY_GRID, "--precisions", "float32", "mixed_bfloat16", "--quiet", "--db", str(db)]
    state: dict[str, dict[str, bool]] = {}
    for setting in ("0", "1"):
        memplan("sweep", *grid, env=_environment(setting), check=True)
        monkeypatch.setattr(os, "environ", _environment(setting))
        state[setting] = {p: machine.onednn_enabled(p) for p in ("float32", "mixed_bfloat16")}
    runs = store.load_runs(db, store.RunFilter(status="ok"))
    measured = runs.groupby("precision").size().to_dict()
    # Measured twice exactly where the two settings put the precision on different profiles.
    for precision, times in measured.items():
        assert times == (1 if state["0"][precision] == state["1"][precision] else 2), precision
    assert set(measured) == {"float32", "mixed_bfloat16"}
