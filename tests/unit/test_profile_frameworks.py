"""Profiles per framework (issue 29): which runs and profiles a question of one framework may
use, the refusal of a transfer across frameworks, and the commands that carry ``--framework``."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from application import verify
from application.calibrate import fit_job
from core import profile_frameworks, profiles
from core.errors import StoreError
from core.workloads.unet3d import UNetConfig
from dashboard.query_state import framework_from
from memplan.calibrate import fit_command
from modeling import transfer
from modeling.errors import ModelingError
from presentation import machine_shortfall
from tests.conftest import build_record

TORCH_RUN = {"framework": "torch", "framework_version": "2.13.0+cpu", "torch_intra_op_threads": 8}


def _runs() -> pd.DataFrame:
    rows = [build_record().row(), build_record(**TORCH_RUN).row()]
    old = build_record().row() | {"framework": None}  # stored before schema 8: TensorFlow
    return pd.DataFrame([*rows, old])


def test_runs_without_a_framework_are_tensorflows_and_each_framework_has_its_own_profiles():
    runs = _runs()
    assert profile_frameworks.frameworks_in(runs) == ["tensorflow", "torch"]
    assert len(profile_frameworks.runs_of_framework(runs, "tensorflow")) == 2
    known = profiles.profiles_in(runs)
    torch = profile_frameworks.of_framework(known, "torch")
    assert [p.framework for p in torch.values()] == ["torch"]
    # A key no run has (an evaluation from before profiles): TensorFlow's.
    assert profile_frameworks.framework_of(None, known) == "tensorflow"
    assert profile_frameworks.keys_of_framework([None, *known], known, "torch") == list(torch)
    assert "add --framework torch" in profile_frameworks.other_frameworks_note(known, "tensorflow")


def test_a_profile_of_another_framework_is_refused_naming_the_flag():
    torch = profiles.profile_of(build_record(**TORCH_RUN).row())
    profile_frameworks.check_framework(torch, "torch")
    with pytest.raises(StoreError, match="is a PyTorch profile, and TensorFlow was asked for: "):
        profile_frameworks.check_framework(torch, "tensorflow")


def test_no_transfer_crosses_frameworks():
    runs = _runs()
    known = profiles.profiles_in(runs)
    (torch_key,) = profile_frameworks.of_framework(known, "torch")
    tensorflow_here = profiles.profile_of(build_record(cpu_cores=4, usable_cores=4).row())
    with pytest.raises(ModelingError, match="never taken from another framework's runs"):
        transfer.transfer_for(runs, known, tensorflow_here, torch_key, "the latest evaluation")


def test_a_links_framework_is_one_with_runs_else_the_default_with_a_reason():
    offered = ["tensorflow", "torch"]
    assert framework_from({}, offered, "tensorflow") == ("tensorflow", [])
    assert framework_from({"framework": "torch"}, offered, "tensorflow") == ("torch", [])
    chosen, [reason] = framework_from({"framework": "jax"}, offered, "tensorflow")
    assert chosen == "tensorflow"
    assert "the frameworks with runs here are tensorflow, torch" in reason


def test_the_commands_a_torch_profile_is_told_to_run_carry_the_flag(tmp_path: Path):
    profile = machine_shortfall.ProfileRuns(
        "unet3d", "abc", "a torch box", 0, True, framework="torch"
    )
    found = machine_shortfall.shortfall(profile)
    assert found.sweep.command().startswith("memplan sweep --workload unet3d --framework torch ")
    assert "`memplan evaluate --workload unet3d --framework torch --machine abc`" in found.message()
    assert fit_command(fit_job("unet3d", "abc", tmp_path, "torch"))[-2:] == ["--framework", "torch"]
    assert "--framework" not in fit_command(fit_job("unet3d", "abc", tmp_path))


def test_verifying_a_torch_answer_sweeps_torch():
    claim = verify.Claim("image", UNetConfig((64,) * 3, 2), None, 2**30, "abc", framework="torch")
    assert "--framework torch" in verify.verify_command(claim)
    assert verify.sweep_request(claim).framework == "torch"
    assert "--framework torch" in verify.slurm_command(claim)
