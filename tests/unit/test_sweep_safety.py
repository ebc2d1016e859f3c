"""What keeps a sweep honest without TensorFlow: kill classification, the sweep lock, pending runs.

Real processes where the behaviour is about processes (a lock holder killed
with SIGKILL, a parent killed under its child), each a Python one-liner.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from core import database, store
from core.errors import StoreError
from profiling import pending, processes, sweeplock
from profiling.runner import classify_signal
from tests.conftest import build_record

PY = sys.executable
REPO = database.REPO_ROOT


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return database.ensure_database(tmp_path / "runs.duckdb")


def wait_for(condition, timeout_s: float = 30, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


# --- who killed the child ---------------------------------------------------------------


def test_a_sigkill_the_kernel_did_not_count_as_an_oom_kill_is_killed_not_oom():
    counters = {"/proc/vmstat": 7}
    status, message = classify_signal(signal.SIGKILL, counters, dict(counters))
    assert status == "killed"
    assert message.startswith("killed by SIGKILL (signal 9) from outside memplan")
    assert "counted no OOM kill" in message and "measures this point again" in message


def test_a_sigkill_while_the_kernels_oom_kill_counter_moved_is_oom():
    before = {"/sys/fs/cgroup/x/memory.events": 0, "/proc/vmstat": 3}
    after = {"/sys/fs/cgroup/x/memory.events": 1, "/proc/vmstat": 4}
    status, message = classify_signal(signal.SIGKILL, before, after)
    assert status == "oom"
    assert "kernel's OOM killer" in message
    assert "oom_kill in /sys/fs/cgroup/x/memory.events went from 0 to 1" in message


def test_without_a_kernel_counter_a_sigkill_alone_is_not_proof_of_oom():
    status, message = classify_signal(signal.SIGKILL, {}, {})
    assert status == "killed" and "no OOM-kill counter" in message


def test_other_signals_are_killed_and_crashes_are_errors():
    assert classify_signal(signal.SIGTERM, {}, {})[0] == "killed"
    assert "SIGTERM (signal 15)" in classify_signal(signal.SIGTERM, {}, {})[1]
    status, message = classify_signal(signal.SIGSEGV, {}, {}, tail="Fatal Python error")
    assert status == "error" and "SIGSEGV" in message and "Fatal Python error" in message


def test_oom_kill_counters_are_read_from_cgroup_v2_v1_and_vmstat(tmp_path: Path):
    root = tmp_path / "cgroup"
    (root / "unified" / "job").mkdir(parents=True)
    (root / "unified" / "job" / "memory.events").write_text("low 0\noom 2\noom_kill 2\n")
    (root / "memory" / "job").mkdir(parents=True)
    (root / "memory" / "job" / "memory.oom_control").write_text("under_oom 0\noom_kill 5\n")
    proc_cgroup = tmp_path / "cgroup.txt"
    proc_cgroup.write_text("4:memory:/job\n1:cpu:/\n0::/job\n")
    vmstat = tmp_path / "vmstat"
    vmstat.write_text("nr_free_pages 1\noom_kill 9\n")
    counts = processes.oom_kill_counts(proc_cgroup, root, vmstat)
    assert counts == {
        str(root / "unified" / "job" / "memory.events"): 2,
        str(root / "memory" / "job" / "memory.oom_control"): 5,
        str(vmstat): 9,
    }
    assert processes.oom_kill_counts(tmp_path / "none", root, tmp_path / "none") == {}


# --- a child never outlives its parent ----------------------------------------------------

PARENT = """
import subprocess, sys, time
from profiling import processes
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                         preexec_fn=processes.die_with_parent(), start_new_session=True)
print(child.pid, flush=True)
time.sleep(120)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_started_with_die_with_parent_dies_when_its_parent_is_killed():
    parent = subprocess.Popen([PY, "-c", PARENT], cwd=REPO, stdout=subprocess.PIPE, text=True)
    child_pid = int(parent.stdout.readline())
    assert not gone(child_pid)
    parent.send_signal(signal.SIGKILL)
    parent.wait(timeout=10)
    wait_for(lambda: gone(child_pid), timeout_s=5, what="the orphaned child to die")


# --- one sweep per database ----------------------------------------------------------------

HOLDER = """
import sys, time
from profiling import sweeplock
with sweeplock.hold(sys.argv[1], sys.argv[2], "memplan sweep --stand-in", 3):
    print("held", flush=True)
    time.sleep(120)
"""


