"""A sweep is a typed job: it crosses processes as checked JSON, and nobody builds its argv.

`profiling.jobspec.SweepJob` is what `memplan sweep` builds from its flags and
what a launched sweep's process reads back (`application.sweep_job.main`).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from application import sweep_job
from application.refit import RefitJob
from core.errors import ConfigError
from memplan import cli
from memplan import sweep as sweep_command
from profiling import launcher, requests
from profiling.jobspec import SweepJob
from profiling.slurm_points import SlurmOptions
from profiling.sweep import grid_from_mapping

GRID = grid_from_mapping({"workload": "alexnet", "image_sizes": [96, 128], "batch_sizes": [1, 2]})


def spec(**changes) -> dict:
    return SweepJob(Path("/data/runs.duckdb"), GRID, steps=2).to_dict() | changes


def test_a_job_comes_back_from_its_json_unchanged(tmp_path: Path):
    slurm = SlurmOptions("debug", account="lab", mem_bytes=3 * 2**30, work_dir=tmp_path)
    for job in (
        SweepJob(tmp_path / "runs.duckdb", GRID, memory_limit_bytes=2**31, run_over_bound=True),
        SweepJob(tmp_path / "runs.duckdb", GRID, framework="torch", repeats=3, resume=False),
        SweepJob(tmp_path / "runs.duckdb", GRID, slurm=slurm, machine="abc", origin="me"),
    ):
        assert SweepJob.from_json(job.to_json()) == job


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"steps": "6"}, "sweep job: steps must be a whole number from 1 up, got '6'"),
        ({"steps": True}, "sweep job: steps must be a whole number from 1 up, got True"),
        ({"memory_limit_bytes": -1}, "sweep job: memory_limit_bytes must be a whole number from"),
        ({"timeout_s": 0}, "sweep job: timeout_s must be a number above 0, got 0"),
        ({"framework": "jax"}, "sweep job: framework must be one of tensorflow, torch, got 'jax'"),
        ({"resume": "yes"}, "sweep job: resume must be true or false, got 'yes'"),
        ({"db_path": ""}, "sweep job: db_path must be a name (text, not blank), got ''"),
        ({"grid": [1]}, "sweep job: grid must be an object of lists"),
        ({"grid": {"batch_sizes": [1]}}, "sweep job: grid: "),
        ({"limit": 5}, "sweep job: unknown key(s) limit; known: db_path, grid, framework"),
        (
            {"slurm": {"partition": "p", "mem_margin": -0.5}},
            "sweep job: slurm.mem_margin must be a number of at least 0, got -0.5",
        ),
        ({"slurm": {"account": "lab"}}, "sweep job: slurm: missing partition"),
        ({"slurm": {"partition": "p", "cpu": 2}}, "sweep job: slurm: unknown key(s) cpu"),
    ],
)
def test_a_bad_job_is_refused_naming_the_field(changes: dict, message: str):
    with pytest.raises(ConfigError) as refused:
        SweepJob.from_json(json.dumps(spec(**changes)))
    assert str(refused.value).startswith(message)


def test_a_job_that_is_not_an_object_or_lacks_its_database_is_refused():
    with pytest.raises(ConfigError, match="sweep job: not JSON"):
        SweepJob.from_json("{")
    with pytest.raises(ConfigError, match="sweep job: must be a JSON object, got list"):
        SweepJob.from_json("[]")
    with pytest.raises(ConfigError, match="sweep job: missing db_path"):
        SweepJob.from_json(json.dumps({"grid": GRID.to_dict()}))


def test_a_slurm_job_has_no_memory_limit_of_its_own():
    with pytest.raises(ConfigError, match="memory_limit_bytes is for this machine, not Slurm"):
        SweepJob.from_json(json.dumps(spec(slurm={"partition": "p"}, memory_limit_bytes=2**31)))
    with pytest.raises(ConfigError, match="machine is for Slurm sweeps"):
        SweepJob(Path("x.duckdb"), GRID, machine="abc")


def test_every_field_of_the_job_is_checked_on_the_way_in():
    names = [field.name for field in dataclasses.fields(SweepJob)]
    assert list(spec()) == names


def test_the_cli_and_the_form_describe_the_same_job(tmp_path: Path):
    db = tmp_path / "runs.duckdb"
    form = requests.parse_request("96 128", "1 2", {}, 2, "2GiB", workload="alexnet")
    flags = ["sweep", "--workload", "alexnet", "--image-sizes", "96", "128"]
    flags += ["--batch-sizes", "1", "2", "--steps", "2", "--memory-limit", "2GiB"]
    from_flags = sweep_command.job_of(cli.build_parser("sweep").parse_args(flags), db)
    assert dataclasses.replace(from_flags, origin="") == form.job(db)


def test_a_launched_sweep_runs_its_job_file_not_a_memplan_command_line(tmp_path: Path, monkeypatch):
    db = tmp_path / "runs.duckdb"
    started = {}

    def start_job(db_path, commands, sweep_command, points_total, executor, specs):
        started.update(commands=commands, sweep_command=sweep_command, specs=specs)
        started.update(points_total=points_total)

    monkeypatch.setattr(launcher, "start_job", start_job)
    request = requests.parse_request("96", "1 2", {}, 2, "2GiB", workload="alexnet")
    fit = RefitJob(db, "alexnet", only_changed=True, quick=True)
    sweep_job.launch(db, request, fit)
    [sweep, refit] = started["commands"]
    state = launcher.jobstatus.state_dir(db.resolve())
    spec_file = str(state / launcher.SPEC_FILE)
    assert sweep.argv == (sys.executable, "-m", "application.sweep_job", spec_file)
    assert not any(arg.startswith("--") for arg in sweep.argv)
    # The refit too is a job file its own process reads, not `memplan evaluate`'s flags.
    refit_file = str(state / launcher.REFIT_SPEC_FILE)
    assert refit.argv == (sys.executable, "-m", "application.refit", refit_file)
    assert RefitJob.from_json(started["specs"][launcher.REFIT_SPEC_FILE]) == dataclasses.replace(
        fit, sweep=started["sweep_command"]
    )  # the refit fits only the profiles this sweep measured
    job = SweepJob.from_json(started["specs"][launcher.SPEC_FILE])
    assert job == dataclasses.replace(request.job(db.resolve()), origin=started["sweep_command"])
    assert started["sweep_command"].startswith("launched job ")
    assert started["points_total"] == 2 and refit.optional


def test_the_job_process_refuses_a_bad_spec_in_one_line(tmp_path: Path, capsys):
    bad = tmp_path / "job.json"
    bad.write_text(json.dumps(spec(steps=0)))
    assert sweep_job.main([str(bad)]) == 2
    assert capsys.readouterr().err == (
        "error: sweep job: steps must be a whole number from 1 up, got 0\n"
    )
    assert sweep_job.main([str(tmp_path / "missing.json")]) == 2
    assert "error: cannot read the sweep job" in capsys.readouterr().err
