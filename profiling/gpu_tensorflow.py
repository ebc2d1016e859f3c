"""TensorFlow on a CUDA GPU in the profiled child: its facts and figures (`profiling.gpu`'s
counterpart for a GPU build of TensorFlow; every function takes the ``tensorflow`` module
as a parameter, so that it is tested with a fake where there is none).

The figures differ from torch's in one place. TensorFlow publishes its allocator's peak
in use (``tf.config.experimental.get_memory_info(...)["peak"]``: the allocated peak) but
no figure of what its BFC allocator holds from the driver. The child turns memory growth
on (else TensorFlow takes nearly the whole GPU at once), so the allocator's pool grows as
needed. ``reserved_peak_bytes`` is then NVML's used peak less the context: the pool, plus
the libraries' workspaces, an upper figure of what torch's ``reserved`` is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# TensorFlow's own allocator setting (cuda_malloc_async instead of its BFC allocator),
# stored where a torch run stores PYTORCH_CUDA_ALLOC_CONF.
ALLOCATOR_VARIABLE = "TF_GPU_ALLOCATOR"


def tensorflow_facts(
    tf: Any, device: Any, total_bytes: int, driver: str, environ: Mapping[str, str]
) -> dict[str, Any]:
    """The facts of physical GPU ``device`` as ``runs`` columns (`core.targets`).

    ``total_bytes`` is NVML's total (TensorFlow reports none); ``driver`` NVML's driver.
    """
    details = tf.config.experimental.get_device_details(device)
    build = tf.sysconfig.get_build_info()
    major, minor = details.get("compute_capability", (None, None))
    return {
        "gpu_name": details.get("device_name") or "unknown GPU",
        "gpu_total_bytes": int(total_bytes),
        "gpu_compute_capability": f"{major}.{minor}" if major is not None else "unknown",
        "gpu_driver": driver,
        "cuda_version": str(build.get("cuda_version") or "unknown"),
        "cudnn_version": str(build.get("cudnn_version") or "unknown"),
        "alloc_conf": environ.get(ALLOCATOR_VARIABLE, ""),
        "framework_version": tf.__version__,
    }


def tensorflow_peaks(
    tf: Any, name: str, nvml_used_peak_bytes: int, context_bytes: int
) -> dict[str, int]:
    """The allocated peak TensorFlow reports for GPU ``name`` ("GPU:0"), and the reserved
    peak as NVML's used peak less the context (the module docstring says why)."""
    allocated = int(tf.config.experimental.get_memory_info(name)["peak"])
    return {
        "allocated_peak_bytes": allocated,
        "reserved_peak_bytes": max(allocated, nvml_used_peak_bytes - context_bytes),
    }


def out_of_memory(error: BaseException, tf: Any) -> str | None:
    """TensorFlow's message when ``error`` is its out-of-device-memory, else None."""
    if isinstance(error, tf.errors.ResourceExhaustedError):
        return (str(error).strip().splitlines() or ["OOM"])[0][:1000]
    return None
