"""The refit after a sweep as a typed job (`application.refit.RefitJob`): JSON in and out,
every field checked, and the one-line refusal its process gives for a bad spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application import refit, stored
from application.calibrate import fit_job
from application.refit import RefitJob
from core import database, profiles, store
from core.errors import ConfigError, ModelingError
from tests.conftest import build_record, build_runs


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


# --- a sweep's refit: only the profile it measured ---------------------------------------

# The claim is which profiles are refit, not the models: one split and one cheap model.
SMALL = {"seeds": 1, "extrapolation_seeds": 1, "quick": True, "models": ("least_squares",)}
SWEEP_COMMAND = "launched job 0123456789ab: 12 unet3d point(s)"


def runs_of_two_machines(db: Path) -> None:
    """12 runs measured by a sidebar sweep on a Xeon, 12 stored earlier from an EPYC: both
    profiles changed since any fit (neither has one), so a refit of every profile fits both."""
    store.create_sweep(db, "sweep1", SWEEP_COMMAND, {}, 12)
    for cpu_model, sweep_id in (("Intel Xeon", "sweep1"), ("AMD EPYC", None)):
        facts = {"cpu_model": cpu_model, "sweep_id": sweep_id}
        rows = build_runs((32, 48, 64, 80), (1, 2, 4)).drop(columns="run_id")
        store.insert_runs(db, [build_record(**(row | facts)) for row in rows.to_dict("records")])


def fitted_profiles(db: Path) -> set[str]:
    return set(stored.load_evaluations(db, "unet3d")["machine_profile"])


def test_a_sweeps_refit_fits_only_the_profile_the_sweep_measured(tmp_path: Path, capsys):
    db = database.ensure_database(tmp_path / "runs.duckdb")
    runs_of_two_machines(db)
    keyed = profiles.with_keys(store.load_runs(db))
    measured = set(keyed.loc[keyed["sweep_id"] == "sweep1", profiles.KEY_COLUMN])
    job = RefitJob(db, "unet3d", only_changed=True, sweep=SWEEP_COMMAND, **SMALL)
    assert RefitJob.from_json(job.to_json()) == job

    assert refit.measured_profiles(job) == sorted(measured)
    assert refit.run(job) == 0

    assert fitted_profiles(db) == measured  # never the EPYC's, which the sweep did not measure
    [key] = measured
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("outcome: models refit for unet3d on ") and f"(profile {key})" in said
    assert said.endswith("(smoke-test settings (--quick))")
    # The evaluation records the memplan line that fits the same profile alone.
    [command] = stored.load_evaluations(db, "unet3d")["command"]
    assert f"--machine {key}" in command


def test_a_sweep_whose_profile_is_unchanged_refits_nothing_and_says_so(tmp_path: Path, capsys):
    db = database.ensure_database(tmp_path / "runs.duckdb")
    runs_of_two_machines(db)
    job = RefitJob(db, "unet3d", only_changed=True, sweep=SWEEP_COMMAND, **SMALL)
    refit.run(job)
    capsys.readouterr()

    assert refit.run(job) == 0  # the same runs again: nothing changed since that fit
    said = capsys.readouterr().out.splitlines()[-1]
    assert said.startswith("outcome: models not refit: unet3d on ")
    assert "no new usable runs at 3 steps since its evaluation" in said
    assert len(stored.load_evaluations(db, "unet3d")) == 1


def test_a_sweep_with_too_few_runs_for_a_fit_says_why_nothing_was_refit(tmp_path: Path):
    db = database.ensure_database(tmp_path / "runs.duckdb")
    store.create_sweep(db, "tiny", SWEEP_COMMAND, {}, 1)
    store.insert_run(db, build_record(sweep_id="tiny"))
    job = RefitJob(db, "unet3d", only_changed=True, sweep=SWEEP_COMMAND, **SMALL)
    with pytest.raises(ModelingError, match=r"only 1 distinct measured configuration"):
        refit.run(job)
    assert stored.load_evaluations(db, "unet3d").empty
