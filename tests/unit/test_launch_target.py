"""Launching a sweep on a Slurm partition: the form's target, its flags, its progress, its cancel.

No Slurm is mocked here. The flags are checked against the CLI's own parser and
its own check of a Slurm sweep's options; a stand-in submitter holds the sweep
lock as `profiling.cluster_sweep.run_cluster_sweep` does (where it runs, each
point's state and job) and, on SIGTERM, takes a while to "cancel its jobs" before
it exits 130, as the real one does. The real cluster sweeps are integration tests.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import database, store
from core.errors import ConfigError
from memplan import cli
from memplan import sweep as sweep_command
from profiling import job, jobstatus, launch_target, launcher, requests, slurm
from profiling.cluster_progress import PointState, cluster_progress, point_states, point_table
from profiling.jobspec import SweepJob
from profiling.launcher import JobCommand
from profiling.slurm_points import SlurmOptions
from profiling.slurm_workdir import default_work_dir

PY = sys.executable
COMMAND = "memplan sweep --image-sizes 32 64 --executor slurm --partition debug"
EXECUTOR = "Slurm partition debug"
# What `run_cluster_sweep` writes into its lock after each look at the jobs.
POINT_STATES = [
    {"label": "32 batch 1", "state": "done", "job_id": "101_0"},
    {"label": "32 batch 2", "state": "running", "job_id": "101_1"},
    {"label": "64 batch 1", "state": "queued", "job_id": "102_0"},
    {"label": "64 batch 2", "state": "new", "job_id": None},
]
# A submitter: holds the lock, says where its points are; SIGTERM "scancels" for a while.
SUBMITTER = f"""
import signal, sys, time
from core import store
from profiling import sweeplock
db, command, cancel_s = sys.argv[1], sys.argv[2], float(sys.argv[3])

def stop(signum, frame):
    raise KeyboardInterrupt

signal.signal(signal.SIGTERM, stop)
with sweeplock.hold(db, "onslurm", command, 4) as lock:
    # Everything after taking the lock inside the try: a SIGTERM as soon as the lock or
    # "holding" is seen lands in the handler, never as an unhandled interrupt (exit -2).
    try:
        store.create_sweep(db, "onslurm", command, {{}}, 4)
        lock.update(executor={EXECUTOR!r}, points_done=1, point_states={POINT_STATES!r})
        print("holding", flush=True)
        time.sleep(120)
    except KeyboardInterrupt:
        time.sleep(cancel_s)  # scancel, then each point recorded interrupted
        store.interrupt_sweeps(db, ["onslurm"])
        sys.exit(130)
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "runs.duckdb")


@pytest.fixture(autouse=True)
def _nothing_left_behind(db: Path):
    yield
    if launcher.status(db).running:
        launcher.cancel(db, grace_s=2)


