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

import pandas as pd
import pytest

from core import machine, store
from memplan import cli
from tests.integration.test_profiling_cli import TINY_GRID

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


SETTINGS = ("0", "1")
PRECISIONS = ("float32", "mixed_bfloat16")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pd.DataFrame]:
    """float32 and mixed_bfloat16 swept with oneDNN off, then on, into one database: the ok
    runs each setting's sweep stored, by setting.

    Shared because each profiled run is a TensorFlow child: both tests read the same
    sweeps, the first what each run recorded, the second which points the second sweep
    measured again (all four on a CPU whose oneDNN takes bfloat16; on an AVX2 CPU the
    second sweep resumes mixed_bfloat16, which trains as without oneDNN there).
    """
    db = tmp_path_factory.mktemp("onednn") / "runs.duckdb"
    grid = [*TINY_GRID, "--precisions", *PRECISIONS, "--quiet", "--db", str(db)]
    stored: dict[str, pd.DataFrame] = {}
    for setting in SETTINGS:
        # The sweep runs in this process, its children in the environment it sets here.
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("TF_CPP_MIN_LOG_LEVEL", "3")
            patch.setenv("TF_ENABLE_ONEDNN_OPTS", setting)
            assert cli.main(["sweep", *grid]) == 0
        sweep_id = store.load_sweeps(db)["sweep_id"].iloc[-1]
        stored[setting] = store.load_runs(db, store.RunFilter(sweep_id=sweep_id, status="ok"))
    return stored


def _rules(setting: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, bool]:
    """`machine.onednn_enabled` of each precision with TF_ENABLE_ONEDNN_OPTS at ``setting``."""
    monkeypatch.setattr(os, "environ", _environment(setting))
    return {precision: machine.onednn_enabled(precision) for precision in PRECISIONS}


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("precision", PRECISIONS)
def test_a_profiled_run_records_the_state_tensorflow_ran_in(
    swept: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch, setting: str, precision: str
) -> None:
    # Unset, at float32: `test_profiling_cli`'s end-to-end run checks it.
    runs = swept[setting]
    recorded = runs.loc[runs["precision"] == precision, "onednn_enabled"].tolist()
    # The rule is TensorFlow's answer (the test above); it depends on this CPU: with
    # oneDNN on, an AVX2-only CPU still trains mixed_bfloat16 on TensorFlow's own kernels.
    expected = _rules(setting, monkeypatch)[precision]
    if not recorded:  # resumed: the other setting's run is on this profile (the test below)
        other = swept[SETTINGS[1 - SETTINGS.index(setting)]]
        recorded = other.loc[other["precision"] == precision, "onednn_enabled"].tolist()
    assert recorded == [expected]


def test_a_resumed_sweep_counts_a_point_done_on_the_profile_its_precision_trains_on(
    swept: dict[str, pd.DataFrame], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point is done per machine profile; with oneDNN asked for, a precision oneDNN does not
    take here (bfloat16 below AVX-512) still trains as without it, so it is not measured again."""
    state = {setting: _rules(setting, monkeypatch) for setting in SETTINGS}
    # Every point measured by the first sweep; by the second exactly where the two settings
    # put the precision on different profiles.
    assert sorted(swept["0"]["precision"]) == list(PRECISIONS)
    again = sorted(swept["1"]["precision"])
    assert again == [p for p in PRECISIONS if state["0"][p] != state["1"][p]]
