"""Facts about this machine and its software, recorded with every run.

Read without importing TensorFlow (package metadata, /proc, psutil), so the
parent process stays light and a sweep can tell "same machine profile"
(`core.profiles`) before it launches anything; sizing reads it to answer for
the machine asking by default.
"""

from __future__ import annotations

import os
import platform
import socket
import subprocess
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

from core import cpu_names, frameworks

if TYPE_CHECKING:  # core.profiles loads pandas, which a GPU sweep's machine may not have
    from core import profiles
from core.workloads.base import COMPUTE_DTYPE

_KIB = 1024
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
# The CPU flags with which TensorFlow hands a half-precision compute dtype to oneDNN
# (IsDataTypeSupportedByOneDNNOnThisCPU, tensorflow/core/util/util.cc). Without them it
# runs that dtype's ops on its own Eigen kernels even with oneDNN on: mixed_bfloat16 on
# an AVX2-only EPYC peaked like the oneDNN-off runs (1.25 against 1.26 GiB at 48^3
# batch 1), not like float32 with oneDNN (1.05 GiB; data/REFERENCE.md).
_BFLOAT16_FLAGS = frozenset({"avx512f", "avx_ne_convert"})
_FLOAT16_FLAGS = frozenset({"avx512_fp16", "amx_fp16"})  # each with avx512bw


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


def cpuinfo_field(text: str, name: str) -> str | None:
    """The first ``name`` line of a /proc/cpuinfo text; None where there is none."""
    for line in text.splitlines():
        if line.split(":", 1)[0].strip() == name:
            return line.split(":", 1)[1].strip()
    return None


def _cpuinfo_field(name: str) -> str | None:
    """The first ``name`` line of /proc/cpuinfo (Linux x86); None where there is none."""
    try:
        return cpuinfo_field(Path("/proc/cpuinfo").read_text(), name)
    except OSError:
        return None


# The /proc/cpuinfo lines that say which generation of a marketing name a CPU is, and the
# runs columns they are stored in (schema 7). Two EPYC generations both read "AMD EPYC" on
# a VM, yet a fresh process's baseline after the TensorFlow import differed (0.69 against
# 0.62 GiB, issue 28), so family and model are part of the profile (`core.profiles`).
GENERATION_LINES: dict[str, str] = {
    "cpu_family": "cpu family",
    "cpu_model_number": "model",
    "cpu_stepping": "stepping",
}


def cpu_generation(text: str) -> dict[str, int | None]:
    """CPU family, model and stepping from a /proc/cpuinfo text, as the runs columns.

    Each is None where the line is absent or not a whole number: an ARM or POWER
    cpuinfo has no "cpu family", and a VM may say "stepping : unknown".
    """
    found = {column: cpuinfo_field(text, line) for column, line in GENERATION_LINES.items()}
    return {column: int(v) if v and v.isdigit() else None for column, v in found.items()}


def _generation() -> dict[str, int | None]:
    try:
        return cpu_generation(Path("/proc/cpuinfo").read_text())
    except OSError:
        return dict.fromkeys(GENERATION_LINES)


