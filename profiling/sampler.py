"""The child's resident-memory sampler: memory_profiler's, or the same with psutil alone.

`profiling.runner` samples the child with memory_profiler's ``memory_usage`` (the Dell
paper's mprof method). A GPU image often has psutil but not memory_profiler
(`profiling.folder_sweep` runs there); `psutil_memory_usage` then writes the same
``MEM <MiB> <epoch>`` lines to the same stream: the resident memory of the process and
its children, every ``interval`` seconds, until the process ends.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import psutil

_MIB = 2**20


def psutil_memory_usage(process: Any, interval: float, include_children: bool, stream: Any) -> None:
    """Write ``MEM <MiB> <epoch>`` to ``stream`` every ``interval`` s while ``process`` runs."""
    watched = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            members = [watched, *(watched.children(recursive=True) if include_children else [])]
            rss = 0
            for member in members:
                try:
                    rss += member.memory_info().rss
                except psutil.NoSuchProcess:  # a child of the child that just ended
                    continue
        except psutil.NoSuchProcess:
            return
        stream.write(f"MEM {rss / _MIB:.6f} {time.time():.4f}\n")
        time.sleep(interval)


def memory_usage() -> Callable[..., Any]:
    """memory_profiler's ``memory_usage`` where it is installed, else `psutil_memory_usage`."""
    try:
        from memory_profiler import memory_usage as sampled
    except ImportError:
        return psutil_memory_usage
    return sampled
