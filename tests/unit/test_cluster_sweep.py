"""The Slurm executor's pieces that need no cluster: requests, identities, manifests, flags.

The cluster itself is exercised for real in tests/integration/test_slurm_sweep.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from core import database, profiles, store
from core.errors import ConfigError
from core.records import PeakBound
from core.workloads.unet3d import UNetConfig
from memplan import cli
from profiling import slurm, slurm_job
from profiling.cluster_sweep import ClusterExecutor
from profiling.estimate import closed_form_bound, estimate_peak_bytes
from profiling.lifecycle import Sweep, SweepPlan, SweepSummary
from profiling.runner import RunSettings
from profiling.slurm_points import (
    JOB_PROCESS_ALLOWANCE_BYTES,
    NEW,
    ClusterPoint,
    SlurmOptions,
    mem_request_bytes,
    point_id,
)
from profiling.slurm_workdir import default_work_dir, load_manifest
from profiling.sweep import Grid

GIB = 2**30
SETTINGS = RunSettings(memory_limit_bytes=8 * GIB, steps=2)


def test_a_jobs_memory_is_the_points_bound_plus_the_margin_in_whole_gib() -> None:
    config = UNetConfig((64, 64, 64), 2)
    estimate = estimate_peak_bytes(config)
    asked = mem_request_bytes(closed_form_bound(config), SlurmOptions("p", mem_margin=0.25))
    assert asked % GIB == 0
    assert estimate * 1.25 <= asked < estimate * 1.25 + GIB
    # Points of similar size ask for the same memory: one job array.
    neighbour = closed_form_bound(UNetConfig((64, 64, 64), 1))
    assert mem_request_bytes(neighbour, SlurmOptions(partition="p")) <= asked


def test_a_fitted_bound_gives_the_jobs_memory_where_the_nodes_models_cover_the_point() -> None:
    fitted = PeakBound(10 * GIB, "the symbolic model's upper bound (x1.06) for machine abc")
    assert mem_request_bytes(fitted, SlurmOptions(partition="p", mem_margin=0.1)) == 11 * GIB


def test_one_mem_for_every_job_overrides_the_bound() -> None:
    options = SlurmOptions(partition="p", mem_bytes=3 * GIB)
    big = closed_form_bound(UNetConfig((128, 128, 128), 8))
    assert mem_request_bytes(big, options) == 3 * GIB


def test_slurm_time_covers_the_points_timeout_and_the_jobs_start() -> None:
    request = slurm.JobRequest(
        partition="p", mem_bytes=GIB, time_s=600, cpus_per_task=2, max_parallel=4
    )
    assert request.time_min == 13  # 600 s + 180 s of start allowance, whole minutes up
    assert request.mem_mib == 1024


def test_a_point_keeps_its_id_across_runs_of_the_same_command() -> None:
    config = UNetConfig((32, 32, 32), 1)
    same = point_id(UNetConfig((32, 32, 32), 1), SETTINGS, 0)
    assert point_id(config, SETTINGS, 0) == same
    assert point_id(config, SETTINGS, 1) != same  # a repeat is another measurement
    assert point_id(UNetConfig((32, 32, 32), 2), SETTINGS, 0) != same
    other_seed = RunSettings(memory_limit_bytes=GIB, steps=2, seed=7)
    assert point_id(config, other_seed, 0) != same
    # The job's memory is not part of a point: a new --mem-margin resumes the same points.
    roomier = RunSettings(memory_limit_bytes=32 * GIB, steps=2)
    assert point_id(config, roomier, 0) == same


def test_the_work_directory_lives_beside_the_database(tmp_path: Path) -> None:
    assert default_work_dir(tmp_path / "runs.duckdb") == tmp_path / "runs.slurm"


def test_a_work_directory_of_another_database_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "manifest.json").write_text(
        json.dumps({"database": str(tmp_path / "other.duckdb"), "points": {}})
    )
    with pytest.raises(ConfigError, match="belongs to the sweeps of .*other.duckdb"):
        load_manifest(work, tmp_path / "runs.duckdb")


def test_a_damaged_manifest_is_named_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(ConfigError, match="is not a memplan cluster-sweep manifest"):
        load_manifest(tmp_path, tmp_path / "runs.duckdb")
    assert (tmp_path / "manifest.json").read_text() == "{not json"


def test_the_job_knows_its_slurm_id_and_cpus_from_the_environment() -> None:
    assert slurm_job.slurm_job_id({"SLURM_JOB_ID": "41"}) == "41"
    array_task = {"SLURM_JOB_ID": "45", "SLURM_ARRAY_JOB_ID": "42", "SLURM_ARRAY_TASK_ID": "3"}
    assert slurm_job.slurm_job_id(array_task) == "42_3"
    assert slurm_job.slurm_job_id({}) is None
    assert slurm_job.cpus_per_task({"SLURM_CPUS_PER_TASK": "4"}) == 4
    assert slurm_job.cpus_per_task({}) is None


def test_a_slurm_job_loads_neither_pandas_nor_duckdb() -> None:
    # Each job imports `profiling.slurm_job` before it measures; the database side of
    # `profiling.pending` (pandas, pyarrow, DuckDB) cost it ~0.6 CPU s for nothing it does.
    probe = (
        "import sys; import profiling.slurm_job; heavy = ('pandas', 'pyarrow', 'duckdb'); "
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    repo = Path(__file__).resolve().parents[2]
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True
    )
    assert loaded.stdout == "[]\n"


def test_a_point_file_reads_back_as_written(tmp_path: Path) -> None:
    spec = slurm_job.PointSpec(
        point_id="abc",
        run_id="r1",
        workload="unet3d",
        config=UNetConfig((16, 16, 16), 1, base_filters=4).to_dict(),
        repeat=0,
        estimate_bytes=GIB,
        settings={"memory_limit_bytes": 2 * GIB, "steps": 2},
    )
    path = slurm_job.spec_path(tmp_path, "abc")
    spec.write(path)
    assert slurm_job.PointSpec.read(path) == spec


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("OUT_OF_MEMORY", "oom"),
        ("TIMEOUT", "timeout"),
        ("CANCELLED", "interrupted"),
        ("FAILED", "error"),
        ("NODE_FAIL", "killed"),
        ("PREEMPTED", "killed"),
    ],
)
def test_how_a_job_ended_is_the_runs_status(state: str, status: str) -> None:
    assert slurm.OUTCOMES[state] == status


def test_a_step_its_cgroup_killed_for_memory_is_oom_though_slurm_says_failed() -> None:
    log = "srun: error: vm: task 0: Out Of Memory"
    assert slurm.outcome("FAILED", log) == "oom"
    # Slurm's accounting (JobAcctGatherParams=OverMemoryKill), as the test cluster logs it.
    polled = "slurmstepd-vm: error: Exceeded job memory limit\nsrun: error: vm: task 0: Killed"
    assert slurm.outcome("FAILED", polled) == "oom"
    assert slurm.outcome("FAILED", "Traceback ... ValueError") == "error"
    assert slurm.outcome("SOMETHING_NEW") == "killed"


def test_squeue_lines_name_each_array_task_however_slurm_lists_it() -> None:
    listing = "\n".join(
        [
            "41|COMPLETED",
            "42_0|RUNNING",
            "42_[1-3,5%2]|PENDING",
            "43|CANCELLED",  # an array cancelled before any task started
            "44_1|CANCELLED by 0",
        ]
    )
    wanted = {"41", "42_0", "42_2", "42_5", "42_4", "43_0", "43_1", "44_1", "99"}
    assert slurm._listed_states(listing, wanted) == {
        "41": "COMPLETED",
        "42_0": "RUNNING",
        "42_2": "PENDING",
        "42_5": "PENDING",
        "43_0": "CANCELLED",
        "43_1": "CANCELLED",
        "44_1": "CANCELLED",
    }


def test_only_the_nodes_fault_is_retried() -> None:
    assert {"NODE_FAIL", "PREEMPTED"} <= slurm.RETRIED_STATES
    assert not {"OUT_OF_MEMORY", "TIMEOUT", "CANCELLED", "FAILED"} & slurm.RETRIED_STATES


def _sweep_error(capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    code = cli.main(["sweep", "--image-sizes", "16", "--batch-sizes", "1", *flags])
    assert code == 2
    return capsys.readouterr().err


def test_a_slurm_sweep_needs_a_partition(capsys: pytest.CaptureFixture[str]) -> None:
    said = _sweep_error(capsys, "--executor", "slurm")
    assert "--executor slurm needs --partition NAME" in said


def test_a_partition_without_the_slurm_executor_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "add --executor slurm" in _sweep_error(capsys, "--partition", "debug")


def test_the_nodes_machine_is_only_for_slurm_sweeps(capsys: pytest.CaptureFixture[str]) -> None:
    said = _sweep_error(capsys, "--machine", "9b59349f74")
    assert "--machine is for Slurm sweeps: add --executor slurm" in said


def test_a_slurm_sweeps_limit_is_each_jobs_mem(capsys: pytest.CaptureFixture[str]) -> None:
    said = _sweep_error(
        capsys, "--executor", "slurm", "--partition", "debug", "--memory-limit", "4G"
    )
    assert "on Slurm each point's limit is its job's --mem" in said


# --- how a job that left no record is recorded (a real database, no cluster) -------------


class _HeldLock:
    """Stands in for the sweep lock's progress file: these tests only record runs."""

    def update(self, **changes: object) -> None:
        pass