def usable_cores() -> int:
    """The CPUs this process may run on (its affinity mask), which a child inherits."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def torch_intra_op_threads() -> int:
    """The intra-op threads torch will use in a child started from here (`torch.get_num_threads`).

    torch's own rule, read without importing it (ATen ``intraop_default_num_threads``):
    one thread per physical core of the machine (cpuinfo's count, which ignores the
    affinity mask; logical CPUs where the physical count is unknown), or fewer where
    MKL_NUM_THREADS, else OMP_NUM_THREADS, asks for fewer: torch 2.13 on a 2-core VM
    gave 2 threads with OMP_NUM_THREADS=3 or MKL_NUM_THREADS=3, 1 with either at 1,
    and MKL_NUM_THREADS=1 won over OMP_NUM_THREADS=2. The child records torch's own answer.
    """
    cores = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    for variable in ("MKL_NUM_THREADS", "OMP_NUM_THREADS"):
        configured = os.environ.get(variable, "")
        if configured.isdigit() and int(configured) > 0:
            return min(int(configured), cores)
    return cores


def intra_op_threads() -> int:
    """The intra-op threads TensorFlow will use in a child started from here.

    memplan never sets them in code, so TensorFlow takes TF_NUM_INTRAOP_THREADS when
    it is a positive number and otherwise one thread per schedulable core.
    """
    configured = os.environ.get("TF_NUM_INTRAOP_THREADS", "")
    if configured.isdigit() and int(configured) > 0:
        return int(configured)
    return usable_cores()


# How long `l3_cache_bytes` waits for getconf, which answers at once where it exists.
_GETCONF_TIMEOUT_S = 5


@cache
def l3_cache_bytes() -> int | None:
    """The L3 cache size TensorFlow's CPU kernels read, bytes; None where it cannot be read.

    Eigen (``Eigen::internal::CacheSizes``) reads it from CPUID, as glibc's
    ``getconf LEVEL3_CACHE_SIZE`` does, not from the kernel's
    /sys/devices/system/cpu/cpu0/cache: on a 2-vCPU AMD EPYC VM those say 256 MiB
    and 32 MiB, and the convolution-gradient buffers measured there are sized by
    256 MiB (`core.analytical.conv_gradient_buffers`).
    """
    try:
        answer = subprocess.run(
            ["getconf", "LEVEL3_CACHE_SIZE"],
            capture_output=True,
            text=True,
            timeout=_GETCONF_TIMEOUT_S,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return int(answer) if answer.isdigit() and int(answer) > 0 else None


@cache
def machine_info() -> dict[str, object]:
    """The machine columns of a run (`core.records.RunRecord`), read from /proc and psutil.

    A fact that cannot be read is None (stored NULL, shown "unknown"), never guessed.
    """
    vendor_id = _cpuinfo_field("vendor_id")
    flags = _cpuinfo_field("flags")
    return {
        "hostname": socket.gethostname(),
        "cpu_vendor": cpu_names.VENDOR_IDS.get(vendor_id, vendor_id) if vendor_id else None,
        "cpu_model": _cpuinfo_field("model name") or platform.processor() or cpu_names.UNKNOWN,
        "cpu_isa": cpu_names.isa_level(flags.split()) if flags is not None else None,
        "cpu_cores": os.cpu_count() or 1,
        "usable_cores": usable_cores(),
        "intra_op_threads": intra_op_threads(),
        "total_ram_bytes": psutil.virtual_memory().total,
        "os": platform.platform(),
        "l3_cache_bytes": l3_cache_bytes(),
        **_generation(),
    }


@cache
def software_info() -> dict[str, str]:
    """The versions that make two runs comparable (the resume key's software part)."""
    return {
        "python_version": platform.python_version(),
        "tensorflow_version": frameworks.version(frameworks.TENSORFLOW),
        "keras_version": frameworks.installed_version("keras"),
        "numpy_version": frameworks.installed_version("numpy"),
    }


def onednn_default(flags: Iterable[str]) -> bool:
    """Whether TensorFlow turns oneDNN on by default on a Linux CPU with these flags."""
    return not ONEDNN_DEFAULT_FLAGS.isdisjoint(flags)


def onednn_takes(compute_dtype: str, flags: Iterable[str]) -> bool:
    """Whether TensorFlow's oneDNN kernels, when on, take ``compute_dtype`` on a CPU with these
    flags: float32 always, bfloat16 and float16 only with `_BFLOAT16_FLAGS` / `_FLOAT16_FLAGS`.
    """
    present = frozenset(flags)
    if compute_dtype == "float32":
        return True
    if compute_dtype == "bfloat16":
        return not _BFLOAT16_FLAGS.isdisjoint(present)
    if compute_dtype == "float16":
        return ("avx512bw" in present and not _FLOAT16_FLAGS.isdisjoint(present)) or (
            "avx_ne_convert" in present
        )
    return False


def onednn_enabled(precision: str = "float32") -> bool:
    """Whether TensorFlow will run a child started from here, training at ``precision``,
    on its oneDNN kernels.

    TensorFlow's own rules, read without importing it: oneDNN is on where
    ``TF_ENABLE_ONEDNN_OPTS`` is one of the values TensorFlow accepts and says so,
    otherwise only where the CPU has one of `ONEDNN_DEFAULT_FLAGS` (`onednn_default`);
    and when on, it runs the precision's compute dtype only where `onednn_takes` it.
    The profiled child records what TensorFlow itself answers (`profiling.child`).
    """
    line = _cpuinfo_field("flags")
    flags = line.split() if line is not None else None
    setting = _ONEDNN_SETTINGS.get(os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").lower())
    on = setting if setting is not None else flags is not None and onednn_default(flags)
    dtype = COMPUTE_DTYPE.get(precision, precision)
    return on and (dtype == "float32" or (flags is not None and onednn_takes(dtype, flags)))


def framework_facts(framework: str) -> dict[str, object]:
    """The framework columns of a ``framework`` run started from here (schema 8).

    Each framework's intra-op threads are its own: TensorFlow's column is None for a
    torch run, torch's for a TensorFlow run.
    """
    torch = framework == frameworks.TORCH
    return {
        "framework": framework,
        "framework_version": frameworks.version(framework),
        "intra_op_threads": None if torch else intra_op_threads(),
        "torch_intra_op_threads": torch_intra_op_threads() if torch else None,
    }


def this_profile(
    precision: str = "float32", framework: str = frameworks.DEFAULT_FRAMEWORK
) -> profiles.MachineProfile:
    """The profile of a ``framework`` run at ``precision`` measured from this process now
    (what sizing defaults to): the precision matters where oneDNN is on but cannot take
    its dtype."""
    from core import profiles

    return profiles.profile_of(
        {
            **machine_info(),
            **software_info(),
            **framework_facts(framework),
            "onednn_enabled": onednn_enabled(precision),
        }
    )