def submitter(db: Path, cancel_s: float = 0.0) -> subprocess.Popen:
    """A Slurm sweep started from a terminal."""
    process = subprocess.Popen(
        [PY, "-c", SUBMITTER, str(db), COMMAND, str(cancel_s)],
        cwd=database.REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "holding"
    return process


def wait_for(condition, timeout_s: float = 30, what: str = "it") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# --- the form's target -----------------------------------------------------------------


def test_a_slurm_target_keeps_what_the_form_says(tmp_path: Path):
    options = launch_target.slurm_options(
        tmp_path / "runs.duckdb", " debug ", account=" lab ", max_parallel=3, cpus_per_task=4
    )
    assert options == SlurmOptions(
        partition="debug", account="lab", max_parallel=3, cpus_per_task=4
    )
    assert options.work_dir is None  # the CLI's default, <stem>.slurm beside the database


def test_a_blank_account_is_none_and_a_relative_work_dir_lies_beside_the_database(tmp_path):
    db = tmp_path / "data" / "runs.duckdb"
    options = launch_target.slurm_options(db, "debug", account="  ", work_dir="scratch/sweeps")
    assert options.account is None
    assert options.work_dir == tmp_path / "data" / "scratch" / "sweeps"
    assert launch_target.slurm_options(db, "debug", work_dir="/shared/x").work_dir == Path(
        "/shared/x"
    )
    assert default_work_dir(db) == tmp_path / "data" / "runs.slurm"


@pytest.mark.parametrize(
    ("partition", "max_parallel", "cpus", "message"),
    [
        ("", 8, 2, "Partition: name the Slurm partition to run on (sinfo lists them)"),
        ("   ", 8, 2, "Partition: name the Slurm partition"),
        ("de bug", 8, 2, "Partition: 'de bug' is not a partition name (it has spaces)"),
        ("debug", 0, 2, "Max parallel jobs: must be a whole number of at least 1, got 0"),
        ("debug", 8, 0, "CPUs per job: must be a whole number of at least 1, got 0"),
    ],
)
def test_a_bad_slurm_target_says_which_box_is_wrong(
    tmp_path, partition, max_parallel, cpus, message
):
    with pytest.raises(ConfigError) as raised:
        launch_target.slurm_options(
            tmp_path / "runs.duckdb", partition, max_parallel=max_parallel, cpus_per_task=cpus
        )
    assert str(raised.value).startswith(message)


# --- the command line ------------------------------------------------------------------


def request() -> requests.SweepRequest:
    return requests.parse_request(
        "32 64", "1 2", {"base_filters": "16"}, 3, launch_target.SLURM_FORM_MEMORY_LIMIT
    )


def test_on_this_machine_the_job_keeps_the_requests_memory_limit():
    db = Path("/data/x.duckdb")
    job = request().job(db, None)
    assert job.slurm is None and job.memory_limit_bytes == request().memory_limit_bytes
    assert launch_target.describe(None) is None


def test_a_slurm_job_carries_the_forms_options_and_no_memory_limit(tmp_path: Path):
    db = tmp_path / "x.duckdb"
    options = launch_target.slurm_options(
        db, "debug", account="lab", max_parallel=3, cpus_per_task=4, work_dir="shared"
    )
    job = request().job(db, options)
    shared = tmp_path / "shared"
    assert job.slurm == SlurmOptions("debug", "lab", 3, cpus_per_task=4, work_dir=shared)
    # Each point's limit is its job's --mem.
    assert job.memory_limit_bytes is None
    assert job.grid.image_sizes == ((32, 32, 32), (64, 64, 64))
    assert (job.grid.batch_sizes, job.steps) == ((1, 2), 3)
    assert launch_target.describe(options) == "Slurm partition debug, account lab"


def test_every_slurm_option_survives_the_round_trip_through_json(tmp_path: Path):
    options = SlurmOptions(
        partition="gpu",
        max_parallel=1,
        cpus_per_task=16,
        mem_margin=0.25,
        mem_bytes=6 * 2**30,
        work_dir=tmp_path / "w",
        poll_s=0.5,
    )
    job = request().job(tmp_path / "x.duckdb", options)
    assert SweepJob.from_json(job.to_json()).slurm == options


def test_the_cli_reads_a_slurm_sweeps_flags_into_the_same_options(tmp_path: Path):
    options = SlurmOptions(partition="debug", account="lab", max_parallel=3, work_dir=tmp_path)
    parsed = cli.build_parser().parse_args(
        ["sweep", "--image-sizes", "32", "--batch-sizes", "1", "--executor", "slurm"]
        + ["--partition", "debug", "--account", "lab", "--max-parallel", "3"]
        + ["--work-dir", str(tmp_path)]
    )
    assert sweep_command.job_of(parsed, tmp_path / "x.duckdb").slurm == options


def test_without_slurms_commands_a_slurm_launch_is_refused_with_the_install_hint(db, monkeypatch):
    monkeypatch.setenv("PATH", str(db.parent))  # no sbatch, squeue, sinfo here
    assert launch_target.slurm_missing() == slurm.INSTALL_HINT
    options = launch_target.slurm_options(db, "debug")
    with pytest.raises(slurm.SlurmError, match="not on PATH"):
        launcher.launch(db, request().job(db, options), "any.runner")
    assert launcher.status(db).phase == jobstatus.PHASE_IDLE
    assert not (jobstatus.state_dir(db) / job.JOB_FILE).exists()


# --- progress --------------------------------------------------------------------------


def test_points_are_counted_by_state_and_listed_with_their_jobs():
    points = point_states(POINT_STATES)
    assert points[0] == PointState("32 batch 1", "done", "101_0")
    progress = cluster_progress(points)
    assert progress.text == "1 to submit · 1 queued · 1 running · 1 done of 4"
    assert progress.fraction_done == 0.25
    submitted = cluster_progress(points[:3])
    assert submitted.text == "1 queued · 1 running · 1 done of 3"
    table = point_table(points)
    assert table.to_dict("list") == {
        "Point": ["32 batch 1", "32 batch 2", "64 batch 1", "64 batch 2"],
        "State": ["done", "running", "queued", "to submit"],
        "Slurm job": ["101_0", "101_1", "102_0", ""],
    }


def test_what_is_not_a_point_in_the_lock_is_left_out():
    raw = [*POINT_STATES[:1], {"label": "x", "state": "exploded"}, {"state": "done"}, "junk"]
    assert point_states(raw) == (PointState("32 batch 1", "done", "101_0"),)
    assert point_states(None) == () and point_states("junk") == ()
    assert cluster_progress(()).text == "0 queued · 0 running · 0 done of 0"


def test_a_slurm_sweep_started_elsewhere_shows_where_it_runs_and_its_points(db: Path):
    other = submitter(db)
    current = launcher.status(db)
    assert current.running and current.external and current.on_slurm
    assert current.executor == EXECUTOR
    assert current.point_states == point_states(POINT_STATES)
    assert not current.cancelling  # nothing launched here asked it to stop
    other.kill()
    other.wait()


def test_a_launched_slurm_sweep_says_where_it_runs_before_its_sweep_does(db: Path, tmp_path):
    gate = tmp_path / "gate"
    waits = (
        f"import pathlib, time\nwhile not pathlib.Path({str(gate)!r}).exists(): time.sleep(0.02)"
    )
    sweeping = JobCommand(jobstatus.PHASE_SWEEPING, (PY, "-c", waits))
    launcher.start_job(db, [sweeping], COMMAND, points_total=4, executor=EXECUTOR)
    current = launcher.status(db)
    assert current.running and current.on_slurm and current.point_states == ()
    gate.touch()
    wait_for(lambda: not launcher.status(db).running, what="the job")


def test_a_local_sweep_is_not_on_slurm():
    assert not jobstatus.JobStatus(running=True, phase=jobstatus.PHASE_SWEEPING).on_slurm


# --- cancelling ------------------------------------------------------------------------


def test_a_slurm_sweep_gets_the_time_to_cancel_its_jobs():
    assert launcher.cancel_grace_s(None) == launcher.CANCEL_GRACE_S
    assert launcher.cancel_grace_s(EXECUTOR) == launcher.SLURM_CANCEL_GRACE_S
    # Long enough for scancel to answer on a slow controller, with time to spare after.
    assert launcher.SLURM_CANCEL_GRACE_S > slurm.COMMAND_TIMEOUT_S


def test_cancel_waits_for_a_slurm_sweep_to_cancel_its_jobs(db: Path, monkeypatch):
    # A local sweep would be killed after 0.5 s; the submitter needs 2 s to cancel its jobs.
    monkeypatch.setattr(launcher, "CANCEL_GRACE_S", 0.5)
    other = submitter(db, cancel_s=2.0)
    stopped = launcher.cancel(db)
    assert other.wait(timeout=10) == 130  # it ended on its own, not by SIGKILL
    assert not stopped.running
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]


def test_a_launched_slurm_sweep_being_cancelled_reads_as_cancelling(db: Path):
    sweep = JobCommand(jobstatus.PHASE_SWEEPING, (PY, "-c", SUBMITTER, str(db), COMMAND, "0"))
    launcher.start_job(db, [sweep], COMMAND, points_total=4, executor=EXECUTOR)
    # Until it has said which points it holds, the lock alone is not yet a Slurm sweep.
    wait_for(lambda: launcher.status(db).point_states, what="the submitter's points")
    assert not launcher.status(db).cancelling
    # What `cancel` writes first, before its SIGTERM: another tab then reads this.
    (jobstatus.state_dir(db) / jobstatus.CANCEL_FILE).write_text(job.now_iso())
    current = launcher.status(db)
    assert current.running and current.cancelling and current.on_slurm
    assert current.point_states == point_states(POINT_STATES)
    stopped = launcher.cancel(db)
    assert stopped.phase == job.PHASE_CANCELLED and not stopped.cancelling
    assert stopped.exit_codes == {"sweeping": 130}
