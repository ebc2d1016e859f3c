"""Sweeps under attack, with real processes: kills from outside, two sweeps at once, a held lock.

Each probe profiles 16^3 volumes through a 4-filter U-Net (a few seconds of
torch per point from the command line, of TensorFlow from the dashboard's launcher)
into a temporary DuckDB file, and does to it what a
person or the machine might: ``kill -9`` the profiled child or the sweep,
start the same sweep twice, launch from the dashboard while a CLI sweep runs,
kill the dashboard's job process, hold the database while a point finishes.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from application import sweep_job
from core import database, store
from profiling import jobstatus, launcher, pending, requests, sweeplock
from profiling.launcher import LauncherError
from tests.integration.conftest import profiled_children

pytestmark = [pytest.mark.tensorflow, pytest.mark.torch]

REPO = database.REPO_ROOT
# What the probes attack is the sweep's, whichever framework its child trains: the command
# line's sweeps train torch, whose child costs about half a TensorFlow one's CPU (mostly
# TensorFlow's import); the launcher's, TensorFlow, its default.
TINY = [
    *("--framework", "torch", "--image-sizes", "16", "--base-filters", "4", "--levels", "2"),
    *("--steps", "2", "--quiet"),
]
WAIT_S = 120
# How soon a sweep waiting on a held database must end on SIGTERM: before the fix it
# ignored the signal for 61 s; it ends in well under a second, and CI once took 2.06 s
# on a loaded 2-core machine, so the test allows a margin the old behaviour cannot meet.
SIGTERM_END_S = 5.0


@pytest.fixture
def db(tmp_path: Path):
    path = tmp_path / "runs.duckdb"
    yield path
    if launcher.status(path).running:
        launcher.cancel(path, grace_s=5)


def sweep_args(db: Path, *batches: str) -> list[str]:
    """``memplan``'s words for a sweep of the tiny point at ``batches`` into ``db``."""
    return ["sweep", *TINY, "--batch-sizes", *batches, "--memory-limit", "3GiB", "--db", str(db)]


def start_sweep(db: Path, *batches: str, log: Path) -> subprocess.Popen:
    """The sweep in a ``python -m memplan`` of its own, as a user starts it: what the
    probes attack."""
    out = log.open("w")
    command = [sys.executable, "-m", "memplan", *sweep_args(db, *batches)]
    return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=out)


@pytest.fixture
def run_sweep(memplan_main) -> Callable[..., subprocess.CompletedProcess[str]]:
    """A sweep run to its end in this process (`memplan_main`): the sweep that resumes, or is
    refused, after an attack; only its outcome is asserted, and a process of its own would
    cost a second of CPU starting."""
    return lambda db, *batches: memplan_main(*sweep_args(db, *batches))


def wait_for(condition, what: str, timeout_s: float = WAIT_S):
    deadline = time.monotonic() + timeout_s
    while not (found := condition()):
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)
    return found


@contextlib.contextmanager
def paused(child: psutil.Process) -> Iterator[None]:
    """``child`` stopped (SIGSTOP) inside the block: a torch child may otherwise finish its
    point before a loaded machine has started what the probe does beside it. Its sweep
    still kills it with SIGKILL, which a stopped process obeys."""
    child.suspend()
    try:
        yield
    finally:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.resume()


def gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def point_counts(db: Path) -> dict[tuple, int]:
    runs = store.load_runs(db)
    keys = zip(runs["batch_size"], runs["repeat"], strict=True)
    counts: dict[tuple, int] = {}
    for key in keys:
        counts[key] = counts.get(key, 0) + 1
    return counts


# --- 1: an outside kill is not an OOM ----------------------------------------------------


def test_probe1_a_child_killed_from_outside_is_killed_not_oom_and_resume_measures_it(
    db: Path, tmp_path: Path, run_sweep
):
    sweep = start_sweep(db, "1", "2", log=tmp_path / "sweep.log")
    [child] = wait_for(lambda: profiled_children(sweep.pid), "the first point's child")
    child.send_signal(signal.SIGKILL)  # as `kill -9 <child>` from a terminal
    assert sweep.wait(timeout=WAIT_S) == 0, (tmp_path / "sweep.log").read_text()

    runs = store.load_runs(db).set_index("batch_size")
    assert runs.loc[1, "status"] == "killed"  # before the fix: oom
    assert "killed by SIGKILL (signal 9) from outside memplan" in runs.loc[1, "message"]
    # A kill is no evidence about memory: the larger point still ran (before: skipped).
    assert runs.loc[2, "status"] == "ok"

    resumed = run_sweep(db, "1", "2")
    assert resumed.returncode == 0, resumed.stderr
    assert "1 ok, 1 already measured" in resumed.stdout  # the killed point, measured again
    assert sorted(store.load_runs(db, store.RunFilter(status="ok"))["batch_size"]) == [1, 2]


# --- 2: a child never outlives its sweep ---------------------------------------------------


