"""A CPU-bound load on every core, for timing the dashboard while a sweep would run.

A sweep on this machine keeps every core busy (TensorFlow trains with one thread per
core); `busy_cores` stands in for it with one busy Python loop per core, at the same
priority as the app, for as long as its block runs. A loop is a plain process: it
needs no TensorFlow, writes nothing and stops with its block (or with this process).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

# Spins until killed; exits by itself if its parent goes (stdin closes), so no loop
# outlives a benchmark that crashed.
LOOP = (
    "import sys, threading\n"
    "threading.Thread(target=lambda: (sys.stdin.read(), __import__('os')._exit(0)), "
    "daemon=True).start()\n"
    "while True:\n    pass\n"
)


@contextlib.contextmanager
def busy_cores(count: int | None = None) -> Iterator[int]:
    """Run ``count`` busy loops (default: one per core) while the block runs; yields the count."""
    count = count or os.cpu_count() or 1
    loops = [
        subprocess.Popen([sys.executable, "-c", LOOP], stdin=subprocess.PIPE) for _ in range(count)
    ]
    try:
        yield count
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait(timeout=30)
