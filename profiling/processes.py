"""What the kernel can tell about a profiled child: who killed it, and tying it to its parent.

A child that ends by a signal nobody in memplan sent was killed from outside.
Only the kernel can say whether that was its OOM killer, and only a counter that
counts the child's own OOM kills says so for the child: Linux has no per-process
OOM-kill counter, but it counts OOM kills per memory cgroup (v2 ``memory.events``,
v1 ``memory.oom_control``). `ChildCgroup` makes a memory cgroup for the child
alone, beside nothing else, and the child joins it before it runs anything
(`child_preexec`); its ``oom_kill`` counter is then the child's own.

Where the kernel does not let memplan make one (no write access to the cgroup
tree, a cgroup v2 parent without the memory controller delegated, not Linux),
there is no per-child evidence, and a SIGKILL from outside is recorded
``killed``, never ``oom`` (a resumed sweep measures it again); the counters the
machine does show (this process's cgroup, ``/proc/vmstat``: `oom_kill_counts`)
only go into its message, since they also count every other process's OOM kills.

`die_with_parent` ties a child to the process that starts it (Linux
``PR_SET_PDEATHSIG``): the kernel kills the child the moment that process dies,
however it dies (``kill -9`` included).
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
PROC_VMSTAT = Path("/proc/vmstat")
# An emptied cgroup can be removed once the kernel has finished with its last process.
REMOVE_TRIES = 50
REMOVE_RETRY_S = 0.02
# Signals that mean the child crashed by itself rather than was killed.
CRASH_SIGNALS = frozenset(
    {signal.SIGSEGV, signal.SIGABRT, signal.SIGBUS, signal.SIGFPE, signal.SIGILL}
)


def signal_name(number: int) -> str:
    """``SIGKILL`` for 9; ``signal 64`` for a number without a name here."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _counter(path: Path, key: str = "oom_kill") -> int | None:
    """The ``key N`` line of a kernel counters file, or None when it has none."""
    try:
        text = path.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == key and value.strip().isdigit():
            return int(value)
    return None


def _cgroup_files(proc_cgroup: Path, root: Path) -> list[Path]:
    """This process's cgroup counter files that count OOM kills (v2, then v1)."""
    return [folder / name for folder, name in _memory_groups(proc_cgroup, root)]


def oom_kill_counts(
    proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT, vmstat: Path = PROC_VMSTAT
) -> dict[str, int]:
    """Every OOM-kill counter the kernel shows this process, by file: {} where it shows none.

    These count other processes' OOM kills too (this process's whole cgroup, the
    machine): context for a message, never evidence about one child.
    """
    counts = {}
    for path in [*_cgroup_files(proc_cgroup, root), vmstat]:
        count = _counter(path)
        if count is not None:
            counts[str(path)] = count
    return counts


def oom_kills_since(before: dict[str, int], after: dict[str, int]) -> str | None:
    """Which counter moved between two `oom_kill_counts`, as words; None when none did."""
    moved = [
        f"oom_kill in {path} went from {before[path]} to {count}"
        for path, count in after.items()
        if path in before and count > before[path]
    ]
    return "; ".join(moved) or None


class ChildCgroup:
    """A memory cgroup holding only the profiled child (and what it starts)."""

    def __init__(self, path: Path, counter_file: str) -> None:
        self.path = path
        self.counter = path / counter_file
        self._procs = str(path / "cgroup.procs")

    @classmethod
    def create(
        cls, proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT
    ) -> ChildCgroup | None:
        """A new cgroup under this process's memory cgroup; None where none can be made."""
        name = f"memplan-child-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        for parent, counter_file in _memory_groups(proc_cgroup, root):
            path = parent / name
            try:
                path.mkdir()
            except OSError:
                continue
            group = cls(path, counter_file)
            if group.counts():  # v2 without the memory controller delegated has no counter
                return group
            group.remove()
        return None

    def join(self) -> None:
        """Move the calling process into the group (in the child, before it runs anything)."""
        try:
            with open(self._procs, "w") as procs:
                procs.write("0")
        except OSError:
            pass  # the counter then stays 0: never evidence of an OOM kill that did not happen

    def counts(self) -> dict[str, int]:
        """The group's OOM-kill counter, ``{file: count}``; {} if it cannot be read."""
        count = _counter(self.counter)
        return {} if count is None else {str(self.counter): count}

    def remove(self) -> None:
        """Remove the group once its processes have ended (the kernel refuses it before)."""
        for _ in range(REMOVE_TRIES):
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                time.sleep(REMOVE_RETRY_S)


def _memory_groups(proc_cgroup: Path, root: Path) -> list[tuple[Path, str]]:
    """This process's memory cgroup folders, with the file that counts OOM kills there."""
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return []
    groups = []
    for line in lines:
        _, controllers, group = line.split(":", 2)
        group = group.lstrip("/")
        if controllers == "":
            groups += [(root / group, "memory.events"), (root / "unified" / group, "memory.events")]
        elif "memory" in controllers.split(","):
            groups.append((root / "memory" / group, "memory.oom_control"))
    return groups


def child_preexec(cgroup: ChildCgroup | None) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a profiled child: `die_with_parent`, then join ``cgroup``."""
    tie = die_with_parent()
    if cgroup is None:
        return tie

    def preexec() -> None:
        if tie is not None:
            tie()
        cgroup.join()

    return preexec


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the kernel SIGKILL the child when this process dies.

    ``PR_SET_PDEATHSIG`` fires when the *thread* that started the child ends, so
    it is set only from the main thread (which lives as long as the process);
    elsewhere, and off Linux, None: the child's own parent check (`profiling.child`)
    still stops it, a little later.
    """
    prctl = _prctl()
    if prctl is None or threading.current_thread() is not threading.main_thread():
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the request took effect
            os._exit(1)

    return preexec
