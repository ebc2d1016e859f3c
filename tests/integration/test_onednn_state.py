"""Whether a run used oneDNN is what TensorFlow itself says, not what memplan assumes.

TensorFlow leaves oneDNN off by default on CPUs without AVX-512 VNNI/BF16,
AVX-VNNI or AMX, and those runs peak about twice as high (data/REFERENCE.md),
so a profile that said "oneDNN on" there would file them beside runs they do
not resemble.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from core import machine, store
from tests.integration.test_profiling_cli import TINY, memplan

pytestmark = pytest.mark.tensorflow

REPO = Path(__file__).resolve().parents[2]
ASK_BOTH = (
    "from core.machine import onednn_enabled\n"
    "rule = onednn_enabled()\n"
    "from tensorflow.python.util import _pywrap_util_port\n"
    "print(rule, _pywrap_util_port.IsMklEnabled())\n"
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
    rule, tensorflow = answer.stdout.split()
    assert rule == tensorflow


@pytest.mark.parametrize("setting", [None, "0", "1"])
def test_a_profiled_run_records_the_state_tensorflow_ran_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None
) -> None:
    db = tmp_path / "runs.duckdb"
    env = _environment(setting)
    memplan("run", *TINY, "--db", str(db), env=env, check=True)
    [run] = store.load_runs(db).to_dict("records")
    # The rule is TensorFlow's answer (the test above); unset, it depends on this CPU.
    monkeypatch.setattr(os, "environ", env)
    assert run["status"] == "ok" and run["onednn_enabled"] is machine.onednn_enabled()
