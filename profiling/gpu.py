"""Measuring training on a CUDA GPU in the profiled child: the device, its facts, its figures.

The child (`profiling.child --device cuda[:N]`) trains the workload's torch network on
the GPU and records, as ``shared/gpu/measure.py`` measured the bundled H200 runs:

* the allocator's peaks, ``torch.cuda.max_memory_allocated`` (what the tensors needed)
  and ``max_memory_reserved`` (what the caching allocator held) — `allocator_peaks`;
* the device's used memory through NVML (nvidia-ml-py), sampled every 5 ms in the
  child, minus what was in use before this process touched CUDA — `NvmlSampler`;
  the CUDA context alone is the used memory once torch made it, minus the same;
* the GPU's facts (name, usable memory as torch reports it, compute capability,
  driver, CUDA, cuDNN, torch, ``PYTORCH_CUDA_ALLOC_CONF``) — `gpu_facts`;
* out of device memory (``torch.cuda.OutOfMemoryError``) is ``oom`` with the allocator's
  message — `out_of_memory`; any other CUDA error ends the child, which is ``error``.

Every function takes the ``torch`` and ``pynvml`` modules as parameters, so that it is
tested with fakes where there is no GPU; nothing here imports either. The names of
the figures and facts are the ``runs`` columns (`core.targets`), so the child's result
carries them as the record stores them.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Mapping
from typing import Any

from core import targets
from core.errors import ConfigError
from core.frameworks import TENSORFLOW, TORCH

CPU, CUDA = "cpu", "cuda"
# measure.py's sampling interval: short enough that a step's peak is not missed.
NVML_INTERVAL_S = 0.005
# What the sampler waits after the last step before its last look (measure.py: 20 ms).
SETTLE_S = 0.02
ALLOC_CONF_VARIABLE = "PYTORCH_CUDA_ALLOC_CONF"
NVML_HINT = "pip install nvidia-ml-py"


def parse_device(text: str) -> tuple[str, int]:
    """``"cpu"``, ``"cuda"`` or ``"cuda:N"`` as (kind, index); `ConfigError` otherwise."""
    kind, _, index = text.strip().lower().partition(":")
    if kind == CPU and not index:
        return CPU, 0
    if kind == CUDA and (not index or index.isdigit()):
        return CUDA, int(index or 0)
    raise ConfigError(f"--device {text!r} is not a device; give cpu, cuda or cuda:N (N from 0)")


# What the check runs in a fresh interpreter (the parent never imports a framework): the
# GPUs the framework can use, whether it is a GPU build, whether nvidia-ml-py is there.
_NVML_FOUND = "importlib.util.find_spec('pynvml') is not None"
_CHECKS = {
    TORCH: "import importlib.util, torch\nprint(torch.cuda.device_count() "
    f"if torch.cuda.is_available() else 0, True, {_NVML_FOUND})",
    TENSORFLOW: "import importlib.util, tensorflow as tf\nprint(len(tf.config."
    f"list_physical_devices('GPU')), tf.test.is_built_with_cuda(), {_NVML_FOUND})",
}
CHECK_TIMEOUT_S = 120.0


def check_available(device: str, python: str, framework: str = TORCH) -> None:
    """Refuse, in one line, a ``device`` this machine cannot train on (`ConfigError`).

    ``cuda[:N]`` needs ``framework`` built with CUDA, GPU N, and nvidia-ml-py (the
    device's used memory); ``python`` is the interpreter the child will run, asked in a
    fresh process.
    """
    kind, index = parse_device(device)
    if kind == CPU:
        return
    try:
        done = subprocess.run(
            [python, "-c", _CHECKS[framework]],
            capture_output=True,
            text=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(
            f"--device {device}: {framework} did not answer within {CHECK_TIMEOUT_S:g} s"
        ) from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ConfigError(f"--device {device} needs {framework} here ({last})")
    count, gpu_build, has_nvml = done.stdout.split()[-3:]
    if gpu_build != "True":
        raise ConfigError(
            f"--device {device}: this {framework} is not a GPU build "
            "(tf.test.is_built_with_cuda() is False); install one "
            "(pip install 'tensorflow[and-cuda]') or train with --framework torch"
        )
    if index >= int(count):
        has = f"{count} CUDA GPU(s)" if int(count) else f"no CUDA GPU that {framework} can use"
        raise ConfigError(
            f"--device {device}: this machine has {has}; give --device cpu, or run on a GPU machine"
        )
    if has_nvml != "True":
        raise ConfigError(f"--device {device} reads the GPU's used memory with NVML: {NVML_HINT}")


def torch_device(index: int) -> str:
    """What torch calls GPU ``index``."""
    return f"{CUDA}:{index}"


def dotted_cudnn(value: int | None) -> str | None:
    """torch's cuDNN number (91900) as the dotted version the runs store (9.19.0)."""
    if value is None:
        return None
    return f"{value // 10000}.{value // 100 % 100}.{value % 100}"


def driver_text(value: str | bytes) -> str:
    """NVML's driver version: a text in nvidia-ml-py 12 and later, bytes before."""
    return value.decode() if isinstance(value, bytes) else str(value)


def gpu_facts(torch: Any, index: int, driver: str, environ: Mapping[str, str]) -> dict[str, Any]:
    """The facts of GPU ``index`` as ``runs`` columns (`core.targets.DEVICE_FACT_COLUMNS`).

    ``driver`` is NVML's driver version; ``environ`` the child's environment, whose
    ``PYTORCH_CUDA_ALLOC_CONF`` ("" when unset: the allocator's default) is a fact of
    the run, since it changes what the allocator reserves.
    """
    props = torch.cuda.get_device_properties(index)
    return {
        "gpu_name": props.name,
        "gpu_total_bytes": int(props.total_memory),
        "gpu_compute_capability": f"{props.major}.{props.minor}",
        "gpu_driver": driver,
        "cuda_version": torch.version.cuda,
        "cudnn_version": dotted_cudnn(torch.backends.cudnn.version()),
        "alloc_conf": environ.get(ALLOC_CONF_VARIABLE, ""),
        "framework_version": torch.__version__,
    }


def allocator_peaks(torch: Any, index: int) -> dict[str, int]:
    """The caching allocator's peaks on GPU ``index`` since the process started, in bytes."""
    torch.cuda.synchronize(index)
    return {
        "allocated_peak_bytes": int(torch.cuda.max_memory_allocated(index)),
        "reserved_peak_bytes": int(torch.cuda.max_memory_reserved(index)),
    }


def out_of_memory(error: BaseException, torch: Any) -> str | None:
    """The allocator's message when ``error`` is torch's out-of-device-memory, else None.

    Its first line only: "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a
    total capacity of ..." (the rest is advice on PYTORCH_CUDA_ALLOC_CONF).
    """
    if isinstance(error, torch.cuda.OutOfMemoryError):
        return (str(error).strip().splitlines() or ["CUDA out of memory"])[0][:1000]
    return None


class NvmlSampler:
    """The device's used memory (NVML), read every `NVML_INTERVAL_S` on a thread.

    Open it before torch touches CUDA: `before_bytes` is then what other processes
    and nothing of this one had in use; every figure is relative to it.
    """

    def __init__(self, nvml: Any, index: int, interval_s: float = NVML_INTERVAL_S) -> None:
        nvml.nvmlInit()
        self.nvml, self.interval_s = nvml, interval_s
        self.handle = nvml.nvmlDeviceGetHandleByIndex(index)
        self.driver = driver_text(nvml.nvmlSystemGetDriverVersion())
        self.before_bytes = self.used_bytes()
        self.peak_bytes = self.before_bytes
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def used_bytes(self) -> int:
        return int(self.nvml.nvmlDeviceGetMemoryInfo(self.handle).used)

    def since_before(self) -> int:
        """The used memory now, less what was in use before this process touched CUDA."""
        return self.used_bytes() - self.before_bytes

    def start(self) -> None:
        self._thread.start()

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, self.used_bytes())
            self._stop.wait(self.interval_s)

    def stop(self) -> int:
        """Stop sampling; the peak used memory less `before_bytes` (``nvml_used_peak_bytes``)."""
        time.sleep(SETTLE_S)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        self.peak_bytes = max(self.peak_bytes, self.used_bytes())
        return self.peak_bytes - self.before_bytes


def device_columns(result: Mapping[str, Any]) -> dict[str, Any]:
    """What a GPU child's result adds to its run's record: the target, facts and figures.

    A child that died before it read the GPU's facts leaves a host-RAM record (its
    status says why): a GPU run without the device's facts could not be stored.
    """
    if result.get("gpu_name") is None:
        return {}
    names = (*targets.DEVICE_FACT_COLUMNS, *targets.DEVICE_FIGURE_COLUMNS)
    return {targets.TARGET_COLUMN: targets.GPU_MEMORY} | {name: result.get(name) for name in names}