def test_probe2_a_sweep_killed_with_sigkill_takes_its_child_and_reads_interrupted(
    db: Path, tmp_path: Path
):
    sweep = start_sweep(db, "1", log=tmp_path / "sweep.log")
    [child] = wait_for(lambda: profiled_children(sweep.pid), "the child")
    sweep.send_signal(signal.SIGKILL)  # `kill -9 <sweep>`
    sweep.wait(timeout=10)
    # Before the fix the child trained on for ~15 s with no watchdog and no limit.
    wait_for(lambda: gone(child), "the orphaned child to die", timeout_s=3)

    assert sweeplock.holder(db) is None
    cached = store.load_sweeps(db)
    assert cached["status"].tolist() == ["running"]  # what the killed sweep left behind
    assert not launcher.status(db, sweeps=cached).running
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]  # before: running forever


# --- 3: one sweep per database -------------------------------------------------------------


def test_probe3_the_same_sweep_started_twice_runs_once(db: Path, tmp_path: Path, run_sweep):
    first = start_sweep(db, "1", log=tmp_path / "first.log")
    holder = wait_for(lambda: sweeplock.holder(db), "the first sweep's lock")
    [child] = wait_for(lambda: profiled_children(first.pid), "the first sweep's child")
    with paused(child):  # the first sweep is mid-point while the second starts, whatever the load
        second = run_sweep(db, "1")
    assert second.returncode == 2
    assert f"another sweep is already writing to runs.duckdb (pid {first.pid} on " in second.stderr
    assert holder.pid == first.pid
    assert first.wait(timeout=WAIT_S) == 0, (tmp_path / "first.log").read_text()
    assert point_counts(db) == {(1, 0): 1}  # before the fix: each point twice at repeat 0
    assert store.load_sweeps(db)["status"].tolist() == ["finished"]


def test_probe3_the_dashboard_sees_and_cancels_a_cli_sweep_and_cannot_launch_beside_it(
    db: Path, tmp_path: Path
):
    cli = start_sweep(db, "1", "2", log=tmp_path / "cli.log")
    [child] = wait_for(lambda: profiled_children(cli.pid), "the CLI sweep's child")
    with paused(child):  # still running when the dashboard looks, whatever the load
        current = launcher.status(db)
        request = requests.parse_request("16", "1 2", {"base_filters": "4"}, 2, "3GiB")
        with pytest.raises(
            LauncherError, match=rf"already running for runs.duckdb \(pid {cli.pid}"
        ):
            sweep_job.launch(db, request)
    assert current.running and current.external and current.pid == cli.pid
    assert current.command.startswith("memplan sweep --framework torch --image-sizes 16")

    stopped = launcher.cancel(db, grace_s=10)
    assert cli.wait(timeout=5) == 130  # the sweep's own clean interrupt
    assert not stopped.running
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted"]
    assert store.load_runs(db).empty


def test_probe3_a_dead_job_process_whose_sweep_runs_on_is_not_crashed(db: Path):
    request = requests.parse_request("16", "1 2", {"base_filters": "4"}, 2, "3GiB")
    started = sweep_job.launch(db, request)
    [child] = wait_for(lambda: profiled_children(started.pid), "the launched sweep's child")
    job_process = psutil.Process(started.pid)
    job_process.kill()  # the dashboard's job process only
    psutil.wait_procs([job_process], timeout=5)

    current = launcher.status(db)
    # Before the fix: "crashed", and a second launch was accepted.
    assert current.running and current.phase == jobstatus.PHASE_SWEEPING
    assert "its sweep runs on" in current.message
    with pytest.raises(LauncherError, match="already running"):
        sweep_job.launch(db, request)

    stopped = launcher.cancel(db, grace_s=10)
    assert not stopped.running and stopped.phase == "cancelled"
    assert stopped.sweep_status == "interrupted"
    wait_for(lambda: gone(child), "the child", timeout_s=5)


# --- 4: a measured point is never lost -----------------------------------------------------

HOLD_DATABASE = (
    "import duckdb, sys, time\ncon = duckdb.connect(sys.argv[1])\n"
    "print('held', flush=True)\ntime.sleep(90)\n"
)


def test_probe4_sigterm_ends_a_sweep_waiting_on_a_held_database_and_keeps_its_point(
    db: Path, tmp_path: Path, run_sweep
):
    sweep = start_sweep(db, "1", log=tmp_path / "sweep.log")
    wait_for(lambda: profiled_children(sweep.pid), "the child")
    # Another process holds the database from before the point finishes, for 90 s.
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_DATABASE, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        folder = pending.pending_dir(db)
        [kept] = wait_for(lambda: list(folder.glob("*.json")), "the measured point on disk")
        time.sleep(1)  # the sweep is now waiting for the database's lock
        began = time.monotonic()
        sweep.send_signal(signal.SIGTERM)
        assert sweep.wait(timeout=10) == 130
        assert time.monotonic() - began < SIGTERM_END_S
        assert kept.exists()  # the measured point is on disk, not discarded
    finally:
        holder.kill()
        holder.wait()

    again = run_sweep(db, "1")
    assert again.returncode == 0, again.stderr
    assert "marked 1 dead sweep(s) interrupted; stored 1 run(s) left pending" in again.stdout
    assert "1 already measured" in again.stdout  # so no child ran again
    [run] = store.load_runs(db).to_dict("records")
    assert run["run_id"] == kept.stem and run["status"] == "ok"
    assert len(store.load_samples(db, [run["run_id"]])) > 0
    assert not kept.exists()
    # The first sweep could not record its end under the lock; the second did.
    assert store.load_sweeps(db)["status"].tolist() == ["interrupted", "finished"]
