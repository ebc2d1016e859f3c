"""The launcher sees every sweep on its database, not only the one it launched.

Stand-in sweeps hold the database's sweep lock the way `profiling.local_sweep.run_sweep`
does (`profiling.sweeplock.hold`) and sleep; no TensorFlow. The real sweeps are
in tests/integration/test_sweep_hardening.py.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core import database, store
from profiling import job, jobstatus, launcher, sweeplock
from profiling.launcher import JobCommand, LauncherError

PY = sys.executable
COMMAND = "memplan sweep --image-sizes 16 --db x"
# Holds the sweep lock like a sweep, records itself running, then sleeps.
STAND_IN = """
import sys, time
from profiling import sweeplock
from core import store
db, command = sys.argv[1], sys.argv[2]
with sweeplock.hold(db, "standin", command, 4) as lock:
    store.create_sweep(db, "standin", command, {}, 4)
    lock.update(points_done=1, current_point="16 batch 2")
    print("holding", flush=True)
    time.sleep(120)
"""


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "runs.duckdb")


@pytest.fixture(autouse=True)
def _nothing_left_behind(db: Path):
    yield
    if launcher.status(db).running:
        launcher.cancel(db, grace_s=2)


def wait_for(condition, timeout_s: float = 30, what: str = "it") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def cli_sweep(db: Path) -> subprocess.Popen:
    """A sweep started from a terminal: not by the launcher."""
    process = subprocess.Popen(
        [PY, "-c", STAND_IN, str(db), COMMAND],
        cwd=database.REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout.readline().strip() == "holding"
    return process


def test_a_sweep_started_elsewhere_shows_as_running_and_blocks_a_launch(db: Path):
    other = cli_sweep(db)
    current = launcher.status(db)
    assert current.running and current.external and current.phase == jobstatus.PHASE_SWEEPING
    assert (current.pid, current.command, current.sweep_id) == (other.pid, COMMAND, "standin")
    assert (current.points_done, current.points_total) == (1, 4)
    assert current.current_point == "16 batch 2"
    with pytest.raises(LauncherError, match=rf"already running for runs.duckdb \(pid {other.pid}"):
        launcher.start_job(db, [JobCommand(jobstatus.PHASE_SWEEPING, (PY, "-c", "pass"))])

    stopped = launcher.cancel(db, grace_s=5)
    assert other.wait(timeout=5) == -signal.SIGTERM
    assert not stopped.running and stopped.phase == jobstatus.PHASE_IDLE
    # It died without recording its end: the launcher marked it.
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]


def test_a_sweep_whose_process_is_gone_reads_and_is_stored_as_interrupted(db: Path):
    other = cli_sweep(db)
    other.kill()
    other.wait()
    cached = store.load_sweeps(db)
    assert cached["status"].tolist() == ["running"]  # as the dead sweep left it
    assert not launcher.status(db, sweeps=cached).running
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]


def test_a_job_whose_process_died_while_its_sweep_runs_on_is_not_crashed(db: Path):
    stand_in = JobCommand(jobstatus.PHASE_SWEEPING, (PY, "-c", STAND_IN, str(db), COMMAND))
    started = launcher.start_job(db, [stand_in], sweep_command=COMMAND, points_total=4)
    wait_for(lambda: getattr(sweeplock.holder(db), "points_done", 0) == 1, what="the stand-in")
    sweep_pid = sweeplock.holder(db).pid
    job_process = psutil.Process(started.pid)
    job_process.kill()  # the job's own process, not its sweep
    psutil.wait_procs([job_process], timeout=5)

    current = launcher.status(db)
    assert current.running and not current.external
    assert current.phase == jobstatus.PHASE_SWEEPING != jobstatus.PHASE_CRASHED
    assert current.pid == sweep_pid and "its sweep runs on" in current.message
    assert (current.points_done, current.points_total) == (1, 4)
    with pytest.raises(LauncherError, match=rf"already running .*pid {sweep_pid}"):
        launcher.start_job(db, [stand_in], sweep_command=COMMAND)

    stopped = launcher.cancel(db, grace_s=5)
    assert not stopped.running and stopped.phase == job.PHASE_CANCELLED
    assert stopped.sweep_status == "interrupted"
    wait_for(lambda: not psutil.pid_exists(sweep_pid) or _zombie(sweep_pid), what="the sweep")


def _zombie(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True
