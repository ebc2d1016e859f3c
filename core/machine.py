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
from functools import cache
from pathlib import Path

import psutil

from core import profiles

_KIB = 1024
# Distribution names TensorFlow is published under; the first one installed wins.
_TENSORFLOW_DISTRIBUTIONS = ("tensorflow", "tensorflow-cpu", "tensorflow-intel", "tf-nightly")


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


def onednn_enabled() -> bool:
    """Whether TensorFlow will use oneDNN kernels in a child started from here.

    TensorFlow enables oneDNN by default on x86 Linux; the variable turns it off.
    """
    return os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1") not in ("0", "false", "False")


def this_profile() -> profiles.MachineProfile:
    """The profile of a run measured from this process now (what sizing defaults to)."""
    return profiles.profile_of(
        {**machine_info(), **software_info(), "onednn_enabled": onednn_enabled()}
    )
