"""The profiled process: one fresh interpreter trains one configuration.

Run as ``python -m profiling.child --workload NAME --config JSON [--framework NAME]
[--device cuda[:N]] --steps N --seed S --result PATH [--parent-pid PID]``
by `profiling.runner`, never by hand. It imports the framework (TensorFlow, or torch
for ``--framework torch``, never both), records its own resident memory right after
(the framework's baseline), builds the model (Keras', or the workload's native
PyTorch model), trains on seeded synthetic data and, after every phase, rewrites the
result file atomically, so a run that is killed part-way still leaves what it reached.
With ``--device cuda[:N]`` it trains on that GPU and records the device's facts and
figures as well (`profiling.gpu`; a GPU build of TensorFlow: `profiling.gpu_tensorflow`);
out of device memory is a result (``device_status`` ``oom``), not a crash.

It never outlives the sweep that started it: the runner asks the kernel to kill
it when its parent dies (`profiling.processes.die_with_parent`), and, where that
is not available, a thread here ends the process once ``--parent-pid`` is no
longer its parent (it was re-parented: the parent died).
"""

from __future__ import annotations

import argparse
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from core.frameworks import DEFAULT_FRAMEWORK, FRAMEWORKS, TENSORFLOW, TORCH
from core.machine import onednn_enabled, read_proc_status_bytes
from core.workloads.base import COMPUTE_DTYPE
from profiling import gpu, gpu_tensorflow


def _tensorflow_uses_onednn(precision: str) -> bool:
    """Whether this process's TensorFlow runs training at ``precision`` on its oneDNN
    kernels, as TensorFlow answers.

    Its private ``IsMklEnabled`` (is oneDNN on) and ``IsDataTypeSupportedByOneDNNOnThisCPU``
    (does it take this compute dtype here; else TensorFlow's own kernels run it) are
    what TensorFlow's own tests read; a build without them gets TensorFlow's rules
    (`core.machine.onednn_enabled`).
    """
    try:
        import tensorflow as tf
        from tensorflow.python.util import _pywrap_util_port, _pywrap_utils

        dtype = tf.as_dtype(COMPUTE_DTYPE[precision])
        return bool(
            _pywrap_util_port.IsMklEnabled()
            and _pywrap_utils.IsDataTypeSupportedByOneDNNOnThisCPU(dtype.as_datatype_enum)
        )
    except (ImportError, AttributeError):
        return onednn_enabled(precision)


def _write_result(path: Path, result: dict[str, Any]) -> None:
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(result))
    os.replace(partial, path)


# How often the child checks that its parent still lives.
PARENT_CHECK_S = 0.5
# The exit code of a child that stopped because its parent died.
ORPHANED_EXIT_CODE = 3


def _exit_when_orphaned(parent_pid: int) -> None:
    while os.getppid() == parent_pid:
        time.sleep(PARENT_CHECK_S)
    os._exit(ORPHANED_EXIT_CODE)


class _Progress:
    """The result file, rewritten after every phase: what a killed child still leaves."""

    def __init__(self, path: Path, started: float):
        self.path, self.started = path, started
        self.result: dict[str, Any] = {}
        self.step_started = started

    def imported(self, **facts: Any) -> None:
        """The framework is imported: its baseline (resident memory now) and ``facts``."""
        self.result = {
            "phase": "imported",
            "baseline_bytes": read_proc_status_bytes(os.getpid(), "VmRSS"),
            "import_s": time.monotonic() - self.started,
            **facts,
            "step_times_s": [],
            "step_hwm_bytes": [],
        }
        _write_result(self.path, self.result)

    def built(self) -> None:
        self.result["phase"] = "built"
        _write_result(self.path, self.result)
        self.step_started = time.monotonic()

    def stepped(self, step: int | None = None) -> None:
        """One training step ended: its time since `built` or the previous step, and VmHWM.

        ``step`` is what `core.workloads.torch_training.train_steps` passes; the lists'
        order already says which step each figure is.
        """
        self.result["step_times_s"].append(time.monotonic() - self.step_started)
        self.result["step_hwm_bytes"].append(read_proc_status_bytes(os.getpid(), "VmHWM"))
        _write_result(self.path, self.result)
        self.step_started = time.monotonic()  # the write is not part of the next step

    def done(self) -> None:
        self.result["phase"] = "done"
        self.result["peak_hwm_bytes"] = read_proc_status_bytes(os.getpid(), "VmHWM")
        _write_result(self.path, self.result)


def _keras_imported(
    args: argparse.Namespace, progress: _Progress, **device_facts: Any
) -> tuple[Any, Any]:
    """The workload module and config ``args`` ask for, once TensorFlow and Keras are
    imported and ``progress`` records their versions (and ``device_facts``)."""
    import keras
    import numpy as np
    import tensorflow as tf

    from core import workloads

    workload = workloads.get(args.workload)
    config = workload.Config.from_dict(json.loads(args.config))
    progress.imported(
        tensorflow_version=tf.__version__,
        keras_version=keras.__version__,
        numpy_version=np.__version__,
        onednn_enabled=_tensorflow_uses_onednn(config.precision),
        **device_facts,
    )
    return workload, config


