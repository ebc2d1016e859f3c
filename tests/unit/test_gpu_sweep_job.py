"""A sweep on a GPU (``memplan sweep --device cuda``): the job carries its device, a Slurm
job cannot, and no host-RAM bound stops a GPU point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from application import sweep_job
from core import workloads
from core.errors import ConfigError
from core.records import PeakBound
from memplan import sweep as sweep_command
from profiling.jobspec import SweepJob
from profiling.local_sweep import skip_reason
from profiling.runner import RunSettings
from profiling.slurm_points import SlurmOptions
from profiling.sweep import grid_from_mapping

GRID = grid_from_mapping({"workload": "unet3d", "image_sizes": [128], "batch_sizes": [1, 2]})


def test_a_gpu_job_comes_back_from_its_json_and_runs_as_the_command_it_shows(
    tmp_path: Path,
) -> None:
    job = SweepJob(tmp_path / "runs.duckdb", GRID, framework="torch", device="cuda:1")
    assert SweepJob.from_json(job.to_json()) == job
    assert "--framework torch --steps 6 --device cuda:1 --db" in sweep_command.command_of(job)
    assert job.settings().device == "cuda:1"


def test_a_job_with_a_device_that_is_none_or_on_slurm_is_refused() -> None:
    spec = SweepJob(Path("runs.duckdb"), GRID).to_dict() | {"device": "gpu"}
    with pytest.raises(ConfigError, match="device must be cpu, cuda or cuda:N, got 'gpu'"):
        SweepJob.from_json(json.dumps(spec))
    with pytest.raises(ConfigError, match="device cuda is for a sweep on this machine"):
        SweepJob(Path("runs.duckdb"), GRID, device="cuda", slurm=SlurmOptions("p"))


def test_no_host_ram_bound_stops_a_gpu_point() -> None:
    config = workloads.get("unet3d").Config(image_shape=(256, 256, 256), batch_size=8)
    bound = PeakBound(bound_bytes=2**45, source="the closed form")
    on_cpu = RunSettings(memory_limit_bytes=2**33, framework="torch")
    on_gpu = RunSettings(memory_limit_bytes=2**33, framework="torch", device="cuda")
    assert "exceeds the memory limit" in skip_reason(config, bound, on_cpu)
    assert skip_reason(config, bound, on_gpu) is None
    # Nor do this machine's fitted models, which bound host RAM.
    job = SweepJob(Path("/nonexistent/runs.duckdb"), GRID, framework="torch", device="cuda")
    assert sweep_job.precheck_for(job) is None


def test_a_gpu_sweep_does_not_take_this_machines_cpu_runs_for_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Resuming goes by this machine's profile, which a GPU run is not of: a GPU sweep
    measures every point, even one a CPU sweep here already measured."""
    from core import database, store
    from memplan import cli, options
    from profiling import local_sweep
    from tests.unit.test_sweep_disk_and_resume import SWEEP, fake_point

    devices = []

    def point(config, settings, **kwargs):
        devices.append(settings.device)
        return fake_point(config, settings, **kwargs)

    monkeypatch.setattr(local_sweep, "run_point", point)
    monkeypatch.setattr(local_sweep, "skip_reason", lambda *args, **kwargs: None)
    monkeypatch.setattr(options, "check_device", lambda device, framework: None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    db = tmp_path / "runs.duckdb"
    database.ensure_database(db)
    assert cli.main([*SWEEP, "--db", str(db)]) == 0
    assert cli.main([*SWEEP, "--db", str(db)]) == 0  # resumed: nothing new on the CPU
    assert cli.main([*SWEEP, "--device", "cuda", "--db", str(db)]) == 0
    assert devices == ["cpu", "cuda"]
    assert len(store.load_runs(db)) == 2


def test_an_unknown_device_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memplan import cli

    db = tmp_path / "runs.duckdb"
    flags = ["sweep", "--framework", "torch", "--image-sizes", "16", "--batch-sizes", "1"]
    assert cli.main([*flags, "--device", "gpu0", "--db", str(db)]) == 2
    assert capsys.readouterr().err == (
        "error: --device 'gpu0' is not a device; give cpu, cuda or cuda:N (N from 0)\n"
    )
    assert not db.exists()
