"""Facts about this machine and its software, recorded with every run.

Read without importing TensorFlow (package metadata, /proc, psutil), so the
parent process stays light and a sweep can tell "same machine profile"
(`core.profiles`) before it launches anything; sizing reads it to answer for
the machine asking by default.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import psutil

from core import profiles

_KIB = 1024
# Distribution names TensorFlow is published under; the first one installed wins.
_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly")
# TensorFlow turns oneDNN on by default only on CPUs with one of these
# neural-network features (/proc/cpuinfo names; tensorflow/core/util/util.cc,
# IsMklEnabled). An AVX2-only AMD EPYC has none, so TensorFlow runs it on its own
# Eigen kernels unless TF_ENABLE_ONEDNN_OPTS=1 asks: 2.71 against 1.31 GiB at
# 64^3 batch 1 there (data/REFERENCE.md).
ONEDNN_DEFAULT_FLAGS = frozenset(
    {"avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8", "amx_bf16"}
)
# The values of TF_ENABLE_ONEDNN_OPTS TensorFlow accepts, lower-cased as it reads them;
# any other value leaves its default.
_ONEDNN_SETTINGS = {"1": True, "true": True, "0": False, "false": False}


def read_proc_status_bytes(pid: int, field: str) -> int | None:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``) in bytes.

    None when the process is gone or the field is absent (a zombie has none).
    """
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    for line in text.splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * _KIB
    return None


def _cpuinfo_field(name: str) -> str | None:
    """The first ``name`` line of /proc/cpuinfo (Linux x86); None where there is none."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.split(":", 1)[0].strip() == name:
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask), which a child inherits."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def intra_op_threads() -> int:
    """The intra-op threads TensorFlow will use in a child started from here.

    memplan never sets them in code, so TensorFlow takes TF_NUM_INTRAOP_THREADS when
    it is a positive number and otherwise one thread per schedulable core.
    """
    configured = os.environ.get("TF_NUM_INTRAOP_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return usable_cores()


@cache
def machine_info() -> dict[str, object]:
    """The machine columns of a run (`core.records.RunRecord`), read from /proc and psutil.

    A fact that cannot be read is None (stored NULL, shown "unknown"), never guessed.
    """
    vendor_id = _cpuinfo_field("vendor_id")
    flags = _cpuinfo_field("flags")
    return {
        "hostname": socket.gethostname(),
        "cpu_vendor": profiles.VENDOR_IDS.get(vendor_id, vendor_id) if vendor_id else None,
        "cpu_model": _cpuinfo_field("model name") or platform.processor() or profiles.UNKNOWN,
        "cpu_isa": profiles.isa_level(flags.split()) if flags is not None else None,
        "cpu_cores": os.cpu_count() or 1,
        "usable_cores": usable_cores(),
        "intra_op_threads": intra_op_threads(),
        "total_ram_bytes": psutil.virtual_memory().total,
        "os": platform.platform(),
    }


def _version(*distributions: str) -> str:
    for name in distributions:
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


@cache
def software_info() -> dict[str, str]:
    """The versions that make two runs comparable (the resume key's software part)."""
    return {
        "python_version": platform.python_version(),
        "tensorflow_version": _version(*_TENSORFLOW_DISTRIBUTIONS),
        "keras_version": _version("keras"),
        "numpy_version": _version("numpy"),
    }


def onednn_default(flags: Iterable[str]) -> bool:
    """Whether TensorFlow turns oneDNN on by default on a Linux CPU with these flags."""
    return not ONEDNN_DEFAULT_FLAGS.isdisjoint(flags)


def onednn_enabled() -> bool:
    """Whether TensorFlow will use oneDNN kernels in a child started from here.

    TensorFlow's own rule, read without importing it: ``TF_ENABLE_ONEDNN_OPTS``
    when it is one of the values TensorFlow accepts, otherwise on only where the
    CPU has one of `ONEDNN_DEFAULT_FLAGS` (`onednn_default`). The profiled child
    records what TensorFlow itself answers (`profiling.child`).
    """
    setting = _ONEDNN_SETTINGS.get(os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").lower())
    if setting is not None:
        return setting
    flags = _cpuinfo_field("flags")
    return flags is not None and onednn_default(flags.split())


def this_profile() -> profiles.MachineProfile:
    """The profile of a run measured from this process now (what sizing defaults to)."""
    return profiles.profile_of(
        {**machine_info(), **software_info(), "onednn_enabled": onednn_enabled()}
    )