def _train_keras(args: argparse.Namespace, progress: _Progress) -> None:
    """Train the workload's Keras model (imports TensorFlow, never torch)."""
    import keras
    import numpy as np

    workload, config = _keras_imported(args, progress)
    keras.utils.set_random_seed(args.seed)
    inputs, targets = workload.synthetic_batch(config, np.random.default_rng(args.seed))
    model = workload.build_model(config)
    progress.built()
    for _ in range(args.steps):
        model.train_on_batch(inputs, targets)
        progress.stepped()


def _train_torch(args: argparse.Namespace, progress: _Progress) -> None:
    """Train the workload's native PyTorch model on the same seeded synthetic batch
    (`core.workloads.torch_training`; imports torch, never TensorFlow)."""
    import numpy as np
    import torch

    from core import workloads
    from core.workloads import torch_training

    config = workloads.get(args.workload).Config.from_dict(json.loads(args.config))
    progress.imported(
        framework_version=torch.__version__,
        numpy_version=np.__version__,
        torch_intra_op_threads=torch.get_num_threads(),
    )
    torch_training.train_steps(
        config, args.steps, args.seed, after_step=progress.stepped, after_build=progress.built
    )


def _train_torch_on_gpu(args: argparse.Namespace, progress: _Progress) -> None:
    """Train the workload's torch network on GPU ``--device`` and record its device figures:
    NVML opened before torch touches CUDA, so the context is measured on its own."""
    import pynvml

    _, index = gpu.parse_device(args.device)
    sampler = gpu.NvmlSampler(pynvml, index)
    import numpy as np
    import torch

    from core import workloads
    from core.workloads import torch_training

    config = workloads.get(args.workload).Config.from_dict(json.loads(args.config))
    device = torch.device(gpu.torch_device(index))
    torch.zeros(1, device=device)  # the CUDA context, before anything of the run
    torch.cuda.synchronize(device)
    progress.imported(
        numpy_version=np.__version__,
        torch_intra_op_threads=torch.get_num_threads(),
        context_bytes=sampler.since_before(),
        **gpu.gpu_facts(torch, index, sampler.driver, os.environ),
    )
    sampler.start()
    try:
        torch_training.train_steps(
            config, args.steps, args.seed, progress.stepped, progress.built, device=device
        )
    except Exception as error:
        message = gpu.out_of_memory(error, torch)
        if message is None:
            raise  # any other CUDA error ends the child: the run is an error
        progress.result |= {"device_status": "oom", "device_message": message}
    progress.result |= gpu.allocator_peaks(torch, index)
    progress.result["nvml_used_peak_bytes"] = sampler.stop()


def _train_keras_on_gpu(args: argparse.Namespace, progress: _Progress) -> None:
    """Train the workload's Keras model on GPU ``--device`` (a GPU build of TensorFlow)
    and record its device figures (`profiling.gpu_tensorflow` says what they are)."""
    import pynvml

    _, index = gpu.parse_device(args.device)
    sampler = gpu.NvmlSampler(pynvml, index)
    import keras
    import numpy as np
    import tensorflow as tf

    physical = tf.config.list_physical_devices("GPU")[index]
    tf.config.experimental.set_memory_growth(physical, True)
    name = f"GPU:{index}"
    with tf.device(name):
        tf.zeros(1).numpy()  # the CUDA context, before anything of the run
    context_bytes = sampler.since_before()
    total_bytes = pynvml.nvmlDeviceGetMemoryInfo(sampler.handle).total
    workload, config = _keras_imported(
        args,
        progress,
        context_bytes=context_bytes,
        **gpu_tensorflow.tensorflow_facts(tf, physical, total_bytes, sampler.driver, os.environ),
    )
    sampler.start()
    keras.utils.set_random_seed(args.seed)
    inputs, targets = workload.synthetic_batch(config, np.random.default_rng(args.seed))
    try:
        with tf.device(name):
            model = workload.build_model(config)
            progress.built()
            for _ in range(args.steps):
                model.train_on_batch(inputs, targets)
                progress.stepped()
    except Exception as error:
        message = gpu_tensorflow.out_of_memory(error, tf)
        if message is None:
            raise
        progress.result |= {"device_status": "oom", "device_message": message}
    nvml_used_peak_bytes = sampler.stop()
    progress.result["nvml_used_peak_bytes"] = nvml_used_peak_bytes
    progress.result |= gpu_tensorflow.tensorflow_peaks(
        tf, name, nvml_used_peak_bytes, context_bytes
    )


_TRAINERS = {TENSORFLOW: _train_keras, TORCH: _train_torch}
_GPU_TRAINERS = {TENSORFLOW: _train_keras_on_gpu, TORCH: _train_torch_on_gpu}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m profiling.child")
    parser.add_argument("--workload", required=True, help="a name from core.workloads")
    parser.add_argument("--config", required=True, help="the workload's config as JSON")
    parser.add_argument("--framework", choices=FRAMEWORKS, default=DEFAULT_FRAMEWORK)
    parser.add_argument("--device", default=gpu.CPU, help="cpu, or cuda[:N] (torch only)")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--parent-pid", type=int, help="stop as soon as this is not the parent")
    args = parser.parse_args(argv)
    if args.parent_pid:
        watcher = threading.Thread(target=_exit_when_orphaned, args=(args.parent_pid,), daemon=True)
        watcher.start()

    progress = _Progress(args.result, time.monotonic())
    on_gpu = gpu.parse_device(args.device)[0] == gpu.CUDA
    trainer = (_GPU_TRAINERS if on_gpu else _TRAINERS)[args.framework]
    trainer(args, progress)
    progress.done()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