def hold_in_another_process(db: Path, sweep_id: str = "other") -> subprocess.Popen:
    process = subprocess.Popen(
        [PY, "-c", HOLDER, str(db), sweep_id], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_second_sweep_on_a_database_is_refused_naming_the_one_that_holds_it(db: Path):
    other = hold_in_another_process(db)
    try:
        current = sweeplock.holder(db)
        assert current.pid == other.pid and current.sweep_id == "other"
        assert current.command == "memplan sweep --stand-in"
        assert sweeplock.holder_process(current).pid == other.pid
        with (
            pytest.raises(sweeplock.SweepBusyError) as refused,
            sweeplock.hold(db, "mine"),
        ):
            pass
        message = str(refused.value)
        assert f"another sweep is already writing to runs.duckdb (pid {other.pid} on " in message
        assert "memplan sweep --stand-in" in message
    finally:
        other.kill()
        other.wait()


def test_the_lock_of_a_sweep_killed_with_sigkill_is_free_at_once(db: Path):
    other = hold_in_another_process(db)
    other.kill()
    other.wait()
    assert sweeplock.holder(db) is None
    with sweeplock.hold(db, "mine") as lock:
        lock.update(points_done=2, current_point="16 batch 2")
        current = sweeplock.holder(db)
        assert (current.sweep_id, current.points_done, current.current_point) == (
            "mine",
            2,
            "16 batch 2",
        )
    assert sweeplock.holder(db) is None
    assert sweeplock.holder(db.with_name("never.duckdb")) is None


def test_only_sweeps_whose_process_is_gone_are_marked_interrupted(db: Path):
    for sweep_id in ("dead", "alive", "done"):
        store.create_sweep(db, sweep_id, "memplan sweep", {}, 2)
    store.update_sweep(db, "done", status="finished", finished=True)
    other = hold_in_another_process(db, "alive")
    try:
        assert sweeplock.interrupt_stale(db) == ["dead"]
    finally:
        other.kill()
        other.wait()
    statuses = dict(store.load_sweeps(db)[["sweep_id", "status"]].itertuples(index=False))
    assert statuses == {"dead": "interrupted", "alive": "running", "done": "finished"}
    # Its process gone, the last one is interrupted too; a finished sweep never changes.
    assert sweeplock.interrupt_stale(db) == ["alive"]
    assert store.interrupt_sweeps(db, ["done"]) == []


# --- a measured point is never lost --------------------------------------------------------


def test_a_pending_record_round_trips_through_its_file(db: Path):
    record = build_record(timeline=5)
    path = pending.save(db, record)
    assert path.parent == db.parent / "runs.pending"
    assert pending.from_json(path.read_text()) == record
    assert pending.from_json(path.read_text()).samples == record.samples


def test_leftover_pending_records_are_stored_once_and_removed(db: Path):
    stored_already = build_record(timeline=3)
    store.insert_run(db, stored_already)  # its insert committed; the file was not yet deleted
    never_stored = build_record(timeline=3)
    pending.save(db, stored_already)
    pending.save(db, never_stored)
    (pending.pending_dir(db) / "garbage.json").write_text("{not json")
    assert pending.ingest(db) == 2
    runs = store.load_runs(db)
    assert sorted(runs["run_id"]) == sorted([stored_already.run_id, never_stored.run_id])
    assert len(store.load_samples(db)) == 6
    assert [p.name for p in pending.pending_dir(db).iterdir()] == ["garbage.json.bad"]
    assert pending.ingest(db) == 0


def test_store_record_leaves_nothing_pending_when_the_insert_succeeds(db: Path):
    record = build_record()
    pending.store_record(db, record)
    assert store.get_run(db, record.run_id)["run_id"] == record.run_id
    assert list(pending.pending_dir(db).glob("*.json")) == []


def test_a_record_whose_insert_fails_stays_pending_and_says_where(db: Path, monkeypatch):
    monkeypatch.setenv(database.LOCK_TIMEOUT_ENV_VAR, "0.2")
    held = subprocess.Popen(
        [
            PY,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
            "print('held', flush=True); time.sleep(60)",
            str(db),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert held.stdout.readline().strip() == "held"
        record = build_record()
        with pytest.raises(StoreError, match="kept in .*runs.pending.* next sweep"):
            pending.store_record(db, record)
    finally:
        held.kill()
        held.wait()
    [left] = pending.pending_dir(db).glob("*.json")
    assert json.loads(left.read_text())["run"]["run_id"] == record.run_id


# --- the killed status everywhere a status goes --------------------------------------------


def test_a_killed_run_exports_imports_filters_and_lists(db: Path, tmp_path: Path):
    from memplan.cli import main
    from presentation import browse
    from profiling import exchange

    killed = build_record(status="killed", message="killed by SIGKILL (signal 9) ...")
    store.insert_run(db, killed)
    store.insert_run(db, build_record())
    exported = tmp_path / "runs.csv"
    exchange.export_runs(db, exported)
    other = database.ensure_database(tmp_path / "other.duckdb")
    assert exchange.import_runs(other, exported) == 2
    runs = store.load_runs(other)
    assert sorted(runs["status"]) == ["killed", "ok"]
    assert "killed" in browse.filter_options(runs, "status")
    assert browse.filter_runs(runs, {"status": ["killed"]})["run_id"].tolist() == [killed.run_id]
    assert main(["list", "--status", "killed", "--db", str(other)]) == 0


def test_a_child_whose_parent_is_not_the_one_it_was_given_stops_on_its_own():
    # Where PR_SET_PDEATHSIG is not available, the child's own check is what stops it.
    from profiling.child import ORPHANED_EXIT_CODE

    command = [PY, "-m", "profiling.child", "--workload", "unet3d", "--config", "{}"]
    command += ["--steps", "1", "--seed", "0", "--result", "/dev/null", "--parent-pid", "1"]
    assert subprocess.run(command, cwd=REPO, timeout=60).returncode == ORPHANED_EXIT_CODE
