"""CPU seconds of a command and everything it starts, detached processes included.

    .venv/bin/python scripts/cpu_time.py -- .venv/bin/python -m pytest -n 0 tests/...

On a shared machine wall time measures the neighbours; CPU time (user + system)
measures the work. ``/usr/bin/time`` only counts descendants that their parents
waited for: a sweep the launcher starts detached is re-parented to init and never
counted. Here this process becomes the child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``):
orphans are re-parented to it, it reaps every one, and ``RUSAGE_CHILDREN`` then holds
the whole tree's CPU. Prints one line to stderr and exits with the command's status.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER) failed")


def reap_all() -> None:
    """Wait for every descendant re-parented here, until none is left."""
    while True:
        try:
            os.wait()
        except ChildProcessError:
            return


def main(argv: list[str]) -> int:
    command = argv[1:] if argv[:1] == ["--"] else argv
    if not command:
        print(__doc__, file=sys.stderr)
        return 2
    become_subreaper()
    started = time.monotonic()
    status = subprocess.call(command)
    reap_all()
    wall = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    print(
        f"cpu_time: {cpu:.1f} s CPU (user {usage.ru_utime:.1f} + sys {usage.ru_stime:.1f}), "
        f"{wall:.1f} s wall, exit {status}",
        file=sys.stderr,
    )
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