def _cluster_run(tmp_path: Path) -> tuple[ClusterExecutor, ClusterPoint]:
    db = tmp_path / "runs.duckdb"
    database.ensure_database(db)
    store.create_sweep(db, "s1", "test", {}, 1)
    config = UNetConfig((16, 16, 16), 1, base_filters=4)
    point = ClusterPoint(
        point_id="p1",
        config=config,
        repeat=0,
        bound=closed_form_bound(config),
        mem_bytes=2 * GIB,
        run_id="r1",
        jobs=["7_0"],
    )
    partition = slurm.Partition(name="debug", max_memory_bytes=16 * GIB, max_cpus=2)
    run = ClusterExecutor(SlurmOptions(partition="debug", work_dir=tmp_path / "work"))
    run.partition, run.points = partition, [point]
    plan = SweepPlan(db, Grid(((16, 16, 16),), (1,)), SETTINGS)
    run.sweep = Sweep(plan, {config: point.bound}, SweepSummary(sweep_id="s1"), _HeldLock())
    return run, point


def test_a_node_failure_is_submitted_once_more_then_recorded(tmp_path: Path) -> None:
    run, point = _cluster_run(tmp_path)
    run._ended(point, "NODE_FAIL")
    assert point.state == NEW  # submitted again on the next turn of the loop
    assert store.run_statuses(run.sweep.plan.db_path, ["r1"]) == {}

    point.jobs.append("8_0")  # the second attempt, which the node fails too
    run._ended(point, "NODE_FAIL")
    stored = store.get_run(run.sweep.plan.db_path, "r1")
    assert stored["status"] == "killed"
    assert "Slurm job 8_0 ended NODE_FAIL (attempt 2 of 2)" in stored["message"]
    assert stored["slurm_job_id"] == "8_0"


