"""Issue 27, finding 7: OOM evidence is the child's own, never the machine's.

Before, the OOM evidence was `/proc/vmstat` and a cgroup holding every process
on the VM: an unrelated OOM kill during a point turned an outside SIGKILL into
``oom``. Now the child runs in a memory cgroup of its own (`ChildCgroup`) and
only that cgroup's counter is evidence. Real processes and real OOM kills: each
test makes a cgroup with a small limit and lets the kernel kill in it.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from profiling import processes
from profiling.runner import classify_signal

ALLOCATE = "x = bytearray(512 * 2**20); import time; time.sleep(30)"
SLEEP = "import time; time.sleep(60)"
LIMIT_BYTES = 64 * 2**20


@pytest.fixture
def cgroups():
    made: list[processes.ChildCgroup] = []

    def make() -> processes.ChildCgroup:
        group = processes.ChildCgroup.create()
        if group is None:
            pytest.skip("the kernel lets this user make no memory cgroup (no per-child evidence)")
        made.append(group)
        return group

    yield make
    for group in made:
        group.remove()


def _limit(group: processes.ChildCgroup) -> None:
    v1 = group.path / "memory.limit_in_bytes"
    target = v1 if v1.exists() else group.path / "memory.max"
    target.write_text(str(LIMIT_BYTES))
    swap = group.path / ("memory.memsw.limit_in_bytes" if v1.exists() else "memory.swap.max")
    if swap.exists():
        swap.write_text(str(LIMIT_BYTES) if v1.exists() else "0")


def _start(code: str, group: processes.ChildCgroup) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", code], preexec_fn=processes.child_preexec(group),
        start_new_session=True,
    )  # fmt: skip


def test_a_real_oom_kill_in_the_childs_own_cgroup_is_oom(cgroups) -> None:
    group = cgroups()
    _limit(group)
    before = group.counts()
    child = _start(ALLOCATE, group)
    assert child.wait(timeout=60) == -signal.SIGKILL
    status, message = classify_signal(signal.SIGKILL, before, group.counts())
    assert status == "oom", message
    assert f"oom_kill in {group.counter} went from 0 to 1" in message


def test_an_outside_sigkill_during_someone_elses_oom_kill_is_killed(cgroups) -> None:
    mine, theirs = cgroups(), cgroups()
    _limit(theirs)
    machine_before = processes.oom_kill_counts()
    before = mine.counts()
    child = _start(SLEEP, mine)
    time.sleep(0.5)
    victim = _start(ALLOCATE, theirs)  # an unrelated process, OOM-killed meanwhile
    assert victim.wait(timeout=60) == -signal.SIGKILL
    child.kill()  # and our child killed from outside
    child.wait()
    elsewhere = processes.oom_kills_since(machine_before, processes.oom_kill_counts())

    status, message = classify_signal(signal.SIGKILL, before, mine.counts(), "", elsewhere)

    assert status == "killed", message
    assert "from outside memplan; the kernel counted no OOM kill meanwhile" in message
    # What the old evidence would have said: the machine-wide counter did move.
    vmstat = processes.PROC_VMSTAT
    if str(vmstat) in machine_before:
        assert elsewhere and str(vmstat) in elsewhere
        assert "the machine's counters moved, for some process" in message


def test_without_a_cgroup_of_its_own_a_sigkill_is_killed_whatever_the_machine_says() -> None:
    status, message = classify_signal(
        signal.SIGKILL, {}, {}, "", "oom_kill in /proc/vmstat went from 3 to 4"
    )
    assert status == "killed"
    assert "offers no OOM-kill counter of the child's own here" in message
    assert "/proc/vmstat went from 3 to 4" in message


def test_the_childs_cgroup_is_removed_after_it(tmp_path: Path) -> None:
    group = processes.ChildCgroup.create()
    if group is None:
        pytest.skip("no memory cgroup can be made here")
    child = _start("pass", group)
    child.wait()
    group.remove()
    assert not group.path.exists()
