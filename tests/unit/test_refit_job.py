"""The refit after a sweep as a typed job (`application.refit.RefitJob`): JSON in and out,
every field checked, and the one-line refusal its process gives for a bad spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application import refit
from application.calibrate import fit_job
from application.refit import RefitJob
from core.errors import ConfigError


def test_a_refit_job_crosses_processes_as_json_unchanged(tmp_path: Path):
    job = RefitJob(tmp_path / "runs.duckdb", "alexnet", "abc123", "torch", quick=True)
    assert RefitJob.from_json(job.to_json()) == job
    small = RefitJob(tmp_path / "runs.duckdb", seeds=1, models=("refined", "symbolic"))
    assert RefitJob.from_json(small.to_json()) == small


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"seeds": 3}, "refit job: missing db_path"),
        ({"db_path": "x", "sedes": 3}, "refit job: unknown key(s) sedes; known: db_path, "),
        ({"db_path": "x", "seeds": 0}, "refit job: seeds must be a whole number from 1 up, got 0"),
        ({"db_path": "x", "quick": "yes"}, "refit job: quick must be true or false, got 'yes'"),
        ({"db_path": "x", "workload": "vgg"}, "refit job: workload must be one of unet3d, "),
        ({"db_path": "x", "models": ["nope"]}, "refit job: models must be a list of model names"),
        ([], "refit job: must be a JSON object, got list"),
    ],
)
def test_every_field_is_checked_on_the_way_in(values, message: str):
    with pytest.raises(ConfigError) as refused:
        RefitJob.from_json(json.dumps(values))
    assert str(refused.value).startswith(message)


def test_the_evaluation_records_the_memplan_evaluate_line_of_the_same_fit(tmp_path: Path):
    db = tmp_path / "runs.duckdb"
    quick = RefitJob(db, "unet3d", only_changed=True, quick=True)
    assert (
        quick.command_text()
        == f"memplan evaluate --db {db} --only-changed --workload unet3d --quick"
    )
    # `FitEvidence.quick` reads `--quick` back from the stored command.
    assert quick.request().command.split()[-1] == "--quick" and quick.request().quick
    calibration = fit_job("unet3d", "abc", db, "torch")
    assert calibration.command_text() == (
        f"memplan evaluate --db {db} --workload unet3d --machine abc --seeds 3 "
        "--extrapolation-seeds 1 --framework torch"
    )


def test_the_refit_process_refuses_a_bad_spec_in_one_line(tmp_path: Path, capsys):
    bad = tmp_path / "refit.json"
    bad.write_text(json.dumps({"db_path": str(tmp_path / "x.duckdb"), "seeds": -1}))
    assert refit.main([str(bad)]) == 2
    assert capsys.readouterr().err == (
        "error: refit job: seeds must be a whole number from 1 up, got -1\n"
    )
    assert refit.main([str(tmp_path / "missing.json")]) == 2
    assert "error: cannot read the refit job" in capsys.readouterr().err