def test_a_job_that_never_started_is_recorded_against_no_machine(tmp_path: Path) -> None:
    run, point = _cluster_run(tmp_path)
    run._ended(point, "CANCELLED")
    stored = store.get_run(run.sweep.plan.db_path, "r1")
    assert stored["status"] == "interrupted"
    # The job's --mem less what the job's own Python needs.
    assert stored["memory_limit_bytes"] == 2 * GIB - JOB_PROCESS_ALLOWANCE_BYTES
    # No node wrote its facts: the CPU is unknown, so the run never joins a machine profile.
    assert stored["cpu_model"] == profiles.UNKNOWN
    assert stored["hostname"] == "slurm:debug"
    assert not profiles.profile_of(stored).determined


def test_a_job_that_started_is_recorded_against_its_node(tmp_path: Path) -> None:
    run, point = _cluster_run(tmp_path)
    run.points_dir.mkdir(parents=True)
    facts = {**slurm_job.node_facts(), "hostname": "node7", "slurm_job_id": "7_0"}
    slurm_job.node_path(run.points_dir, "p1").write_text(json.dumps(facts))
    run._ended(point, "TIMEOUT")
    stored = store.get_run(run.sweep.plan.db_path, "r1")
    assert (stored["status"], stored["hostname"]) == ("timeout", "node7")
    assert profiles.profile_of(stored).determined


def test_a_point_that_cannot_fit_on_any_node_is_skipped_not_submitted(tmp_path: Path) -> None:
    run, point = _cluster_run(tmp_path)
    point.mem_bytes = 64 * GIB
    assert "more than any node of partition debug has" in (run._skip_reason(point) or "")
