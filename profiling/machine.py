"""Facts about this machine and its software, recorded with every run.

Read without importing TensorFlow (package metadata, /proc, psutil), so the
parent process stays light and a sweep can tell "same host, same software"
before it launches anything.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
from functools import cache
from pathlib import Path

import psutil

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


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


@cache
def machine_info() -> dict[str, object]:
    return {
        "hostname": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_cores": os.cpu_count() or 1,
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
