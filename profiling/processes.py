"""What the kernel can tell about a profiled child: who killed it, and tying it to its parent.

A child that ends by a signal nobody in memplan sent was killed from outside.
Only the kernel can say whether that was its OOM killer: it counts every OOM
kill in the child's memory cgroup (v2 ``memory.events``, v1
``memory.oom_control``) and system-wide (``/proc/vmstat``). `oom_kill_counts`
reads those counters before a point and `oom_kills_since` after it; a SIGKILL
with no counter moved is not taken for out of memory.

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
from collections.abc import Callable
from pathlib import Path

PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_CGROUP = Path("/proc/self/cgroup")
PROC_VMSTAT = Path("/proc/vmstat")
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
    try:
        lines = proc_cgroup.read_text().splitlines()
    except OSError:
        return []
    files = []
    for line in lines:
        _, controllers, group = line.split(":", 2)
        group = group.lstrip("/")
        if controllers == "":  # the v2 (unified) hierarchy
            files += [root / group / "memory.events", root / "unified" / group / "memory.events"]
        elif "memory" in controllers.split(","):
            files.append(root / "memory" / group / "memory.oom_control")
    return files


def oom_kill_counts(
    proc_cgroup: Path = PROC_CGROUP, root: Path = CGROUP_ROOT, vmstat: Path = PROC_VMSTAT
) -> dict[str, int]:
    """Every OOM-kill counter the kernel shows this process, by file: {} where it shows none."""
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
